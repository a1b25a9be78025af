"""A hostile MCP server on stdio for the tests (stdlib only): ``python tests/mcp_hostile_stdio.py FAULT``.

It speaks the handshake era (2025-06-18; anything before ``initialize`` is refused, so the client falls back)
and answers tools/call ``echo`` with its text; tools/call ``deaf`` stops reading stdin (it sleeps a minute); ``shut`` closes stdin, answers, and sleeps a minute.  FAULT:

- ``setsid-child``: at start it spawns a process in a session of its own (outside the server's process group)
  that keeps the server's stdout and stderr open for 30 s (its pid on stderr: ``child PID``), then serves
  as usual.
- ``setsid-stdin``: as ``setsid-child``, but the process holds the server's stdin (and reads nothing from it).
- ``other-id``: tools/call is answered with a result for another id (and nothing else).
- ``unknown-ids``: tools/call is first preceded by 20 results of 1 MB each for ids the client never used, then
  answered.
- ``leak-env``: tools/call is answered with a JSON-RPC error echoing ``SERVER_TOKEN`` (message and data).
- ``list-token``: tools/call first sends a progress notification whose ``progressToken`` is a list, then answers.
- ``odd-progress``: tools/call first sends progress notifications for its request (its id as the token) whose
  values are no finite number (true, "5", an integer of 400 digits, NaN), one with a total and a message of the
  wrong types, one with a total past a float's range (its message echoing ``SERVER_TOKEN``), one for another
  token, then answers.
- ``null-id-error``: tools/call is answered with an error whose id is null (a parse error, say).
- ``close-stdout``: tools/call closes stdout and the server keeps running (ignoring SIGTERM).
- ``half-line``: tools/call gets half a line, then the server exits with status 5.
- ``bad-bytes``: tools/call gets a line of bytes that are not UTF-8 and not JSON.
- ``ask``: tools/call first sends the client a request per method (sampling/createMessage, roots/list,
  elicitation/create, ping), reads their answers and echoes them back as the tool's text (JSON).
"""

import json
import os
import signal
import subprocess
import sys
import time

FAULT = sys.argv[1] if len(sys.argv) > 1 else ""


def send(doc):
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def main():
    if FAULT == "setsid-child":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True,
                                 stdin=subprocess.DEVNULL)  # stdout and stderr inherited
        sys.stderr.write("child {}\n".format(child.pid))
        sys.stderr.flush()
    if FAULT == "setsid-stdin":  # a process in a session of its own that holds the server's stdin and reads nothing
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # stdin inherited
        sys.stderr.write("child {}\n".format(child.pid))
        sys.stderr.flush()
    if FAULT == "close-stdout":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    initialized = False
    stdin = sys.stdin
    while True:
        line = stdin.readline()
        if not line:
            break
        msg = json.loads(line)
        method, ident, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if ident is None:
            initialized = initialized or method == "notifications/initialized"
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": ident, "result": {"protocolVersion": "2025-06-18", "capabilities": {
                "tools": {}}, "serverInfo": {"name": "hostile-stdio", "version": "1"}}})
            continue
        if not initialized:
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32600, "message": "not initialized"}})
            continue
        if method != "tools/call":
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "Method not found"}})
            continue
        text = (params.get("arguments") or {}).get("text", "")
        if (params.get("name")) == "deaf":  # reads nothing more
            time.sleep(60)
        if (params.get("name")) == "shut":  # closes its stdin, answers, and keeps running
            os.close(0)
            send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "shut"}]}})
            time.sleep(60)
        if FAULT == "other-id":
            send({"jsonrpc": "2.0", "id": ident + 1000, "result": {"content": []}})
            continue
        if FAULT == "unknown-ids":  # answers nobody asked for, big ones
            for number in range(20):
                send({"jsonrpc": "2.0", "id": "nobody-{}".format(number), "result": {
                    "content": [{"type": "text", "text": "x" * (1024 * 1024)}]}})
        if FAULT == "leak-env":  # an error answer echoing a variable the client gave it (env=)
            token = os.environ.get("SERVER_TOKEN", "")
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32603, "message": "bad token " + token,
                                                            "data": {"token": token}}})
            continue
        if FAULT == "list-token":  # a progress notification whose token is a list (no valid token), then the answer
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": [ident],
                                                                                  "progress": 1}})
        if FAULT == "odd-progress":
            def progress(value, extra=""):
                sys.stdout.write('{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": '
                                 '%d, "progress": %s%s}}\n' % (ident, value, extra))
            for value in ("true", '"5"', "1" + "0" * 400, "NaN", "Infinity"):
                progress(value)
            progress("1", ', "total": "x", "message": 5')
            progress("2.5", ', "total": 1%s, "message": "m %s"' % ("0" * 400, os.environ.get("SERVER_TOKEN", "")))
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": ident + 1,
                                                                                  "progress": 3}})
        if FAULT == "null-id-error":
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            continue
        if FAULT == "close-stdout":
            os.close(1)
            sys.stdout = open(os.devnull, "w")
            while True:
                time.sleep(1)
        if FAULT == "half-line":
            sys.stdout.write('{"jsonrpc": "2.0", "id": %d, "result": {"content": [{"type": "te' % ident)
            sys.stdout.flush()
            os._exit(5)
        if FAULT == "bad-bytes":
            sys.stdout.buffer.write(b"\xff\xfe\x00garbage\x80\n")
            sys.stdout.flush()
            continue
        if FAULT == "ask":
            answers = {}
            asks = [("sampling/createMessage", {"messages": [], "maxTokens": 10}), ("roots/list", None),
                    ("elicitation/create", {"message": "name?", "requestedSchema": {"type": "object"}}),
                    ("ping", None)]
            for number, (asked, asked_params) in enumerate(asks):
                request = {"jsonrpc": "2.0", "id": "srv-{}".format(number), "method": asked}
                if asked_params is not None:
                    request["params"] = asked_params
                send(request)
            while len(answers) < len(asks):
                answer = json.loads(stdin.readline())
                answers[answer["id"]] = answer
            text = json.dumps([answers["srv-{}".format(n)] for n in range(len(asks))])
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": text}]}})


if __name__ == "__main__":
    main()
