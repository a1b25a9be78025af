"""Where ``agenthub serve`` spends its CPU (issue 41, item 4: profile first), against the direct client.

    python bench/serve_split.py [--reps 7] [--protocols openai-chat,anthropic]

The upstream is bench/server.py (a separate process) sending 20,000 text deltas and a 1 MB tool call.  In this
process, alternating, per rep: the direct client's thread CPU for the stream; then the server's WSGI app
(``make_app``, called in-process, the response body iterated here, no socket) with the CPU of its two threads
taken apart: the pump (reads and parses the upstream, encodes each event, queues it), the pump again with
the encoding replaced by a constant frame (so: parse + queue), and the response's own thread (takes the
frames from the queue and joins them).  Medians over reps, as ratios to the direct client, with the load.
What it shows: the pump alone costs about what a direct client costs (it is one, plus the encoding), so a
server that parses its upstream cannot come under 1.5x client + server; only passing the upstream's bytes
through (the client parsing the upstream's dialect itself) could.
"""

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


def main():
    import ab
    from agenthub import AutoLLMClient
    from agenthub.apps import server as app_module

    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--protocols", default="openai-chat,openai-responses,anthropic,gemini")
    args = parser.parse_args()
    upstream = subprocess.Popen([sys.executable, os.path.join(HERE, "server.py")], stdout=subprocess.PIPE)
    pump_cpu = []
    real_read = app_module._Pump._read
    real_encode = app_module._encode_event

    def timed_read(self):
        c0 = time.thread_time()
        try:
            real_read(self)
        finally:
            pump_cpu.append(time.thread_time() - c0)

    app_module._Pump._read = timed_read
    messages = [{"role": "user", "content_items": [{"type": "text", "text": "go"}]}]
    body = json.dumps({"model": "m", "messages": messages}).encode()
    loads = []
    try:
        port = int(upstream.stdout.readline().split()[1])
        print("CPU per stream as a ratio to the direct client's, median of {} reps".format(args.reps))
        print("{:<18}{:<7}{:>10}{:>8}{:>13}{:>9}{:>10}{:>9}".format(
            "protocol", "stream", "direct ms", "pump", "pump-encode", "encode", "response", "server"))
        for protocol in args.protocols.split(","):
            for label, scenario in (("text", "text-20000"), ("tool", "tool-1000000-20000")):
                base = "http://127.0.0.1:{}/chunked/{}/{}".format(port, scenario, protocol)
                app = app_module.make_app({"models": [{"id": "m", "model": "bench-model", "client_type": protocol,
                                                       "api_key": "k", "base_url": base, "max_retries": 0}]})
                direct = AutoLLMClient("bench-model", client_type=protocol, api_key="k", base_url=base, max_retries=0)

                def via(encode):
                    app_module._encode_event = encode
                    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/v1/stream", "CONTENT_TYPE": "application/json",
                               "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body),
                               "HTTP_HOST": "127.0.0.1", "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000",
                               "wsgi.url_scheme": "http"}
                    c0 = time.thread_time()
                    out = app(environ, lambda *a: None)
                    for _ in out:
                        pass
                    out.close()
                    return time.thread_time() - c0

                rows = {"direct": [], "pump": [], "bare": [], "response": []}
                for rep in range(args.reps + 1):
                    loads.append(ab.load())
                    c0 = time.thread_time()
                    for _ in direct.streaming_response(messages):
                        pass
                    d = time.thread_time() - c0
                    del pump_cpu[:]
                    response = via(real_encode)
                    time.sleep(0.05)
                    pump = pump_cpu[-1]
                    via(lambda event: b"data: {}\n\n")
                    time.sleep(0.05)
                    bare = pump_cpu[-1]
                    if rep:
                        for key, value in (("direct", d), ("pump", pump), ("bare", bare), ("response", response)):
                            rows[key].append(value)
                m = {k: statistics.median(v) for k, v in rows.items()}
                print("{:<18}{:<7}{:>10.1f}{:>7.2f}x{:>12.2f}x{:>8.2f}x{:>9.2f}x{:>8.2f}x".format(
                    protocol, label, m["direct"] * 1e3, m["pump"] / m["direct"], m["bare"] / m["direct"],
                    (m["pump"] - m["bare"]) / m["direct"], m["response"] / m["direct"],
                    (m["pump"] + m["response"]) / m["direct"]))
    finally:
        app_module._encode_event = real_encode
        app_module._Pump._read = real_read
        upstream.kill()
        upstream.wait()
    print(ab.loads_text(loads))


if __name__ == "__main__":
    main()
