"""The tool runner with several calls a turn (issue 41, item 2): ``client.run`` (default ``parallel=4``, and
``parallel=1``) beside the hand-written loop, at 1, 10 and 50 model turns.

    python bench/agent_turns.py                     # the agenthub importable from this checkout
    python bench/agent_turns.py --tree /path/to/checkout   # another checkout's agenthub
    python bench/agent_turns.py --before main --rounds 5   # before (git archive of REV) and after, in one run
    python bench/agent_turns.py --instructions --before main --reps 3   # callgrind's count, before and after

Each turn but the last streams one text delta and three complete tool calls (``add``, ``upper``, ``count``:
trivial ``@tool`` functions); the last turn is text only.  The server is Chat Completions SSE in a separate
process (its CPU is not counted; TCP_NODELAY, so no delayed-ACK stall).  The hand loop: ``streaming_response``
on a message list, the answer folded with ``Collector``, the calls made inline in order, one user message of
results.  Both ways are checked to give the same conversation first.  The loops alternate with a rotating
start, REPS runs each per length; CPU (``time.process_time``: every thread of this process), median; the ratio
is median/median, the load average printed beside it; the context switches a turn (``getrusage``, voluntary +
involuntary, every thread of this process) beside them.  Target: ``run`` <= 1.05x the hand loop at every length.
``--before REV``: ROUNDS rounds, each running this script as a worker on the library at REV (``bench/ab.py``) and
on this checkout's, in fresh processes in alternating order; the medians per loop and length over the rounds.
``--in-process [--gap S]``: no server (a requests adapter answers with the same bytes after sleeping S seconds,
standing for the socket's wait); beside the medians, the median over the reps of ``run`` minus ``run(parallel=1)``
in the same rep: what handing a turn's calls to the pool costs, per turn (run it under ``taskset -c 0`` to see that
cost with both threads on one core).
``--instructions [--before REV] [--reps 3]``: instructions a run instead of CPU (valgrind ``--tool=callgrind``, the
whole process with every thread, in-process as ``--in-process``; load-independent), each loop in a process of its
own under callgrind, the runs of each length in a dump of their own; the runner's 2 ms rules scaled to 0.1 s there
(valgrind runs the code ~50x slower: they would take other paths than natively).
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
CALLS = (("add", {"a": 2, "b": 3}), ("upper", {"text": "hello"}), ("count", {"items": ["x", "y", "z"]}))


def _event(delta, finish=None):
    return {"id": "c", "object": "chat.completion.chunk", "model": "bench",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _answer(turn, last):
    events = [_event({"role": "assistant", "content": ""}), _event({"content": "turn {} ".format(turn)})]
    if not last:
        events += [_event({"tool_calls": [{"index": n, "id": "t{}_{}".format(turn, n), "type": "function",
                                           "function": {"name": name, "arguments": json.dumps(args)}}]})
                   for n, (name, args) in enumerate(CALLS)]
    events.append(_event({}, "stop" if last else "tool_calls"))
    events.append({"id": "c", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
    return b"".join(b"data: %s\n\n" % json.dumps(e).encode() for e in events) + b"data: [DONE]\n\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self):  # noqa: N802
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        turns = int(self.path.strip("/").split("/")[0])
        done = sum(1 for m in request["messages"] if m["role"] == "assistant")
        payload = _answer(done, done >= turns - 1)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def add(a: int, b: int) -> int:
    """Add."""
    return a + b


def upper(text: str) -> str:
    """Upper-case."""
    return text.upper()


def count(items: list) -> int:  # type: ignore[type-arg]
    """Count."""
    return len(items)


def _own_switches():
    """(voluntary, involuntary) context switches of the calling thread so far (Linux: /proc/thread-self), or (0, 0)."""
    try:
        with open("/proc/thread-self/status") as status:
            lines = [line.split() for line in status if line.endswith("ctxt_switches\n") or "ctxt_switches:" in line]
        return int(lines[0][1]), int(lines[1][1])
    except (OSError, IndexError, ValueError):
        return 0, 0


def _user():
    return [{"role": "user", "content_items": [{"type": "text", "text": "go"}]}]


def hand(client, turns, schemas):
    from agenthub.stream import Collector

    functions = {"add": add, "upper": upper, "count": count}
    messages = _user()
    for _ in range(turns):
        folding, calls = Collector(), []
        for event in client.streaming_response(messages, config={"tools": schemas}):
            folding.add(event)
            calls += [i for i in event["content_items"] if i["type"] == "tool_call"]
        messages.append(folding.message())
        if not calls:
            break
        results = []
        for call in calls:
            value = functions[call["name"]](**call["arguments"])
            results.append({"type": "tool_result", "tool_call_id": call["tool_call_id"],
                            "text": value if isinstance(value, str) else json.dumps(value)})
        messages.append({"role": "user", "content_items": results})
    assert sum(1 for m in messages if m["role"] == "assistant") == turns
    return messages


def runner(client, turns, tools, parallel):
    result = client.run(_user(), tools=tools, max_turns=turns + 1, parallel=parallel).result()
    assert result.stop == "done" and result.turns == turns, (result.stop, result.turns)
    return _user() + result.messages


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", default="1,10,50")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--tree", help="import agenthub from this checkout (default: the one holding bench/)")
    parser.add_argument("--serve", action="store_true")
    parser.add_argument("--before", help="a git revision: before (at REV) and after (this checkout) in one run")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="(worker) print the medians as one JSON line")
    parser.add_argument("--in-process", action="store_true", help="no server: a requests adapter answers")
    parser.add_argument("--gap", type=float, default=0.0003, help="(--in-process) seconds each answer waits")
    parser.add_argument("--instructions", action="store_true", help="instructions a run (callgrind, in-process; "
                        "load-independent), with --before REV beside this checkout's")
    parser.add_argument("--ir-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ir_worker:
        return _ir_worker(args)
    if args.instructions:
        return _instructions(args)
    if args.before:
        return _before_after(args)
    if args.in_process:
        return _in_process(args)
    if args.serve:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        return 0
    sys.path.insert(0, os.path.abspath(args.tree) if args.tree else os.path.dirname(HERE))
    import agenthub
    from agenthub import AutoLLMClient, tool

    tools = [tool(add), tool(upper), tool(count)]
    schemas = [t.schema for t in tools]
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve"], stdout=subprocess.PIPE)
    try:
        port = int(proc.stdout.readline())

        def client(turns):
            return AutoLLMClient("bench", api_key="k", client_type="openai-chat", max_retries=0,
                                 base_url="http://127.0.0.1:{}/{}/v1".format(port, turns))

        def same(messages):
            return json.dumps([{k: v for k, v in m.items() if k != "created_at"} for m in messages], sort_keys=True)

        assert same(hand(client(3), 3, schemas)) == same(runner(client(3), 3, tools, 4)), "not the same conversation"
        loops = {"hand": lambda c, n: hand(c, n, schemas), "run": lambda c, n: runner(c, n, tools, 4),
                 "run(parallel=1)": lambda c, n: runner(c, n, tools, 1)}
        names = list(loops)
        if not args.json:
            print("Python {}, agenthub from {}".format(sys.version.split()[0], os.path.dirname(agenthub.__file__)))
            print("| turns | hand CPU/turn | run CPU/turn | run / hand | run(parallel=1) CPU/turn | p1 / hand | load |")
            print("|---:|---:|---:|---:|---:|---:|---:|")
        worst = 0.0
        out = {}  # type: dict
        for turns in [int(x) for x in args.turns.split(",")]:
            c = client(turns)
            for name in names:
                loops[name](c, turns)  # warm
            cpu = {name: [] for name in names}  # type: dict
            switches = {name: [0, 0, 0, 0] for name in names}  # type: dict  # voluntary, involuntary (the whole
            #                                                   process), the same of the reading thread alone
            for rep in range(args.reps):
                for name in names[rep % 3:] + names[:rep % 3]:
                    before, own = resource.getrusage(resource.RUSAGE_SELF), _own_switches()
                    started = time.process_time()
                    loops[name](c, turns)
                    cpu[name].append(time.process_time() - started)
                    after, own_after = resource.getrusage(resource.RUSAGE_SELF), _own_switches()
                    for n, moved in enumerate((after.ru_nvcsw - before.ru_nvcsw, after.ru_nivcsw - before.ru_nivcsw,
                                               own_after[0] - own[0], own_after[1] - own[1])):
                        switches[name][n] += moved
            med = {name: statistics.median(values) * 1000 / turns for name, values in cpu.items()}
            ratio, ratio1 = med["run"] / med["hand"], med["run(parallel=1)"] / med["hand"]
            worst = max(worst, ratio)
            out[str(turns)] = dict(med, load=os.getloadavg()[0],
                                   switches={name: [n / args.reps / turns for n in pair] for name, pair in switches.items()})
            if args.json:
                continue
            print("| {} | {:.3f} ms | {:.3f} ms | {:.3f}x | {:.3f} ms | {:.3f}x | {:.2f} |".format(
                turns, med["hand"], med["run"], ratio, med["run(parallel=1)"], ratio1, os.getloadavg()[0]))
            print("  context switches a turn, voluntary + involuntary, the process (the reading thread's): " + ", ".join(
                "{} {:.2f} + {:.2f} ({:.2f} + {:.2f})".format(name, *out[str(turns)]["switches"][name]) for name in names))
        if args.json:
            print(json.dumps(out))
            return 0
        print("worst run / hand: {:.3f}x (target <= 1.05x)".format(worst))
        return 0 if worst <= 1.05 else 1
    finally:
        proc.kill()
        proc.wait()


def _session(gap):
    """A requests session whose adapter answers each request with the turn's SSE bytes after sleeping GAP
    seconds (no socket)."""
    import io

    import requests
    from urllib3.response import HTTPResponse

    class Answers(requests.adapters.BaseAdapter):
        def send(self, request, **kwargs):
            turns = int(request.url.split("/")[3])
            done = sum(1 for m in json.loads(request.body)["messages"] if m["role"] == "assistant")
            payload = _answer(done, done >= turns - 1)
            if gap:
                time.sleep(gap)
            response = requests.Response()
            response.status_code, response.url, response.request = 200, request.url, request
            response.headers["Content-Type"] = "text/event-stream"
            response.raw = HTTPResponse(body=io.BytesIO(payload), preload_content=False, status=200)
            return response

        def close(self):
            pass

    session = requests.Session()
    session.mount("http://", Answers())
    return session


def _in_process(args):
    sys.path.insert(0, os.path.abspath(args.tree) if args.tree else os.path.dirname(HERE))
    from agenthub import AutoLLMClient, tool

    session = _session(args.gap)
    tools = [tool(add), tool(upper), tool(count)]
    schemas = [t.schema for t in tools]
    print("| turns | hand CPU/turn | run CPU/turn | run(parallel=1) CPU/turn | run - parallel=1, paired | switches a turn: "
          "run, parallel=1 | load |")
    print("|---:|---:|---:|---:|---:|---|---:|")
    for turns in [int(x) for x in args.turns.split(",")]:
        client = AutoLLMClient("bench", api_key="k", client_type="openai-chat", max_retries=0, session=session,
                               base_url="http://127.0.0.1:1/{}/v1".format(turns))
        loops = {"hand": lambda: hand(client, turns, schemas), "run": lambda: runner(client, turns, tools, 4),
                 "p1": lambda: runner(client, turns, tools, 1)}
        names = list(loops)
        for name in names:
            loops[name]()  # warm
        cpu = {name: [] for name in names}  # type: dict
        switches = {name: [0, 0] for name in names}  # type: dict
        for rep in range(args.reps):
            for name in names[rep % 3:] + names[:rep % 3]:
                before, started = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
                loops[name]()
                cpu[name].append(time.process_time() - started)
                after = resource.getrusage(resource.RUSAGE_SELF)
                switches[name][0] += after.ru_nvcsw - before.ru_nvcsw
                switches[name][1] += after.ru_nivcsw - before.ru_nivcsw
        med = {name: statistics.median(values) * 1e6 / turns for name, values in cpu.items()}
        paired = statistics.median(a - b for a, b in zip(cpu["run"], cpu["p1"])) * 1e6 / turns
        print("| {} | {:.1f} us | {:.1f} us | {:.1f} us | {:+.1f} us | {} | {:.2f} |".format(
            turns, med["hand"], med["run"], med["p1"], paired, ", ".join(
                "{:.2f} + {:.2f}".format(*(n / args.reps / turns for n in switches[name])) for name in ("run", "p1")),
            os.getloadavg()[0]))
    return 0


def _ir_worker(args):
    """(under callgrind) REPS runs of loop ``args.ir_worker`` at each length after a warm-up, ``os.getppid()``
    before each length and at the end: with ``--dump-before=os_getppid*`` each length's runs land in a dump of
    their own."""
    sys.path.insert(0, os.path.abspath(args.tree) if args.tree else os.path.dirname(HERE))
    from agenthub import AutoLLMClient, tool
    from agenthub.agent import runner as runner_module

    # valgrind runs the code ~50x slower: the runner's 2 ms rules (calls spread to threads of their own, or known
    # quick) would take other paths than they do natively; scaled with it, they take the native ones
    runner_module._SPREAD_SECONDS = 0.1
    session = _session(args.gap)
    tools = [tool(add), tool(upper), tool(count)]
    schemas = [t.schema for t in tools]
    lengths = [int(x) for x in args.turns.split(",")]
    clients = {turns: AutoLLMClient("bench", api_key="k", client_type="openai-chat", max_retries=0, session=session,
                                    base_url="http://127.0.0.1:1/{}/v1".format(turns)) for turns in lengths}
    loop = {"hand": lambda c, n: hand(c, n, schemas), "run": lambda c, n: runner(c, n, tools, 4),
            "p1": lambda c, n: runner(c, n, tools, 1)}[args.ir_worker]
    for turns in lengths:
        loop(clients[turns], turns)  # warm
    for turns in lengths:
        os.getppid()
        for _ in range(args.reps):
            loop(clients[turns], turns)
    os.getppid()
    return 0


def _instructions(args):
    """Instructions a run (callgrind, every thread of the process) of each loop at each length, per tree."""
    import shutil
    import tempfile

    sys.path.insert(0, HERE)
    import ab

    trees = [("before", ab.tree_at(args.before))] if args.before else []
    trees.append(("after" if args.before else "this", os.path.abspath(args.tree) if args.tree else ab.ROOT))
    lengths = args.turns.split(",")
    print("Python {}; instructions a run (valgrind --tool=callgrind, the whole process, every thread; {} runs a "
          "loop and length after a warm-up run; PYTHONHASHSEED=0; in-process, a {:g} ms wait a request){}".format(
              sys.version.split()[0], args.reps, args.gap * 1000,
              "; before = {}".format(args.before) if args.before else ""))
    got = {}  # type: dict
    where = tempfile.mkdtemp(prefix="agent-turns-ir-")
    try:
        for side, tree in trees:
            for name in ("hand", "run", "p1"):
                out = os.path.join(where, "{}-{}.cg".format(side, name))
                env = dict(os.environ, PYTHONPATH=tree, PYTHONHASHSEED="0")
                subprocess.run(["valgrind", "--tool=callgrind", "--dump-before=os_getppid*",
                                "--callgrind-out-file=" + out, sys.executable, os.path.abspath(__file__),
                                "--ir-worker", name, "--tree", tree, "--turns", args.turns, "--reps", str(args.reps),
                                "--gap", str(args.gap)],
                               env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=3600)
                for n, turns in enumerate(lengths):
                    with open("{}.{}".format(out, n + 2)) as f:
                        total = next(int(line.split()[1]) for line in f if line.startswith("totals:"))
                    got[side, name, turns] = total / args.reps
    finally:
        shutil.rmtree(where, True)
    print("| turns | side | hand | run | run / hand | run(parallel=1) | parallel=1 / hand |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for turns in lengths:
        for side, _ in trees:
            h, r, p = (got[side, name, turns] for name in ("hand", "run", "p1"))
            print("| {} | {} | {:,.0f}k | {:,.0f}k | {:.3f}x | {:,.0f}k | {:.3f}x |".format(
                turns, side, h / 1000, r / 1000, r / h, p / 1000, p / h))
    return 0


def _before_after(args):
    sys.path.insert(0, HERE)
    import ab

    trees = {"before": ab.tree_at(args.before), "after": ab.ROOT}
    rounds = {"before": [], "after": []}  # type: dict
    loads = []
    for n in range(args.rounds):
        for side in (["before", "after"] if n % 2 == 0 else ["after", "before"]):
            loads.append(ab.load())
            rounds[side].append(ab.run_worker(trees[side], os.path.abspath(__file__), [
                "--json", "--tree", trees[side], "--turns", args.turns, "--reps", str(args.reps)]))
    print("Python {}; before = {}, after = this checkout; {} rounds x {} runs per loop and length; {}".format(
        sys.version.split()[0], args.before, args.rounds, args.reps, ab.loads_text(loads)))
    print("| turns | hand, before | run, before | run / hand, before | hand, after | run, after | run / hand, after "
          "| parallel=1 / hand, before | parallel=1 / hand, after | run / hand paired, before | paired, after |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    worst = 0.0
    for turns in args.turns.split(","):
        med = {side: {name: statistics.median(r[turns][name] for r in rounds[side])
                      for name in ("hand", "run", "run(parallel=1)")} for side in rounds}
        ratio = {side: med[side]["run"] / med[side]["hand"] for side in med}
        ratio1 = {side: med[side]["run(parallel=1)"] / med[side]["hand"] for side in med}
        # paired: each worker's own run / hand (the same process, the same moment), the median over the rounds
        paired = {side: statistics.median(r[turns]["run"] / r[turns]["hand"] for r in rounds[side]) for side in rounds}
        worst = max(worst, ratio["after"])
        print("| {} | {:.3f} ms | {:.3f} ms | {:.3f}x | {:.3f} ms | {:.3f} ms | {:.3f}x | {:.3f}x | {:.3f}x | {:.3f}x "
              "| {:.3f}x |".format(turns, med["before"]["hand"], med["before"]["run"], ratio["before"],
                                   med["after"]["hand"], med["after"]["run"], ratio["after"], ratio1["before"],
                                   ratio1["after"], paired["before"], paired["after"]))
    print("Context switches a turn, voluntary + involuntary (getrusage: the whole process; in brackets the reading "
          "thread's own, /proc/thread-self), median over the rounds:")
    print("| turns | hand, before | run, before | hand, after | run, after |")
    print("|---:|---:|---:|---:|---:|")
    for turns in args.turns.split(","):
        cells = []
        for side in ("before", "after"):
            for name in ("hand", "run"):
                got = [r[turns]["switches"][name] for r in rounds[side] if "switches" in r[turns]]
                cells.append("{:.2f} + {:.2f} ({:.2f} + {:.2f})".format(
                    *(statistics.median(g[n] for g in got) for n in range(4))) if got else "-")
        print("| {} | {} |".format(turns, " | ".join(cells)))
    print("worst run / hand after: {:.3f}x (target <= 1.05x)".format(worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
