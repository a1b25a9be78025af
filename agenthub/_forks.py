"""Locks a forked child renews: a thread of the parent may have held one at the fork, and that thread never
runs in the child to release it.  ``renew_lock_after_fork(holder)`` registers an object whose ``_lock`` is
then replaced by a fresh ``threading.Lock`` in every forked child (the holder is held weakly)."""

import os
import threading
import weakref
from typing import Any

__all__ = ["renew_lock_after_fork"]

_HOLDERS = weakref.WeakSet()  # type: weakref.WeakSet[Any]


def renew_lock_after_fork(holder: Any) -> None:
    """Give ``holder._lock`` a fresh lock in each forked child."""
    _HOLDERS.add(holder)


def _renew_locks() -> None:
    for holder in list(_HOLDERS):
        holder._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_locks)
