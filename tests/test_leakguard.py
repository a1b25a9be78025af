"""tests/leakguard.py (the suite's guard against threads, child processes and fds left behind), run on a small
test file of its own in a real pytest process."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = '''
import subprocess
import threading
import time

import pytest

kept = []


@pytest.fixture(scope="module", autouse=True)
def cleanup():
    yield
    for item in kept:
        if isinstance(item, subprocess.Popen):
            item.kill()
            item.wait()
        elif isinstance(item, threading.Event):
            item.set()


@pytest.fixture(scope="module")
def module_server():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="module-server")
    thread.start()
    yield thread
    stop.set()
    thread.join()


def test_a_thread_left():
    stop = threading.Event()
    kept.append(stop)
    threading.Thread(target=stop.wait, name="leaky", daemon=True).start()


def test_a_child_left():
    kept.append(subprocess.Popen(["sleep", "30"]))


def test_a_child_never_waited():
    child = subprocess.Popen(["true"])
    kept.append(child)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and open("/proc/{}/stat".format(child.pid)).read().split(") ")[1][0] != "Z":
        time.sleep(0.01)


def test_a_module_fixtures_thread_is_not_the_tests(module_server):
    assert module_server.is_alive()


def test_a_thread_that_ends_a_moment_later_is_waited_for():
    threading.Thread(target=time.sleep, args=(0.3,), name="short").start()


def test_a_clean_test():
    subprocess.Popen(["true"]).wait()


def test_a_file_left():
    kept.append(open(__file__))


def test_a_file_only_a_cycle_holds_is_garbage_not_a_leak():
    import gc
    cycle = {"file": open(__file__)}
    cycle["self"] = cycle
    gc.collect()  # (survived: in the oldest generation, which only a full collection reaches)
    del cycle


@pytest.mark.fds_kept("a runtime's, by design")
def test_a_file_kept_by_a_marked_test():
    kept.append(open(__file__))
'''


def _without_leak_settings(environ):
    """The environment without the guard's own settings: the suite may run with them set (say
    ``AGENTHUB_LEAKS_FDS=report``), and each case here sets the ones it is about."""
    return {key: value for key, value in environ.items() if not key.startswith("AGENTHUB_LEAKS")}


def _run(tmp_path, **env):
    (tmp_path / "conftest.py").write_text("import sys\nsys.path.insert(0, {!r})\nfrom leakguard import pytest_configure"
                                          "  # noqa: F401\n".format(HERE))
    (tmp_path / "test_cases.py").write_text(CASES)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_cases.py"],
                         cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
                         env=dict(_without_leak_settings(os.environ), AGENTHUB_LEAKS_WAIT="1", **env))
    return run.returncode, run.stdout.decode("utf-8", "replace")


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="the child process checks read /proc")
def test_strict_errors_the_tests_that_left_something_naming_it(tmp_path):
    code, out = _run(tmp_path, AGENTHUB_LEAKS="strict")
    assert code == 1, out
    assert "9 passed, 4 errors" in out
    errors = sorted(line for line in out.splitlines() if line.startswith("ERROR "))
    assert [line.split(" - ")[0] for line in errors] == [
        "ERROR test_cases.py::test_a_child_left", "ERROR test_cases.py::test_a_child_never_waited",
        "ERROR test_cases.py::test_a_file_left", "ERROR test_cases.py::test_a_thread_left"]
    left = out.split("ERROR at teardown of test_a_file_left")[1].splitlines()
    assert left[1:3] == ["leakguard: left behind after teardown:", left[2]] and left[2].startswith("  fd ")
    assert left[2].endswith("/test_cases.py"), left[2]
    assert "leakguard: left behind after teardown:\n  thread 'leaky' (daemon) running threading.Event.wait" in out
    assert "  child process " in out and " sleep 30\n" in out
    assert "(exited, never waited)" in out
    assert "module-server" not in out and "'short'" not in out


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="the child process checks read /proc")
def test_report_lists_them_at_the_end_and_fails_nothing(tmp_path):
    code, out = _run(tmp_path, AGENTHUB_LEAKS="report", AGENTHUB_LEAKS_FDS="report")
    assert code == 0, out
    assert "9 passed in" in out
    summary = out.split("leakguard: 5 tests left something behind")[1]
    assert [line for line in summary.splitlines() if line.startswith("test_cases.py::")] == [
        "test_cases.py::test_a_thread_left", "test_cases.py::test_a_child_left",
        "test_cases.py::test_a_child_never_waited", "test_cases.py::test_a_file_left",
        "test_cases.py::test_a_file_kept_by_a_marked_test"]


def test_off_checks_nothing(tmp_path):
    code, out = _run(tmp_path, AGENTHUB_LEAKS="off", AGENTHUB_LEAKS_FDS="off")
    assert code == 0 and "9 passed in" in out and "leakguard" not in out, out
