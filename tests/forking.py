"""Fork while another thread holds an object's lock, and see whether the child gets through (the child is
reaped within a deadline, killed past it)."""

import threading


def forked_child_uses(thing, use):
    """Fork while another thread holds ``thing``'s lock; -> the child's exit status (0: it got through)."""
    import os
    import time

    held, release = threading.Event(), threading.Event()

    def hold():
        with thing._lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    pid = os.fork()
    if pid == 0:  # the child: the holder thread does not exist here
        try:
            use()
            os._exit(0)
        except BaseException:
            os._exit(2)
    release.set()
    holder.join(10)
    deadline = time.monotonic() + 10
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return "deadlocked"
        time.sleep(0.02)
