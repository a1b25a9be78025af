"""``agenthub serve``'s cost in instructions (valgrind), client plus server against the direct client (issue 41,
item 4): what the machine's load does not move.

    python bench/serve_ir.py [--before main] [--protocols openai-chat,anthropic] [--streams text,tool]

The upstream is bench/server.py (its own process, not counted), the streams of bench/serve_ab.py.  Per tree
(``--before``'s library and this checkout's) and per protocol and stream, three processes run under
``valgrind --tool=cachegrind``, each once with one stream and once with three (after a warm-up stream): the
direct client; ``agenthub serve`` (a server driven by a client outside valgrind); the agenthub client reading
through a server outside valgrind.  A stream's instructions are half the difference of the two counts (start-up
and warm-up left out).  Printed: the direct client's instructions, and client, server and their sum as ratios
to it (target <= 1.5x).

``--toggle``: quicker, one count per process instead of two: ``valgrind --tool=callgrind --instr-atstart=no``,
instrumentation switched on (``callgrind_control -i on``) after the warm-up stream and off after one stream
(the server's by the client driving it from outside valgrind).

``--gather-scale N``: the server under valgrind with ``GATHER_SECONDS`` (and ``PARK_SECONDS``) N times longer.
The writer writes once per ``GATHER_SECONDS`` while the upstream sends faster than that, and valgrind runs the
server some 50 times slower than it runs natively: unscaled, a stream under valgrind is written in many times more
writes than natively (each with its fixed cost), and the count depends on how fast valgrind ran.  ``50``
brings the writes per stream near the native ones.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SCENARIOS = {"text": "text-20000", "tool": "tool-1048576-20000"}
MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "Write the file."}]}]


def _client(mode, url, model, protocol, count):
    from agenthub import AutoLLMClient

    if mode == "via":
        client = AutoLLMClient(model, client_type="agenthub", base_url=url)
    else:
        client = AutoLLMClient("bench-model", client_type=protocol, api_key="k", base_url=url, max_retries=0)
    toggle = os.environ.get("SERVE_IR_TOGGLE")  # (--toggle: the pid whose callgrind counts the streams after the first)
    for n in range(count + 1):  # (the first: the connection, the imports)
        if toggle and n == 1:
            subprocess.run(["callgrind_control", "-i", "on", toggle], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True)
        for _ in client.streaming_response(MESSAGES):
            pass
    if toggle:
        subprocess.run(["callgrind_control", "-i", "off", toggle], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)


def _server(config_path):
    """Serve until stdin closes (then shut down cleanly: valgrind prints its count at exit)."""
    import threading

    from agenthub.apps import server as server_module
    from agenthub.apps.server import serve

    scale = float(os.environ.get("SERVE_IR_GATHER_SCALE") or 1)  # (--gather-scale)
    for name in ("GATHER_SECONDS", "PARK_SECONDS"):
        if hasattr(server_module, name):
            setattr(server_module, name, getattr(server_module, name) * scale)
    with open(config_path) as handle:
        config = json.load(handle)
    server, url = serve(config, port=0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    print(url, flush=True)
    sys.stdin.read()
    server.shutdown()
    thread.join()
    server.server_close()


def _count(stderr):
    found = re.search(r"(?:I\s+refs|Collected)\s*:\s+([\d,]+)", stderr)
    if found is None:
        raise SystemExit("no instruction count:\n" + stderr[-2000:])
    return int(found.group(1).replace(",", ""))


TOGGLE = False  # --toggle


def _valgrind(tree, args, stdin=None):
    if TOGGLE:
        tool = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null"]
        env = dict(os.environ, PYTHONPATH=tree, SERVE_IR_TOGGLE="self")
    else:
        tool = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
        env = dict(os.environ, PYTHONPATH=tree)
    return subprocess.Popen(tool + [sys.executable, __file__] + args, env=env, cwd=tree, stdin=stdin,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)


def client_ir(tree, mode, url, model, protocol, count):
    run = _valgrind(tree, ["--worker", "client", mode, url, model, protocol, str(count)])
    out, err = run.communicate(timeout=3600)
    if run.returncode:
        raise SystemExit(err[-3000:])
    return _count(err)


def server_ir(tree, config_path, model, count):
    run = _valgrind(tree, ["--worker", "server", config_path], stdin=subprocess.PIPE)
    url = run.stdout.readline().strip()
    try:
        _client_plain(tree, url, model, count, str(run.pid) if TOGGLE else None)
    finally:
        run.stdin.close()
    err = run.stderr.read()
    run.wait(600)
    return _count(err)


def _client_plain(tree, url, model, count, toggle=None):
    env = dict(os.environ, PYTHONPATH=tree)
    env.pop("SERVE_IR_TOGGLE", None)
    if toggle:
        env["SERVE_IR_TOGGLE"] = toggle
    subprocess.run([sys.executable, __file__, "--worker", "client", "via", url, model, "-", str(count)],
                   env=env, cwd=tree, check=True, timeout=3600)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        if os.environ.get("SERVE_IR_TOGGLE") == "self":
            os.environ["SERVE_IR_TOGGLE"] = str(os.getpid())
        if sys.argv[2] == "client":
            mode, url, model, protocol, count = sys.argv[3:8]
            return _client(mode, url, model, protocol, int(count))
        return _server(sys.argv[3])
    import ab

    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="main")
    parser.add_argument("--protocols", default="openai-chat,openai-responses,anthropic,gemini")
    parser.add_argument("--streams", default="text,tool")
    parser.add_argument("--sides", default="before,after")
    parser.add_argument("--gather-scale", type=float, default=1.0,
                        help="the server's GATHER_SECONDS (and PARK_SECONDS) times this under valgrind")
    parser.add_argument("--toggle", action="store_true", help="callgrind, one stream counted after a warm-up")
    args = parser.parse_args()
    global TOGGLE
    TOGGLE = args.toggle
    os.environ["SERVE_IR_GATHER_SCALE"] = str(args.gather_scale)  # (read by the server worker under valgrind)
    upstream = subprocess.Popen([sys.executable, os.path.join(HERE, "server.py")], stdout=subprocess.PIPE)
    try:
        port = int(upstream.stdout.readline().split()[1])
        rows = []
        for protocol in args.protocols.split(","):
            for label in args.streams.split(","):
                rows.append({"id": "{}-{}".format(protocol, label), "model": "bench-model", "client_type": protocol,
                             "api_key": "k", "max_retries": 0,
                             "base_url": "http://127.0.0.1:{}/chunked/{}/{}".format(port, SCENARIOS[label], protocol)})
        folder = tempfile.mkdtemp(prefix="agenthub-bench-serve-ir-")
        config_path = os.path.join(folder, "server.json")
        with open(config_path, "w", encoding="utf-8") as handle:
            json.dump({"models": rows, "max_concurrent_streams": 16}, handle)
        trees = {"before": ab.tree_at(args.before), "after": ab.ROOT}
        sides = args.sides.split(",")
        print("| protocol | stream | side | direct (M instr.) | client | server | client + server |")
        print("| --- | --- | --- | ---: | ---: | ---: | ---: |", flush=True)
        for row in rows:
            for side in sides:
                tree = trees[side]
                # a plain server of this tree for the client's count
                plain = subprocess.Popen([sys.executable, __file__, "--worker", "server", config_path],
                                         env=dict(os.environ, PYTHONPATH=tree), cwd=tree, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, universal_newlines=True)
                try:
                    url = plain.stdout.readline().strip()

                    def per_stream(measure):
                        if TOGGLE:
                            return float(measure(1))
                        return (measure(3) - measure(1)) / 2.0

                    direct = per_stream(lambda n: client_ir(tree, "direct", row["base_url"], row["id"],
                                                            row["client_type"], n))
                    client = per_stream(lambda n: client_ir(tree, "via", url, row["id"], row["client_type"], n))
                finally:
                    plain.stdin.close()
                    plain.wait(60)
                server = per_stream(lambda n: server_ir(tree, config_path, row["id"], n))
                protocol, _, label = row["id"].rpartition("-")
                print("| {} | {} | {} | {:.1f} | {:.3f}x | {:.3f}x | {:.3f}x |".format(
                    protocol, label, side, direct / 1e6, client / direct, server / direct, (client + server) / direct),
                    flush=True)
    finally:
        upstream.kill()
        upstream.wait()


if __name__ == "__main__":
    main()
