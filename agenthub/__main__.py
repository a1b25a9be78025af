"""Command line: ``agenthub demo`` (no key, no network), ``agenthub chat MODEL "prompt"``."""

import argparse
import json
import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="agenthub", description="Talk to any LLM through one streaming loop.")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("demo", help="replay recorded streams through the real stack (no key, no network)")
    chat = sub.add_parser("chat", help="stream one answer from MODEL")
    chat.add_argument("model")
    chat.add_argument("prompt")
    chat.add_argument("--client-type")
    chat.add_argument("--base-url")
    chat.add_argument("--system")
    chat.add_argument("--max-tokens", type=int)
    chat.add_argument("--thinking", choices=["none", "low", "medium", "high", "xhigh"])
    chat.add_argument("--json", action="store_true", help="print raw UniEvents, one per line")
    sub.add_parser("models", help="list the routing registry")
    args = parser.parse_args(argv)
    from . import AgentHubError

    try:
        if args.command == "demo":
            from .demo import run

            run()
            return 0
        if args.command == "models":
            from .registry import list_models

            for row in list_models():
                print("{:<40} {:<17} {:<28} {}".format(row["pattern"], row["client_type"], row["vendor"],
                                                        ", ".join(row["examples"])))
            return 0
        if args.command == "chat":
            return _chat(args)
    except AgentHubError as exc:
        print("error: {}: {}".format(type(exc).__name__, exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    parser.print_help()
    return 2


def _chat(args) -> int:
    from .client import AutoLLMClient
    from .tracer import to_jsonable

    client = AutoLLMClient(args.model, base_url=args.base_url, client_type=args.client_type)
    config = {}
    if args.system:
        config["system_prompt"] = args.system
    if args.max_tokens:
        config["max_tokens"] = args.max_tokens
    if args.thinking:
        config["thinking_level"] = args.thinking
    messages = [{"role": "user", "content_items": [{"type": "text", "text": args.prompt}]}]
    out = sys.stdout
    thinking = False
    for event in client.streaming_response(messages, config):
        if args.json:
            out.write(json.dumps(to_jsonable(event), ensure_ascii=False) + "\n")
            out.flush()
            continue
        for item in event["content_items"]:
            kind = item["type"]
            if kind == "thinking":
                if not thinking:
                    out.write("\n[thinking] ")
                    thinking = True
                out.write(item["thinking"])
            elif kind == "text":
                if thinking:
                    out.write("\n\n")
                    thinking = False
                out.write(item["text"])
            elif kind == "tool_call":
                out.write("\n[tool call] {} {} {}\n".format(item["name"], item["tool_call_id"],
                                                            json.dumps(item["arguments"], ensure_ascii=False)))
            elif kind in ("inline_data", "inline_thinking"):
                out.write("\n[{} {} bytes]\n".format(item["mime_type"], len(item["data"])))
            out.flush()
        if event["event_type"] == "stop":
            out.write("\n[{}] usage: {}\n".format(event["finish_reason"], event["usage_metadata"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
