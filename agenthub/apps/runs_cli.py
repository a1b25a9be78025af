"""``agenthub runs list|show|resume|forget --journal STORE``: the journaled runs of a store (docs/tools.md,
"Runs that survive a crash").

``list``: each run with entries (its ``run_id``, how many entries, the age of its last write, whether a live
worker owns it now); ``show RUN_ID``: its journal summarised (turns, tool calls and their results, the
request in flight, how it ended, usage and cost), ``--json`` the raw entries; ``resume RUN_ID``: what a
resume would do and how to start it (the journal keeps a fingerprint of the run's messages, tools, model and
config, not those themselves: the run resumes by being started again as it was, with its ``run_id``:
``agenthub chat ... --journal STORE --run-id ID`` again, or the script's ``client.run(..., journal=,
run_id=)`` again); ``forget RUN_ID``: its journal removed now (else it lasts until its ``journal_ttl`` after
its last write, or for ever without one).  On a terminal, what the journal holds (the model's and the tools'
words) is written with its control characters shown, not obeyed (``terminal.safe``).
"""

import argparse
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, TextIO

from ..errors import ConfigError
from .terminal import shown_for as _shown_for  # (a server's words: escaped on a terminal)
from .._jsondepth import loads as _json_loads

__all__ = ["add_parser", "run", "summary"]


def add_parser(sub: Any) -> Any:
    """The ``runs`` subcommand's parser added to ``sub``; returns its actions (argparse's subparsers)."""
    parser = sub.add_parser("runs", help="journaled runs (client.run(journal=, run_id=), chat --journal): list, "
                                         "show, resume, forget",
                            description="The journaled runs of a store (sqlite:///path, redis://host:port/db). A "
                                        "journal lasts until its journal_ttl after its last write (for ever without "
                                        "one), or until `agenthub runs forget`.")
    actions = parser.add_subparsers(dest="runs_command", metavar="ACTION")
    listing = actions.add_parser("list", help="every journaled run: run_id, entries, age, owned")
    show = actions.add_parser("show", help="one run's journal summarised (--json: its raw entries)")
    show.add_argument("run_id")
    resume = actions.add_parser("resume", help="what resuming a run would do, and the command that does it")
    resume.add_argument("run_id")
    forget = actions.add_parser("forget", help="remove a run's journal now")
    forget.add_argument("run_id")
    forget.add_argument("--force", action="store_true", help="forget it even while a live worker owns it")
    for action in (listing, show, resume, forget):
        action.add_argument("--journal", required=True, metavar="STORE",
                            help="the store the runs are journaled in: sqlite:///path or redis://host:port/db")
        if action is not forget:
            action.add_argument("--json", action="store_true", help="print JSON")
    return actions


def _open(spec: str) -> Any:
    from ..stores import open_store

    if spec in ("memory:", "memory://"):
        raise ConfigError("--journal memory: is this process's own store, empty here: name a shared one "
                          "(sqlite:///path, redis://host:port/db)")
    if isinstance(spec, str) and spec.startswith("sqlite:"):
        from ..stores.sqlite import sqlite_path

        path = sqlite_path(spec)
        if not os.path.exists(path):  # (opening it would create an empty journal: a mistyped path said "no runs")
            raise ConfigError("--journal {}: there is no file {}".format(spec, os.path.abspath(path)))
    store = open_store(spec)
    if not hasattr(store, "journal_runs"):
        raise ConfigError("this store keeps no journal")
    return store


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("m", 60.0)):
        if seconds >= size:
            return "{:.0f}{}".format(seconds // size, unit)
    return "{:.0f}s".format(seconds)


def _entries(store: Any, run_id: str) -> List[Dict[str, Any]]:
    from ..agent.journal import entry_read

    raw = store.journal_entries(run_id)
    if not raw:
        raise ConfigError("no journal for run {!r} in this store (never written, forgotten, or expired: "
                          "past its journal_ttl)".format(run_id))
    entries = []
    turns = 0
    for n, text in enumerate(raw):
        try:
            entry = _json_loads(text)
        except (TypeError, ValueError, RecursionError):
            entry = None
        if n and isinstance(entry, dict):
            try:
                entry_read(entry, turns)  # (of the shape a resume reads: else a resume refuses it, shown so here)
                turns += entry.get("k") == "turn"
            except ValueError:
                entry = None
        entries.append(entry if isinstance(entry, dict) else {"k": "corrupt", "n": n})
    return entries


def _text_of(message: Mapping[str, Any]) -> str:
    parts = []
    for item in message.get("content_items") or ():
        if item.get("type") == "text":
            parts.append(str(item.get("text") or ""))
    return " ".join(" ".join(parts).split())


def _clip(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def summary(entries: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """A run's journal entries summarised: ``turns`` (one row a turn: its number, text, tool calls, usage,
    cost, model), ``calls`` (started, with their result when journaled), ``in_flight`` (the turn of a
    background request sent and not answered: a plain one is not journaled), ``attached`` (its response id,
    which a resume re-attaches to; None once detached: sent again), ``done`` (the run's stop and pending ids,
    or None), ``cost`` (None when a turn is unpriced), ``usage`` (summed), ``header``."""
    from ..types import USAGE_KEYS

    header = entries[0] if entries and entries[0].get("k") == "header" else {}
    turns = []  # type: List[Dict[str, Any]]
    calls = {}  # type: Dict[Any, Dict[str, Any]]
    in_flight = None  # type: Optional[int]
    attached = None  # type: Optional[str]  # the in-flight request's background response id (re-attached)
    done = None  # type: Optional[Dict[str, Any]]
    cost = 0.0  # type: Optional[float]
    usage = dict.fromkeys(USAGE_KEYS)  # type: Dict[str, Any]
    corrupt = [e.get("n") for e in entries if e.get("k") == "corrupt"]
    for entry in entries:
        kind = entry.get("k")
        if kind == "request":
            in_flight = entry.get("turn")
            attached = None
        elif kind == "attach":
            in_flight, attached = entry.get("turn"), str(entry.get("id"))
        elif kind == "detach":
            attached = None
        elif kind == "turn":
            in_flight = attached = None
            message = entry.get("message") or {}
            used = message.get("usage_metadata") or {}
            for key in USAGE_KEYS:
                if isinstance(used.get(key), int):
                    usage[key] = (usage[key] or 0) + used[key]
            cost = None if cost is None or entry.get("cost") is None else cost + entry["cost"]
            turns.append({"turn": entry.get("turn"), "text": _text_of(message), "finish_reason":
                          message.get("finish_reason"), "usage": used, "cost": entry.get("cost"),
                          "model": (entry.get("route") or {}).get("model"),
                          "calls": [{"id": i.get("tool_call_id"), "name": i.get("name"), "arguments": i.get("arguments")}
                                    for i in message.get("content_items") or () if i.get("type") == "tool_call"]})
        elif kind == "call":
            calls[(entry.get("turn"), entry.get("id"))] = {"turn": entry.get("turn"), "id": entry.get("id"),
                                                           "name": entry.get("name"), "result": None}
        elif kind == "result":
            row = calls.setdefault((entry.get("turn"), entry.get("id")), {
                "turn": entry.get("turn"), "id": entry.get("id"), "name": None, "result": None})
            item = entry.get("item") or {}
            row["result"] = {"text": str(item.get("text") or ""), "is_error": bool(item.get("is_error")),
                             "seconds": entry.get("seconds")}
        elif kind == "done":
            done = {"stop": entry.get("stop"), "pending": list(entry.get("pending") or ())}
    return {"header": {k: v for k, v in header.items() if k != "k"}, "turns": turns, "calls": list(calls.values()),
            "in_flight": in_flight, "attached": attached, "done": done, "cost": cost if turns else None, "usage": usage, "corrupt": corrupt}


def _show(out: TextIO, run_id: str, entries: List[Dict[str, Any]]) -> None:
    from .terminal import _dollars, usage_line

    shown = _shown_for(out)
    facts = summary(entries)
    header = facts["header"]
    out.write(shown("run {}: {} entries (journal format {}, written by agenthub {})".format(
        run_id, len(entries), header.get("format", "?"), header.get("agenthub", "?"))) + "\n")
    results = {(c["turn"], c["id"]): c for c in facts["calls"]}
    for turn in facts["turns"]:
        number = turn["turn"] + 1 if isinstance(turn["turn"], int) else "?"
        head = "turn {}{}: ".format(number, " ({})".format(turn["model"]) if turn["model"] else "")
        line = head + (repr(_clip(turn["text"])) if turn["text"] else "")
        if turn["calls"]:
            line += (" " if turn["text"] else "") + "{} tool call{}".format(
                len(turn["calls"]), "" if len(turn["calls"]) == 1 else "s")
        out.write(shown(line) + "\n")
        out.write("  " + usage_line(turn["finish_reason"], turn["usage"], turn["cost"]) + "\n")
        for call in turn["calls"]:
            row = results.get((turn["turn"], call["id"]))
            arguments = _clip(json.dumps(call["arguments"], ensure_ascii=False), 80)
            if row is None:
                state = "no result journaled: runs on resume"
            elif row["result"] is None:
                state = "interrupted: started, no result journaled"
            else:
                state = "{}{} ({:.2f} s)".format("error: " if row["result"]["is_error"] else "",
                                                 repr(_clip(row["result"]["text"], 80)), row["result"]["seconds"] or 0.0)
            out.write(shown("  [tool {}({}) -> {}]".format(call["name"], arguments, state)) + "\n")
    if facts["in_flight"] is not None and facts["attached"] is not None:
        out.write(shown("turn {}: request sent as background response {}, no answer journaled (a resume re-attaches "
                        "to it by its id: not sent again)".format(facts["in_flight"] + 1, facts["attached"])) + "\n")
    elif facts["in_flight"] is not None:
        out.write("turn {}: request sent, no answer journaled (a resume sends it again)\n".format(facts["in_flight"] + 1))
    for n in facts["corrupt"]:
        out.write("entry {}: corrupt (a resume refuses this journal: JournalError)\n".format(n))
    done = facts["done"]
    if done is not None:
        out.write(shown("ended: {}{}".format(done["stop"], ", pending: " + ", ".join(map(str, done["pending"]))
                                             if done["pending"] else "")) + "\n")
    else:
        out.write("not ended: a resume goes on from here\n")
    cost = facts["cost"]
    out.write("{} turn{}, {} tool call{}, total cost {}\n".format(
        len(facts["turns"]), "" if len(facts["turns"]) == 1 else "s", len(facts["calls"]),
        "" if len(facts["calls"]) == 1 else "s",
        "unknown (a turn is unpriced)" if cost is None and facts["turns"] else "${}".format(_dollars(cost or 0.0))))


def _resume(out: TextIO, run_id: str, entries: List[Dict[str, Any]], owned: bool, as_json: bool) -> None:
    facts = summary(entries)
    interrupted = [c for c in facts["calls"] if c["result"] is None]
    state = "ended" if facts["done"] is not None else "owned" if owned else "resumable"
    if as_json:
        out.write(json.dumps({"run_id": run_id, "state": state, "turns": len(facts["turns"]),
                              "results": len(facts["calls"]) - len(interrupted),
                              "interrupted": [c["id"] for c in interrupted], "in_flight": facts["in_flight"],
                              "attached": facts["attached"], "done": facts["done"]}) + "\n")
        return
    shown = _shown_for(out)
    lines = []
    if state == "owned":
        from ..stores import journal as rows

        lines.append("run {} is owned: a worker's lease holds it (a live worker goes on with it, a second one is "
                     "refused with RunLockedError; a dead one's lease lapses within {:.0f} s; --journal-wait / "
                     "journal_wait= waits for it)".format(run_id, rows.JOURNAL_LEASE))
    if state == "ended":
        what = "run {} ended ({}): started again, it returns its result at once, nothing sent".format(
            run_id, facts["done"]["stop"])
    else:
        what = "run {} did not end: a resume replays {} turn{} and {} tool result{} (nothing sent for them)".format(
            run_id, len(facts["turns"]), "" if len(facts["turns"]) == 1 else "s", len(facts["calls"]) - len(interrupted),
            "" if len(facts["calls"]) - len(interrupted) == 1 else "s")
        if facts["in_flight"] is not None and facts["attached"] is not None:
            what += ", re-attaches turn {} to background response {} (not sent again)".format(
                facts["in_flight"] + 1, facts["attached"])
        elif facts["in_flight"] is not None:
            what += ", sends turn {}'s request again".format(facts["in_flight"] + 1)
        if interrupted:
            what += "; interrupted call{} {} (@tool(idempotent=False), started): handed back pending " \
                    "(RunResult.interrupted)".format("" if len(interrupted) == 1 else "s",
                                                     ", ".join(str(c["id"]) for c in interrupted))
        started = {(c["turn"], c["id"]) for c in facts["calls"]}
        unanswered = [c["id"] for t in facts["turns"][-1:] for c in t["calls"] if (t["turn"], c["id"]) not in started]
        if unanswered and facts["done"] is None:
            what += "; call{} {} with no result journaled: run{} (again, if it ran: at least once)".format(
                "" if len(unanswered) == 1 else "s", ", ".join(str(i) for i in unanswered),
                "s" if len(unanswered) == 1 else "")
    lines.append(what)
    what = "\n".join(lines)
    out.write(shown(what) + "\n")
    out.write(shown("to resume, start the run again as it was, with its run_id (the journal keeps a fingerprint of "
                    "its messages, tools, model and config, not those themselves):\n"
                    "  agenthub chat MODEL PROMPT --tool ... --journal STORE --run-id {0}   (the same command again)\n"
                    "  client.run(messages, tools=..., journal=STORE, run_id={0!r})        (the same call again)".format(
                        run_id)) + "\n")


def run(args: Any, out: TextIO) -> int:
    action = args.runs_command
    store = _open(args.journal)
    try:
        if action == "list":
            rows = store.journal_runs()
            if args.json:
                out.write(json.dumps([dict(r, age=round(r["age"], 3)) for r in rows]) + "\n")
                return 0
            shown = _shown_for(out)
            if not rows:
                out.write("no journaled runs (a journal lasts until its journal_ttl, or until forgotten)\n")
            for row in rows:
                out.write(shown("{}  {} entries  {} ago{}".format(
                    row["run_id"], row["entries"], _age(row["age"]), "  owned" if row["owned"] else "")) + "\n")
            return 0
        run_id = args.run_id
        if action == "forget":
            owned = any(r["run_id"] == run_id and r["owned"] for r in store.journal_runs())
            if owned and not args.force:
                raise ConfigError("run {!r} is owned by a live worker now: forgetting it would make that worker's next "
                                  "write fail; --force forgets it anyway".format(run_id))
            if not store.journal_forget(run_id):
                raise ConfigError("no journal for run {!r} in this store (never written, forgotten, or expired: past "
                                  "its journal_ttl)".format(run_id))
            out.write(_shown_for(out)("forgot run {}".format(run_id)) + "\n")
            return 0
        entries = _entries(store, run_id)
        if action == "show":
            if args.json:
                for entry in entries:
                    out.write(json.dumps(entry) + "\n")  # (ASCII: a control character is an escape here)
            else:
                _show(out, run_id, entries)
            return 0
        owned = any(r["run_id"] == run_id and r["owned"] for r in store.journal_runs())
        _resume(out, run_id, entries, owned, args.json)
        return 0
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            close()

