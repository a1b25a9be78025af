"""Runs that survive a crash (issue 39, Measure): a fault matrix of kill -9, the resume latency, the journal's cost.

    python bench/journal.py                 # all three; a table on stdout; exit 1 when a target is missed
    python bench/journal.py --kills 40      # a shorter fault matrix
    python bench/journal.py --only matrix|resume|overhead
    python bench/journal.py --only overhead --before main   # the overhead before and after, in one run
    python bench/journal.py --only instructions [--before main] [--keep DIR]   # valgrind: instructions a turn
    python bench/journal.py --only seam [--before main]   # valgrind: the journal's seam alone, a turn
    python bench/journal.py --only syscalls [--before main]   # strace: the system calls the journal adds a turn

1. Fault matrix: a 10-turn run (9 turns of 3 tool calls each: ``look_up`` and ``check``, idempotent, and
   ``pay``, ``@tool(idempotent=False)``, whose side effect is kept by its idempotency key; then a text turn)
   on four wires (openai-chat, openai-responses, anthropic, gemini; streams of tests/agent_streams.py) in a
   child process journaled on SQLite, killed with SIGKILL at a random moment (seeded), started again with the
   same run_id until it ends.  An interrupted ``pay`` comes back pending (RunResult.interrupted): the child
   decides it (True: the tool sees its idempotency key in its ledger and does not pay again).  Each tool takes
   20 ms here, so that kills land inside tools as well as in model requests.  Counted:
   completed turns billed twice (a request for a turn the journal already holds: the local server, a process
   of its own, checks the journal when each request comes: must be 0), requests re-sent for a turn that was in
   flight at the kill (allowed, documented), ``pay`` entered again without a decision (0), paid twice (0), the
   final transcript against an uninterrupted run's (equal, ``created_at`` aside).
2. Resume latency: a journal of 10 turns (30 tool results) whose 11th request failed; ``client.run`` again,
   the time from the call to the server receiving the first live request (same clock), SQLite.  Target < 50 ms.
3. Overhead: the same 10-turn run with and without a journal (SQLite; Redis when redis-server is installed),
   alternating, 7 runs each, CPU (``time.process_time``, every thread) and wall, min; turns of 200 text deltas
   and 3 tool calls (as bench/agent.py), small turns (3 tool calls, no text), and small turns whose 3 tools are
   all idempotent (``pay`` declared idempotent: no call is journaled as started).  Target: CPU <= 1.05x.
   ``--before REV``: the same, before (``agenthub/`` at REV) and after, in fresh worker processes, alternating,
   with the store writes a run (``journal_append_many`` calls).
4. Instructions (``--only instructions``; needs valgrind): runs of 4 and 12 turns (3 tool calls, no text; ``pay``
   at most once, then all three idempotent) after a warm-up run, without a journal, on SQLite and on Redis, under callgrind (the local servers outside it): a
   turn's instructions are the slope between the two runs (load-independent), the journal's part a turn the
   difference to the run without one.  ``--before REV`` adds REV's rows; ``--keep DIR`` keeps the dumps.
5. The seam alone (``--only seam``; needs valgrind): ``RunJournal`` driven with the calls a real run makes on it in
   one turn (captured from one: ``request``, ``answered``, ``starting``, 3 ``finished``, ``pay``'s last), 12 turns
   after 3 warm-up ones, on a store that keeps nothing (the entries' text and the bookkeeping), SQLite and Redis;
   the median turn, the marker's own count taken off.  No threads, sockets of the run or waits: the same count
   from run to run (the whole client's slope in 4. moves by up to 120K a turn between runs), so a cut of a few
   thousand instructions shows.  ``--before REV`` adds REV's row.
"""

import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from agent_streams import BASES, BUILDERS  # noqa: E402

WIRES = ("openai-chat", "openai-responses", "anthropic", "gemini")
MODELS = {"openai-chat": "gpt-4o-mini", "openai-responses": "gpt-5.5", "anthropic": "claude-sonnet-4-6",
          "gemini": "gemini-2.5-flash"}
TURNS = 10
MARK = "RESULT-MARK"
#: how long each tool takes in the fault matrix (so that kills land inside tools too, not only in requests)
TOOL_SECONDS = 0.0


# -- the server (a process of its own: its CPU is not the client's) -------------------------------------------
def _answer(wire, turn, text_deltas, last=TURNS - 1):
    calls_of, text_of = BUILDERS[wire]
    if turn >= last:
        return text_of("done after {} turns".format(TURNS))
    calls = [("call_{}_{}".format(turn, n), name, json.dumps({"n": turn}))
             for n, name in enumerate(("look_up", "check", "pay"))]
    if not text_deltas or wire != "openai-chat":
        return calls_of(calls)
    chunks = [{"id": "c", "choices": [{"index": 0, "delta": {"content": "word{} ".format(i)}, "finish_reason": None}]}
              for i in range(text_deltas)]
    text = "".join("data: {}\n\n".format(json.dumps(c)) for c in chunks).encode()
    return text + calls_of(calls)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        owner = self.server.owner
        if self.path.startswith("/stats"):
            with owner.lock:
                body = json.dumps(owner.stats).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        arrived = time.perf_counter()
        found = re.search(rb"RUN=([A-Za-z0-9_-]+)", raw)
        run = found.group(1).decode() if found else "?"
        turn = raw.count(MARK.encode()) // 3
        wire = "gemini" if "Content" in self.path else "anthropic" if self.path.endswith("/messages") else \
            "openai-responses" if self.path.endswith("/responses") else "openai-chat"
        fail = run.startswith("fail") and turn >= TURNS  # (resume latency: the 11th request fails)
        twice = False
        if owner.journal and not fail:
            entries = [json.loads(e) for e in owner.journal.journal_entries(run)]
            twice = any(e.get("k") == "turn" and e.get("turn") == turn for e in entries)
        with owner.lock:
            stats = owner.stats.setdefault(run, {"requests": {}, "billed_twice": 0, "first": None})
            stats["requests"][str(turn)] = stats["requests"].get(str(turn), 0) + 1
            stats["billed_twice"] += int(twice)
            stats["first"] = stats["first"] or arrived
            stats["last"] = arrived
        if fail:
            self.send_response(500)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")
            return
        deltas = int(self.headers.get("X-Deltas") or 0)
        turns = int(self.headers.get("X-Turns") or TURNS)  # (the overhead's short runs: fewer turns)
        body = _answer(wire, turn, deltas, last=99 if run.startswith("fail") else turns - 1)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve(journal_url):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.handle_error = lambda request, address: None  # (a killed child's connection: reset, nothing to say)
    server.owner = argparse.Namespace(lock=threading.Lock(), stats={}, journal=None)
    if journal_url:
        from agenthub.stores import open_store

        server.owner.journal = open_store(journal_url)
    return server


class Server(object):
    """The server in a subprocess: ``url``, ``stats()``."""

    def __init__(self, journal_url=""):
        self.process = subprocess.Popen([sys.executable, __file__, "serve", journal_url], stdout=subprocess.PIPE)
        self.url = self.process.stdout.readline().decode().strip()

    def stats(self):
        import requests

        return requests.post(self.url + "/stats", data=b"", timeout=30).json()

    def close(self):
        self.process.terminate()
        self.process.wait(10)
        self.process.stdout.close()


# -- the run (in the child, and in this process for the resume and overhead measurements) --------------------
def make_tools(ledger, all_idempotent=False):
    from agenthub import tool
    from agenthub.agent import current_call

    def write(line):
        if ledger is None:
            return
        fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)

    @tool
    def look_up(n: int) -> str:
        """Look something up."""
        write("enter look_up " + current_call().idempotency_key)
        time.sleep(TOOL_SECONDS)
        return "{} look_up {}".format(MARK, n)

    @tool
    def check(n: int) -> str:
        """Check something."""
        write("enter check " + current_call().idempotency_key)
        time.sleep(TOOL_SECONDS)
        return "{} check {}".format(MARK, n)

    @tool(idempotent=all_idempotent)
    def pay(n: int) -> str:
        """Pay (not safe to repeat: the idempotency key keeps it once)."""
        key = current_call().idempotency_key
        write("enter pay " + key)
        time.sleep(TOOL_SECONDS)  # (a kill here: entered, not paid; a kill after the effect: paid, no result)
        if ledger is not None and ("effect pay " + key) in open(ledger).read().split("\n"):
            return "{} pay {}".format(MARK, n)  # paid before the crash: the key says so, not paid again
        write("effect pay " + key)
        return "{} pay {}".format(MARK, n)

    return [look_up, check, pay]


def client_for(wire, url, deltas=0):
    from agenthub import AutoLLMClient

    return AutoLLMClient(MODELS[wire], api_key="k-bench-journal", base_url=url + BASES[wire], client_type=wire,
                         max_retries=0)


def user(run):
    return [{"role": "user", "content_items": [{"type": "text", "text": "Do the ten things. RUN={}".format(run)}]}]


def run_once(wire, url, run, journal=None, ledger=None, deltas=0, decide=None, max_turns=TURNS,
             all_idempotent=False, turns=TURNS):
    client = client_for(wire, url, deltas)
    tools = make_tools(ledger, all_idempotent)
    kwargs = dict(journal=journal, run_id=run, journal_wait=60) if journal else {}
    headers = dict({"X-Deltas": str(deltas)} if deltas else {}, **({"X-Turns": str(turns)} if turns != TURNS else {}))
    config = {"extra_headers": headers} if headers else None
    return client.run(user(run), config, tools=tools, max_turns=max_turns, decisions=decide, **kwargs).result()


def child(wire, url, run, journal, ledger):
    import agenthub.stores.journal as rows

    global TOOL_SECONDS
    rows.JOURNAL_LEASE = 1.0  # a killed child's lease lapses in a second (30 s by default)
    TOOL_SECONDS = 0.02
    result = run_once(wire, url, run, journal, ledger)
    while result.interrupted:  # pay was interrupted: decided here (the tool keeps it once by its key)
        for call_id in result.interrupted:
            with open(ledger, "a") as handle:
                handle.write("decide {}\n".format(call_id))
        result = run_once(wire, url, run, journal, ledger, decide={c: True for c in result.interrupted})
    print(json.dumps({"stop": result.stop, "turns": result.turns, "messages": plain(result.messages),
                      "replayed_turns": result.replayed_turns}), flush=True)


def plain(messages):
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "created_at"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(messages)


# -- 1. the fault matrix ---------------------------------------------------------------------------------------
def matrix(kills_wanted, seed, folder):
    rng = random.Random(seed)
    url_db = "sqlite:///" + os.path.join(folder, "matrix.db")
    server = Server(url_db)
    env = dict(os.environ, PYTHONPATH=ROOT)
    rows = {}
    try:
        clean = {}
        spans = {}
        for wire in WIRES:
            started = time.monotonic()
            done = subprocess.run([sys.executable, __file__, "child", wire, server.url, "clean-" + wire.replace("-", ""),
                                   url_db, os.path.join(folder, "clean-" + wire)], env=env, capture_output=True,
                                  timeout=300)
            assert done.returncode == 0, done.stderr.decode()
            spans[wire] = time.monotonic() - started
            clean[wire] = json.loads(done.stdout)["messages"]
        started = time.monotonic()  # the child's start-up (imports): a kill before it ends finds nothing journaled
        subprocess.run([sys.executable, __file__, "imports"], env=env, check=True, timeout=60)
        startup = time.monotonic() - started
        kills = 0
        number = 0
        where = {}
        while kills < kills_wanted:
            for wire in WIRES:
                if kills >= kills_wanted:
                    break
                number += 1
                run = "r{}{}".format(number, wire.replace("-", ""))
                ledger = os.path.join(folder, run + ".ledger")
                row = rows.setdefault(wire, {"runs": 0, "kills": 0, "starts": 0, "equal": 0, "resent": 0,
                                             "billed_twice": 0, "pay_reentered": 0, "paid_twice": 0, "failed": 0})
                row["runs"] += 1
                while True:
                    row["starts"] += 1
                    process = subprocess.Popen([sys.executable, __file__, "child", wire, server.url, run, url_db,
                                                ledger], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                    delay = rng.uniform(startup * 0.9, spans[wire] * 1.05)
                    try:
                        out, err = process.communicate(timeout=delay)
                    except subprocess.TimeoutExpired:
                        process.send_signal(signal.SIGKILL)
                        process.communicate(timeout=30)
                        kills += 1
                        row["kills"] += 1
                        last = _last_entry(url_db, run)
                        where[last] = where.get(last, 0) + 1
                        continue
                    if process.returncode != 0:
                        row["failed"] += 1
                        print("  {} {}: the child failed: {}".format(wire, run, err.decode()[-500:]), file=sys.stderr)
                        break
                    ended = json.loads(out)
                    row["equal"] += int(ended["messages"] == clean[wire] and ended["stop"] == "done")
                    break
                lines = open(ledger).read().split("\n") if os.path.exists(ledger) else []
                from agenthub.agent.journal import idempotency_key

                allowed = {}  # idempotency key -> how often pay may be entered: once, and once a decision
                for line in lines:
                    if line.startswith("decide "):
                        call_id = line.split()[1]
                        key = idempotency_key(run, int(call_id.split("_")[1]), call_id)
                        allowed[key] = allowed.get(key, 1) + 1
                entered, effects = {}, {}
                for line in lines:
                    words = line.split()
                    if words[:2] == ["enter", "pay"]:
                        entered[words[2]] = entered.get(words[2], 0) + 1
                    if words[:2] == ["effect", "pay"]:
                        effects[words[2]] = effects.get(words[2], 0) + 1
                row["paid_twice"] += sum(1 for n in effects.values() if n > 1)
                row["pay_reentered"] += sum(max(0, n - allowed.get(key, 1)) for key, n in entered.items())
        stats = server.stats()
        for wire, row in rows.items():
            for run, seen in stats.items():
                if run.endswith(wire.replace("-", "")) and run.startswith("r"):
                    row["billed_twice"] += seen["billed_twice"]
                    row["resent"] += sum(n - 1 for n in seen["requests"].values())
        return rows, kills, where
    finally:
        server.close()


def _last_entry(url, run):
    from agenthub.stores import open_store

    store = open_store(url)
    try:
        entries = store.journal_entries(run)
        return json.loads(entries[-1])["k"] if entries else "(none: killed before the header)"
    finally:
        store.close()


# -- 2. resume latency -----------------------------------------------------------------------------------------
def resume_latency(folder, repeats=15):
    from agenthub.errors import AgentHubError

    url_db = "sqlite:///" + os.path.join(folder, "resume.db")
    server = Server()
    try:
        try:
            run_once("openai-chat", server.url, "fail1", url_db, max_turns=TURNS + 1)
        except AgentHubError:
            pass
        times = []
        for _ in range(repeats):
            before = server.stats()["fail1"]["last"]
            started = time.perf_counter()
            try:
                run_once("openai-chat", server.url, "fail1", url_db, max_turns=TURNS + 1)
            except AgentHubError:
                pass
            after = server.stats()["fail1"]["last"]
            assert after != before
            times.append((after - started) * 1000)
        return times
    finally:
        server.close()


# -- 3. overhead -----------------------------------------------------------------------------------------------
#: the journal's calls a run makes once (its claim and read, its end), the others being a turn's
_FIXED_CALLS = ("__init__", "done", "close")


def _journal_clock():
    """CPU spent inside the runner's journal seam (``RunJournal``'s calls, this thread), by call: a dict the
    wrapped methods add to (so that the overhead splits into a run's fixed part and its turns' part)."""
    from agenthub.agent import journal as seam

    spent = {}
    for name, method in list(vars(seam.RunJournal).items()):
        if not callable(method) or (name.startswith("_") and name != "__init__"):
            continue

        def timed(*args, _method=method, _name=name, **kwargs):
            started = time.thread_time()
            try:
                return _method(*args, **kwargs)
            finally:
                spent[_name] = spent.get(_name, 0.0) + time.thread_time() - started

        setattr(seam.RunJournal, name, timed)
    # and the store writes inside them (a turn's: journal_append_many; the run's last one, journal_finish, is
    # counted in its fixed part): the journal's CPU a turn splits into its writes and the rest
    import agenthub.stores.sqlite as sqlite_store

    classes = [sqlite_store.SQLiteStore]
    try:
        import agenthub.stores.redis as redis_store

        classes.append(redis_store.RedisStore)
    except ImportError:
        pass
    for cls in classes:
        method = cls.journal_append_many

        def written(*args, _method=method, **kwargs):
            started = time.thread_time()
            try:
                return _method(*args, **kwargs)
            finally:
                spent["write"] = spent.get("write", 0.0) + time.thread_time() - started
                spent["writes"] = spent.get("writes", 0) + 1

        cls.journal_append_many = written
    return spent


def overhead(folder, deltas, stores, repeats=7, url=None, all_idempotent=False, turns=TURNS):
    server = Server() if url is None else None
    url = url or server.url
    spent = _journal_clock()
    try:
        results = {}
        for index, (name, store) in enumerate(stores):
            plain_cpu, plain_wall, kept_cpu, kept_wall, fixed, turnwork, writes = [], [], [], [], [], [], []
            counts = []
            for n in range(repeats):
                for journaled in (False, True):
                    spent.clear()
                    run = "o{}-{}-{}-{}-{}-{}-{}".format(index, deltas, turns, int(all_idempotent), n, int(journaled),
                                                         os.getpid())  # (each case its own runs: none finished)
                    cpu, wall = time.process_time(), time.perf_counter()
                    result = run_once("openai-chat", url, run, store if journaled else None, deltas=deltas,
                                      all_idempotent=all_idempotent, turns=turns)
                    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                    assert result.stop == "done" and result.turns == turns, result.stop
                    assert not result.replayed_turns, "a journaled run found finished: measured nothing"
                    (kept_cpu if journaled else plain_cpu).append(cpu)
                    (kept_wall if journaled else plain_wall).append(wall)
                    if journaled:
                        fixed.append(sum(v for k, v in spent.items() if k in _FIXED_CALLS))
                        turnwork.append(sum(v for k, v in spent.items()
                                            if k not in _FIXED_CALLS and k not in ("write", "writes")))
                        writes.append(spent.get("write", 0.0))
                        counts.append(spent.get("writes", 0))
            results[name] = (min(plain_cpu), min(kept_cpu), min(plain_wall), min(kept_wall),
                             statistics.median(fixed), statistics.median(turnwork), statistics.median(writes),
                             statistics.median(counts))
        return results
    finally:
        if server is not None:
            server.close()


#: the overhead's turns: (text deltas, label, every tool idempotent)
CASES = ((200, "200 text deltas + 3 calls", False), (0, "3 calls, no text", False),
         (0, "3 idempotent calls, no text", True))
#: ``--before``'s cases: (text deltas, label, every tool idempotent, turns a run); the runs of 2 and 10 turns of
#: the same turn split the overhead into a fixed part a run and a marginal part a turn
AB_CASES = ((200, "200 text deltas + 3 calls", False, TURNS), (0, "3 calls, no text", False, TURNS),
            (0, "3 idempotent calls, no text", True, TURNS), (0, "3 calls, no text", False, 2))


def _stores(folder, redis_url):
    """The overhead's stores: SQLite and Redis, each as a URL (a store opened per run) and as one object."""
    from agenthub.stores import open_store

    tag = str(os.getpid())
    stores = [("SQLite (URL: a store opened per run)", "sqlite:///" + os.path.join(folder, "overhead-" + tag + ".db")),
              ("SQLite (one store object)", open_store("sqlite:///" + os.path.join(folder, "object-" + tag + ".db")))]
    if redis_url:
        stores.append(("Redis (URL)", redis_url))
        stores.append(("Redis (one store object)", open_store(redis_url)))
    return stores


def overhead_worker(url, folder, redis_url, deltas, repeats, all_idempotent="0", turns=str(TURNS)):
    """One side of ``--before``: this process's library (the tree first on its path), every store; JSON out."""
    stores = _stores(folder, redis_url)
    try:
        print(json.dumps(overhead(folder, int(deltas), stores, int(repeats), url=url,
                                  all_idempotent=all_idempotent == "1", turns=int(turns))))
    finally:
        for _, store in stores:
            if not isinstance(store, str):
                store.close()


def overhead_ab(folder, before, rounds, repeats):
    """The overhead before (``agenthub/`` at ``before``) and after (this tree), each in fresh worker processes,
    alternating, ``rounds`` each; medians of each side's minima, the load average beside them."""
    import ab
    from store_support import REDIS_SERVER, RedisServer

    trees = {"before": ab.tree_at(before), "after": ROOT}
    server = Server()
    redis = RedisServer().start() if REDIS_SERVER else None
    print("overhead, before ({}) and after, {} rounds x {} runs each, fresh worker processes, alternating".format(
        before, rounds, repeats))
    print("| store | turns | side | CPU without | CPU with journal | ratio | per turn | store writes a run | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    added = {}  # (store, side, label, turns) -> the journal's CPU a run (median of the rounds' minima), ms
    inside = {}  # (store, side, label, turns) -> CPU inside the journal's calls a run: (fixed ones, the turns'), ms
    try:
        for deltas, label, idempotent, turns in AB_CASES:
            got = {"before": [], "after": []}
            loads = []
            for n in range(rounds):
                for side in (("before", "after") if n % 2 == 0 else ("after", "before")):
                    loads.append(ab.load())
                    got[side].append(ab.run_worker(trees[side], __file__, [
                        "overhead-worker", server.url, folder, redis.url if redis else "", str(deltas), str(repeats),
                        str(int(idempotent)), str(turns)]))
            for name in got["after"][0]:
                for side in ("before", "after"):
                    plain_cpu = statistics.median(r[name][0] for r in got[side])
                    kept_cpu = statistics.median(r[name][1] for r in got[side])
                    ratio = statistics.median(r[name][1] / r[name][0] for r in got[side])
                    added[name, side, label, turns] = (kept_cpu - plain_cpu) * 1000
                    inside[name, side, label, turns] = (statistics.median(r[name][4] for r in got[side]) * 1000,
                                                        statistics.median(r[name][5] for r in got[side]) * 1000,
                                                        statistics.median(r[name][6] for r in got[side]) * 1000)
                    count = [r[name][7] for r in got[side] if len(r[name]) > 7]  # (journal_append_many calls)
                    print("| {} | {} x {} | {} | {:.1f} ms | {:.1f} ms | {:.3f}x | +{:.2f} ms | {} | {} |".format(
                        name, turns, label, side, plain_cpu * 1000, kept_cpu * 1000, ratio,
                        (kept_cpu - plain_cpu) * 1000 / turns, "{:g}".format(statistics.median(count)) if count else "?",
                        ab.loads_text(loads)), flush=True)
        print()
        print("inside the journal's calls a turn (runs of {} turns; CPU of the calling thread, median of the runs), "
              "split into the store writes (journal_append_many) and the rest".format(TURNS))
        print("| store | turns | side | inside: a turn | of it writes | of it the rest |")
        print("|---|---|---|---|---|---|")
        for name, side, label, turns in sorted(inside, key=lambda k: (k[2], k[0], k[1] != "before")):
            if turns == TURNS:
                _, turns_in, writes_in = inside[name, side, label, turns]
                print("| {} | {} | {} | {:.3f} ms | {:.3f} ms | {:.3f} ms |".format(
                    name, label, side, turns_in / TURNS, writes_in / TURNS, (turns_in - writes_in) / TURNS))
        split = sorted({(n, label) for n, _, label, turns in added if turns == 2 and (n, "after", label, TURNS) in added})
        if split:
            print()
            print("the journal's CPU split (runs of 2 and {} turns of the same turn): marginal a turn = (run of {} - run "
                  "of 2) / {}, fixed a run = run of 2 - 2 x marginal".format(TURNS, TURNS, TURNS - 2))
            print("and measured inside the journal's calls (CPU of the calling thread, median of the runs): its claim, "
                  "read and end (fixed) and the rest over the {} turns (a turn), split into the store writes "
                  "(journal_append_many) and the rest".format(TURNS))
            print("| store | turns | side | run of 2 | run of {} | fixed a run | marginal a turn | inside: fixed a run "
                  "| inside: a turn | of it writes | of it the rest |".format(TURNS))
            print("|---|---|---|---|---|---|---|---|---|---|---|")
            for name, label in split:
                for side in ("before", "after"):
                    short, long_ = added[name, side, label, 2], added[name, side, label, TURNS]
                    marginal = (long_ - short) / (TURNS - 2)
                    fixed_in, turns_in, writes_in = inside[name, side, label, TURNS]
                    print("| {} | {} | {} | +{:.2f} ms | +{:.2f} ms | {:.2f} ms | {:.3f} ms | {:.2f} ms | {:.3f} ms | "
                          "{:.3f} ms | {:.3f} ms |".format(
                              name, label, side, short, long_, short - 2 * marginal, marginal, fixed_in,
                              turns_in / TURNS, writes_in / TURNS, (turns_in - writes_in) / TURNS))
    finally:
        server.close()
        if redis is not None:
            redis.close()


# -- 4. instructions a turn (valgrind) -------------------------------------------------------------------------
#: the instructions' runs: SHORT and LONG turns (3 calls, no text, then a text turn); a turn's count is the slope
IR_SHORT, IR_LONG = 4, 12


def ir_worker(url, store):
    """A warm-up run, then runs of IR_SHORT and IR_LONG turns (3 calls, no text) journaled on ``store`` ("" for
    none), ``os.getppid()`` before and after each: under callgrind with ``--dump-before=os_getppid*`` each run's
    instructions (everything the client does for it: its turns, its result, its journal's claim and end) land in
    a dump of their own."""
    import uuid

    tag = uuid.uuid4().hex[:8]
    idempotent = os.environ.get("JOURNAL_BENCH_IDEMPOTENT") == "1"  # (every tool idempotent: pay too)
    run_once("openai-chat", url, "warm-" + tag, store or None, turns=IR_SHORT, max_turns=IR_SHORT,
             all_idempotent=idempotent)
    for turns in (IR_SHORT, IR_LONG):
        os.getppid()
        result = run_once("openai-chat", url, "ir{}-{}".format(turns, tag), store or None, turns=turns,
                          max_turns=turns, all_idempotent=idempotent)
        assert result.stop == "done" and result.turns == turns, result.stop
    os.getppid()


def _callgrind_totals(tree, worker, url, store, out, dumps):
    """This script's ``worker`` (``ir-worker``, ``seam-worker``) under callgrind, the library at ``tree``, a dump
    at each ``os.getppid`` it calls (its marker): the total instructions of the dumps numbered ``dumps``."""
    env = dict(os.environ, PYTHONPATH=tree, PYTHONHASHSEED="0")
    subprocess.run(["valgrind", "--tool=callgrind", "--dump-before=os_getppid*", "--callgrind-out-file=" + out,
                    sys.executable, __file__, worker, url, store],
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800)
    totals = []
    for n in dumps:
        with open("{}.{}".format(out, n)) as f:
            totals.append(next(int(line.split()[1]) for line in f if line.startswith("totals:")))
    return totals


def instructions(tree, url, store, keep=None):
    """(instructions a turn, instructions a run besides its turns) of ``ir_worker``'s runs, the library at
    ``tree``: the slope between the runs of IR_SHORT and IR_LONG turns, and the rest of the short run."""
    import shutil

    where = tempfile.mkdtemp(prefix="journal-ir-")
    try:
        out = os.path.join(where, "cg.out")
        runs = _callgrind_totals(tree, "ir-worker", url, store, out, (2, 3))  # (dump 1: the start-up, the warm-up)
        if keep:
            os.makedirs(keep, exist_ok=True)
            name = "{}-{}".format(os.path.basename(tree.rstrip("/")), store.split(":", 1)[0] or "none")
            shutil.copy("{}.3".format(out), os.path.join(keep, name + ".cg"))
        turn = (runs[1] - runs[0]) / (IR_LONG - IR_SHORT)
        return turn, runs[0] - IR_SHORT * turn
    finally:
        shutil.rmtree(where, True)


def instructions_table(folder, before, keep=None):
    """Instructions a turn without a journal, on SQLite and on Redis, this tree (and ``before``'s): medians."""
    import ab
    from store_support import REDIS_SERVER, RedisServer

    trees = [("after", ROOT)] + ([("before", ab.tree_at(before))] if before else [])
    server = Server()
    redis = RedisServer().start() if REDIS_SERVER else None
    try:
        print("instructions (valgrind callgrind) a turn (3 tool calls, no text: the slope between runs of {} and {} "
              "turns) and a run besides its turns".format(IR_SHORT, IR_LONG))
        print("| tools | side | store | a turn | the journal's part a turn | share of a plain turn | a run besides its "
              "turns | the journal's part a run |")
        print("|---|---|---|---|---|---|---|---|")
        for idempotent in os.environ.get("JOURNAL_BENCH_IR_CASES", "0,1").split(","):  # (1: every tool idempotent)
            os.environ["JOURNAL_BENCH_IDEMPOTENT"] = idempotent  # (ir_worker's, through _callgrind_totals' env)
            for side, tree in trees:
                stores = [("none", ""), ("SQLite", "sqlite:///" + os.path.join(folder, "ir-{}-{}.db".format(
                    side, idempotent)))]
                if redis is not None:
                    stores.append(("Redis", redis.url))
                plain = None
                for name, store in stores:
                    turn, fixed = instructions(tree, server.url, store, keep=keep)
                    if plain is None:
                        plain = (turn, fixed)
                    print("| {} | {} | {} | {:.0f}K | {} | {} | {:.0f}K | {} |".format(
                        "3 idempotent calls" if idempotent == "1" else "3 calls, pay at most once", side, name,
                        turn / 1e3, "" if name == "none" else "+{:.0f}K".format((turn - plain[0]) / 1e3),
                        "" if name == "none" else "{:.1f}%".format((turn - plain[0]) * 100 / plain[0]), fixed / 1e3,
                        "" if name == "none" else "+{:.0f}K".format((fixed - plain[1]) / 1e3)), flush=True)
        os.environ.pop("JOURNAL_BENCH_IDEMPOTENT", None)
    finally:
        server.close()
        if redis is not None:
            redis.close()


def _strace_counts(tree, url, store):
    """System calls (name -> calls) of ``ir_worker``'s process and threads (its warm-up run and runs of IR_SHORT and
    IR_LONG turns), the library at ``tree``, under ``strace -f -c``."""
    where = tempfile.mkdtemp(prefix="journal-strace-")
    try:
        out = os.path.join(where, "counts")
        env = dict(os.environ, PYTHONPATH=tree, PYTHONHASHSEED="0")
        subprocess.run(["strace", "-f", "-c", "-o", out, sys.executable, __file__, "ir-worker", url, store], env=env,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
        counts = {}
        with open(out) as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 5 and fields[3].isdigit() and fields[-1] != "total":
                    counts[fields[-1]] = int(fields[3])
        return counts
    finally:
        import shutil

        shutil.rmtree(where, True)


#: the system calls ``syscalls_table`` shows (the rest summed)
SYSCALLS = ("pwrite64", "pread64", "fcntl", "fdatasync", "sendto", "recvfrom", "poll")


def syscalls_table(folder, before):
    """System calls the journal adds a turn (``ir_worker``'s 20 journaled turns against the same runs without a
    journal, every tool idempotent and ``pay`` at most once), on SQLite and Redis, this tree (and ``before``'s)."""
    import ab
    from store_support import REDIS_SERVER, RedisServer

    trees = [("after", ROOT)] + ([("before", ab.tree_at(before))] if before else [])
    server = Server()
    redis = RedisServer().start() if REDIS_SERVER else None
    turns = IR_SHORT * 2 + IR_LONG
    try:
        print("system calls (strace -f -c) the journal adds a turn: {} turns of 3 tool calls (3 runs), with a journal "
              "less without, / {}".format(turns, turns))
        print("| tools | side | store | " + " | ".join(SYSCALLS) + " | others | all |")
        print("|---|---|---|" + "---|" * (len(SYSCALLS) + 2))
        for idempotent in os.environ.get("JOURNAL_BENCH_IR_CASES", "0,1").split(","):
            os.environ["JOURNAL_BENCH_IDEMPOTENT"] = idempotent
            for side, tree in trees:
                plain = _strace_counts(tree, server.url, "")
                stores = [("SQLite", "sqlite:///" + os.path.join(folder, "st-{}-{}.db".format(side, idempotent)))]
                if redis is not None:
                    stores.append(("Redis", redis.url))
                for name, store in stores:
                    got = _strace_counts(tree, server.url, store)
                    added = {k: got.get(k, 0) - plain.get(k, 0) for k in set(got) | set(plain)}
                    others = sum(v for k, v in added.items() if k not in SYSCALLS)
                    print("| {} | {} | {} | {} | {:.1f} | {:.1f} |".format(
                        "3 idempotent calls" if idempotent == "1" else "3 calls, pay at most once", side, name,
                        " | ".join("{:.1f}".format(added.get(k, 0) / turns) for k in SYSCALLS), others / turns,
                        sum(added.values()) / turns), flush=True)
        os.environ.pop("JOURNAL_BENCH_IDEMPOTENT", None)
    finally:
        server.close()
        if redis is not None:
            redis.close()


# -- 5. the journal's seam alone, a turn's calls (valgrind; deterministic) -------------------------------------
#: the seam's turns measured (after SEAM_WARM warm-up turns): a turn's count is their median
SEAM_WARM, SEAM_TURNS = 3, 12


def _capture(url):
    """The calls a real run (openai-chat, 3 tool calls a turn) makes on its ``RunJournal`` in its second turn:
    [(method, args, kwargs)], the arguments as they were (copied)."""
    import copy

    from agenthub.agent import journal as seam
    from agenthub.stores import MemoryStore

    calls = []
    originals = {}
    for name in ("request", "answered", "starting", "started", "finished"):
        if not hasattr(seam.RunJournal, name):  # (``started``: gone since; the tree measured may still have it)
            continue
        originals[name] = method = getattr(seam.RunJournal, name)

        def recording(self, *args, _method=method, _name=name, **kwargs):
            kept = copy.deepcopy(args)
            if _name == "finished" and len(kept) > 3:  # (a tool's seconds as a quiet machine's, whatever the load:
                kept = kept[:3] + (0.0005,) + kept[4:]  # over QUICK together, a loaded capture wrote twice a turn)
            calls.append((_name, kept, copy.deepcopy(kwargs)))
            return _method(self, *args, **kwargs)

        setattr(seam.RunJournal, name, recording)
    try:
        run_once("openai-chat", url, "seam-capture", MemoryStore(), turns=3, max_turns=3,
                 all_idempotent=os.environ.get("JOURNAL_BENCH_IDEMPOTENT") == "1")
    finally:
        for name, method in originals.items():
            setattr(seam.RunJournal, name, method)
    turn = [c for c in calls if c[1] and c[1][0] == 1]
    # (the order as the runner makes them: request, answered, starting, then the results as the calls end; here
    # in a fixed order: look_up, check, pay, so that pay's result goes with the two kept, as in a run)
    finished = sorted((c for c in turn if c[0] == "finished"), key=lambda c: c[1][1] == "call_1_2")
    return [c for c in turn if c[0] != "finished"] + finished


class _Nowhere(object):
    """A store that takes journal writes and keeps nothing (the seam's own cost: the entries' text, the rest)."""

    @staticmethod
    def make():
        from agenthub.stores import MemoryStore

        class Nowhere(MemoryStore):
            def journal_open(self, *args, **kwargs):
                return None, []

            def journal_append_many(self, *args, **kwargs):
                pass

            def journal_append(self, *args, **kwargs):
                pass

            def journal_finish(self, *args, **kwargs):
                pass

            def journal_release(self, *args, **kwargs):
                pass

            def journal_claim(self, *args, **kwargs):
                return None

        return Nowhere()


def seam_worker(url, store):
    """``RunJournal`` on ``store`` ("" for one that keeps nothing) driven with a real turn's calls (``_capture``),
    SEAM_WARM turns, then SEAM_TURNS turns with ``os.getppid()`` before and after each (their dumps), then an
    empty pair (the marker's own cost)."""
    import uuid

    from agenthub.agent.journal import RunJournal

    calls = _capture(url)
    journal = RunJournal(store or _Nowhere.make(), "seam-" + uuid.uuid4().hex[:8], "print")

    def turn(number):
        for name, args, kwargs in calls:
            getattr(journal, name)(number, *args[1:], **kwargs)

    for number in range(SEAM_WARM):
        turn(number)
    for number in range(SEAM_WARM, SEAM_WARM + SEAM_TURNS):
        os.getppid()
        turn(number)
    os.getppid()
    os.getppid()
    journal.done("done", [])


def seam(tree, url, store):
    """Instructions of the seam a turn (the median of SEAM_TURNS, the marker's cost taken off), the library at
    ``tree``."""
    import shutil

    where = tempfile.mkdtemp(prefix="journal-seam-")
    try:
        # (dump 1: the start-up, the capture and the warm-up turns)
        totals = _callgrind_totals(tree, "seam-worker", url, store, os.path.join(where, "cg.out"),
                                   range(2, SEAM_TURNS + 3))
        marker = totals.pop()
        return statistics.median(totals) - marker
    finally:
        shutil.rmtree(where, True)


def seam_table(folder, before):
    """The seam's instructions a turn on a store that keeps nothing, SQLite and Redis, this tree (and ``before``'s)."""
    import ab
    from store_support import REDIS_SERVER, RedisServer

    trees = [("after", ROOT)] + ([("before", ab.tree_at(before))] if before else [])
    server = Server()
    redis = RedisServer().start() if REDIS_SERVER else None
    try:
        print("instructions (valgrind callgrind) of the journal's seam a turn (RunJournal driven with a real turn's "
              "calls: request, answered, starting, 3 finished; median of {} turns)".format(SEAM_TURNS))
        names = ["a store that keeps nothing", "SQLite"] + (["Redis"] if redis is not None else [])
        columns = ["tools", "side"] + names + ["{}: the store's part".format(name) for name in names[1:]]
        print("| " + " | ".join(columns) + " |")
        print("|" + "---|" * len(columns))
        for idempotent in os.environ.get("JOURNAL_BENCH_IR_CASES", "0,1").split(","):  # (1: every tool idempotent)
            os.environ["JOURNAL_BENCH_IDEMPOTENT"] = idempotent  # (the worker's capture, through its env)
            for side, tree in trees:
                stores = ["", "sqlite:///" + os.path.join(folder, "seam-{}-{}.db".format(side, idempotent))]
                if redis is not None:
                    stores.append(redis.url)
                counts = [seam(tree, server.url, store) for store in stores]
                print("| {} | {} | {} | {} |".format(
                    "3 idempotent calls" if idempotent == "1" else "3 calls, pay at most once", side,
                    " | ".join("{:.1f}K".format(c / 1e3) for c in counts),
                    " | ".join("+{:.1f}K".format((c - counts[0]) / 1e3) for c in counts[1:])), flush=True)
        os.environ.pop("JOURNAL_BENCH_IDEMPOTENT", None)
    finally:
        server.close()
        if redis is not None:
            redis.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument("--only", default="matrix,resume,overhead")
    parser.add_argument("--before", default=None, help="the overhead before (agenthub/ at this git revision) "
                        "and after, in fresh worker processes, alternating")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", metavar="DIR", help="--only instructions: keep a turn's callgrind dump of each "
                        "store and side there (callgrind_annotate it)")
    args = parser.parse_args()
    missed = []
    with tempfile.TemporaryDirectory() as folder:
        if "matrix" in args.only:
            started = time.monotonic()
            rows, kills, where = matrix(args.kills, args.seed, folder)
            print("fault matrix: {} kills (SIGKILL, seed {}) in {:.0f} s".format(kills, args.seed,
                                                                                 time.monotonic() - started))
            print("| wire | runs | kills | starts | billed twice | re-sent in flight | pay entered unasked | paid twice "
                  "| transcript equal | failed |")
            print("|---|---|---|---|---|---|---|---|---|---|")
            for wire in WIRES:
                r = rows.get(wire)
                if r is None:
                    continue
                print("| {} | {runs} | {kills} | {starts} | {billed_twice} | {resent} | {pay_reentered} | {paid_twice} "
                      "| {equal}/{runs} | {failed} |".format(wire, **r))
                if r["billed_twice"] or r["pay_reentered"] or r["paid_twice"] or r["equal"] != r["runs"] or r["failed"]:
                    missed.append("matrix " + wire)
            print("the journal's last entry at each kill: " + ", ".join(
                "{} {}".format(k, v) for k, v in sorted(where.items(), key=lambda kv: -kv[1])))
        if "resume" in args.only:
            times = resume_latency(folder)
            print("resume to the first live request (SQLite, 10 turns, 30 results journaled): min {:.1f} ms, median "
                  "{:.1f} ms, max {:.1f} ms (target < 50 ms)".format(min(times), statistics.median(times), max(times)))
            if statistics.median(times) >= 50:
                missed.append("resume")
        if "instructions" in args.only:
            instructions_table(folder, args.before, args.keep)
        if "seam" in args.only:
            seam_table(folder, args.before)
        if "syscalls" in args.only:
            syscalls_table(folder, args.before)
        if "overhead" in args.only and args.before:
            overhead_ab(folder, args.before, args.rounds, 5)
        elif "overhead" in args.only:
            from agenthub.stores import open_store

            opened = open_store("sqlite:///" + os.path.join(folder, "overhead-object.db"))
            stores = [("SQLite (URL: a store opened per run)", "sqlite:///" + os.path.join(folder, "overhead.db")),
                      ("SQLite (one store object)", opened)]
            redis = None
            from store_support import REDIS_SERVER, RedisServer

            if REDIS_SERVER:
                redis = RedisServer().start()
                stores.append(("Redis (URL)", redis.url))
                stores.append(("Redis (one store object)", open_store(redis.url)))
            try:
                print("| store | turns | CPU without | CPU with journal | ratio | per turn | wall without | wall with |")
                print("|---|---|---|---|---|---|---|---|")
                for deltas, label, idempotent in CASES:
                    for name, (pc, kc, pw, kw, *_) in overhead(folder, deltas, stores,
                                                                 all_idempotent=idempotent).items():
                        print("| {} | {} | {:.1f} ms | {:.1f} ms | {:.3f}x | +{:.2f} ms | {:.1f} ms | {:.1f} ms |".format(
                            name, label, pc * 1000, kc * 1000, kc / pc, (kc - pc) * 1000 / TURNS, pw * 1000, kw * 1000))
                        if kc / pc > 1.05:
                            missed.append("overhead {} {}".format(name, label))
            finally:
                for _, store in stores:
                    if not isinstance(store, str):
                        store.close()
                if redis is not None:
                    redis.close()
    if missed:
        print("missed: " + ", ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        running = serve(sys.argv[2])
        print("http://127.0.0.1:{}".format(running.server_address[1]), flush=True)
        running.serve_forever()
    elif sys.argv[1:2] == ["imports"]:
        from agenthub import AutoLLMClient, tool  # noqa: F401  (what a child imports before its run)
        import agenthub.stores.sqlite  # noqa: F401
    elif sys.argv[1:2] == ["child"]:
        child(*sys.argv[2:7])
    elif sys.argv[1:2] == ["seam-worker"]:
        sys.path.insert(0, os.environ["PYTHONPATH"].split(os.pathsep)[0])  # (the tree measured, before this one)
        seam_worker(*sys.argv[2:4])
    elif sys.argv[1:2] == ["ir-worker"]:
        sys.path.insert(0, os.environ["PYTHONPATH"].split(os.pathsep)[0])  # (the tree measured, before this one)
        ir_worker(*sys.argv[2:4])
    elif sys.argv[1:2] == ["overhead-worker"]:
        sys.path.insert(0, os.environ["PYTHONPATH"].split(os.pathsep)[0])  # (the tree measured, before this one)
        overhead_worker(*sys.argv[2:9])
    else:
        sys.exit(main())
