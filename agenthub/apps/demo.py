"""``agenthub demo``: a tool-calling conversation per protocol, with no key and no network.

The project's own recordings (``agenthub/recordings/<protocol>/weather_tool_call.sse``
and ``weather_answer.sse``) are served by the replay transport of ``agenthub.testing``
to a real AutoLLMClient: the same request building, transport, SSE framing, parser
and tool-call machine as a live call.  Each protocol plays a turn that asks for the
``get_weather`` tool, runs the tool, and streams the answer.  A protocol is played
when its provider module and both recordings are present.
"""

import importlib.util
import os
from typing import Any, Dict, List, Optional, TextIO, Tuple

__all__ = ["run", "available", "recording", "RECORDINGS", "DEMOS"]

RECORDINGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "recordings")


def _demos() -> Tuple[Tuple[str, str, str, str], ...]:
    """(recordings folder = provider module, client_type, model name sent, title) of every protocol
    whose record names a demo."""
    from ..providers import all_protocols

    return tuple((p.module, p.name, p.demo[0], p.demo[1]) for p in all_protocols() if p.demo)


def __getattr__(name: str) -> Any:  # PEP 562: DEMOS is read from the protocol records on first use
    if name == "DEMOS":
        globals()["DEMOS"] = demos = _demos()
        return demos
    raise AttributeError("module {!r} has no attribute {!r}".format(__name__, name))


#: nothing listens there: the replay transport answers before any socket is opened
BASE_URL = "http://127.0.0.1:9/replay"
QUESTION = "What's the weather in Paris?"
TOOLS = [{
    "name": "get_weather",
    "description": "Current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}]
#: odd-sized pieces: the SSE framing sees events split across reads, as on a real socket
CHUNK_SIZE = 97


def recording(protocol: str, name: str) -> bytes:
    with open(os.path.join(RECORDINGS, protocol, name), "rb") as handle:
        return handle.read()


def available() -> List[Tuple[str, str, str, str]]:
    """The demos that can play here: provider module importable and both recordings present."""
    out = []
    for demo in _demos():
        folder = os.path.join(RECORDINGS, demo[0])
        if importlib.util.find_spec("agenthub.providers." + demo[0]) is None:
            continue
        if all(os.path.isfile(os.path.join(folder, n)) for n in ("weather_tool_call.sse", "weather_answer.sse")):
            out.append(demo)
    return out


def _weather(arguments: Dict[str, Any]) -> str:
    city = str(arguments.get("city") or "?")
    return "18 °C, sunny" if city.lower() == "paris" else "no data for {}".format(city)


def play(protocol: str, client_type: str, model: str, out: TextIO) -> List[Dict[str, Any]]:
    """One protocol's conversation; returns the client's history."""
    from .terminal import Printer
    from ..client import AutoLLMClient
    from ..testing import Cassette, Interaction, replay_session

    cassette = Cassette(interactions=[
        Interaction(None, 200, {"Content-Type": "text/event-stream"}, recording(protocol, name), name=name)
        for name in ("weather_tool_call.sse", "weather_answer.sse")
    ])
    client = AutoLLMClient(model, client_type=client_type, base_url=BASE_URL, max_retries=0,
                           session=replay_session(cassette, chunk_size=CHUNK_SIZE))
    printer = Printer(out, text_prefix="assistant> ", indent="")
    printer.line("user> " + QUESTION)
    message = {"role": "user", "content_items": [{"type": "text", "text": QUESTION}]}  # type: Dict[str, Any]
    for _turn in range(4):
        calls = []
        for event in client.streaming_response_stateful(message, {"tools": TOOLS}):
            printer.event(event)
            calls.extend(i for i in event["content_items"] if i["type"] == "tool_call")
        if not calls:
            break
        results = []
        for call in calls:
            result = _weather(call["arguments"]) if call["name"] == "get_weather" else "unknown tool"
            printer.line("[tool result] {} -> {}".format(call["tool_call_id"], result))
            results.append({"type": "tool_result", "text": result, "tool_call_id": call["tool_call_id"]})
        message = {"role": "user", "content_items": results}
    cassette.assert_all_played()
    return client.get_history()


def run(out: Optional[TextIO] = None) -> Dict[str, List[Dict[str, Any]]]:
    """Play every available demo on ``out`` (default stdout); returns {client_type: history}.

    A protocol that fails is reported in place and the others still play; the first
    failure is raised at the end.
    """
    import sys

    from ..errors import AgentHubError

    out = out or sys.stdout
    demos = available()
    out.write("agenthub demo: recorded streams replayed through AutoLLMClient, the transport, SSE framing and "
              "each protocol's parser.\nNo key, no network: agenthub.testing's replay transport answers every "
              "request.\n")
    histories = {}
    failed = []
    for protocol, client_type, model, title in demos:
        out.write("\n== {} (client_type={!r}, model={!r}) ==\n".format(title, client_type, model))
        try:
            history = play(protocol, client_type, model, out)
        except AgentHubError as exc:  # one protocol's failure does not hide the others
            out.write("\nerror: {}: {}\n".format(type(exc).__name__, exc))
            failed.append((title, exc))
            continue
        out.write("history: {} messages ({})\n".format(
            len(history), ", ".join(m["role"] for m in history)))
        histories[client_type] = history
    out.write("\n{} protocol(s) replayed. Next: `agenthub models`, `agenthub chat MODEL \"prompt\"`, README.md\n"
              .format(len(histories)))
    out.flush()
    if failed:
        raise failed[0][1]
    out.flush()
    return histories
