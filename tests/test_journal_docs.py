"""docs/tools.md "Runs that survive a crash": its example runs as written (a script that starts itself as a
child, the child killed with SIGKILL inside a tool, the run resumed) against a local Responses server that
counts requests, and prints what the page says: the first turn sent once in all, the interrupted idempotent
tool run again, the non-idempotent one once, with the crash-stable idempotency key."""

import os
import re
import subprocess
import sys

from agent_streams import responses_calls, responses_text
from doc_sections import section
from sse_server import Answer, SSEServer

from agenthub.agent.journal import idempotency_key

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: imported by every Python the example starts: the killed process's lease lapses in a second instead of 30 s
#: (the example's journal_wait=60 covers the real 30 s; the test need not wait them out)
SHORT_LEASE = "import agenthub.stores.journal as rows\nrows.JOURNAL_LEASE = 1.0\n"


def test_the_crash_example_runs_as_written(tmp_path):
    (code,) = re.findall(r"```python\n(.*?)```", section("Runs that survive a crash", "docs/tools.md"), re.S)
    (tmp_path / "trip.py").write_text(code)
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SHORT_LEASE)
    with SSEServer() as server:
        server.answers += [Answer([responses_calls([("call_1", "look_up", '{"city": "Rome"}')])]),
                           Answer([responses_calls([("call_2", "book", '{"city": "Rome"}')])]),
                           Answer([responses_text("Booked: the museum, Rome.")])]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), ROOT]),
                   OPENAI_API_KEY="sk-docs-journal-0001", OPENAI_BASE_URL=server.url + "/v1")
        env.pop("CRASH", None)
        done = subprocess.run([sys.executable, "trip.py"], cwd=str(tmp_path), env=env, capture_output=True,
                              text=True, timeout=120)
        sent = [request["body"]["input"] for request in server.requests]
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["the first process: -9", "done 3 turns, 1 from the journal",
                                        "Booked: the museum, Rome."]
    assert len(sent) == 3  # the first turn paid once (by the killed process), then two live turns
    outputs = [item for item in sent[-1] if item.get("type") == "function_call_output"]
    assert [o["output"] for o in outputs] == ["Rome: the museum is open",
                                              "booked Rome (key {})".format(idempotency_key("trip-rome", 1, "call_2")[:8])]
    assert "sk-docs-journal-0001" not in (tmp_path / "runs.db").read_bytes().decode("latin-1")
