"""SharedPace: what a RateLimiter with a shared store does instead of its in-process pacing.

The same rules as the in-process limiter, with the state in the store (so every process sharing the
store and key draws from one pace): each request books the next slot (``Store.limiter_reserve``: one
every ``60 / rpm`` seconds, its tokens holding the next one back by ``tokens * 60 / tpm``); a pause (a
429's Retry-After, an exhausted rate-limit header) holds the requests to its endpoint (or, without one,
every request) without holding the queue; a request a pause held past its slot takes a new slot after
it (``Store.limiter_reslot``), so the requests a pause held go spaced, not at once.
"""

import json
from typing import Any, Callable, Optional, Tuple

from .base import Store, StoreError
from .._jsondepth import loads as _json_loads

__all__ = ["SharedPace", "endpoint_name", "MAX_WAIT"]

#: the longest wait a store's row may ask for (about 115 days; a limiter's own interval is at most a day, a pause
#: at most ten minutes): a row asking more is corrupt (or planted), and refused before any sleep is tried with it
#: (past ``threading.TIMEOUT_MAX`` a sleep is an OverflowError; short of it, a call that never goes)
MAX_WAIT = 1e7


def _sane(seconds: float, what: str) -> float:
    if not seconds <= MAX_WAIT:  # (NaN too)
        raise StoreError("the store's limiter row is corrupt (its {} is {:.3g} s away): refusing it; delete the "
                         "row or use another key".format(what, seconds))
    return seconds


def endpoint_name(key: Any) -> str:
    """The store's name of an endpoint key ((client type, (host, port), model, account), parts may be None); "" for
    None."""
    if key is None:
        return ""
    return json.dumps([list(part) if isinstance(part, tuple) else part for part in key], separators=(",", ":"))


def _parts(name: str) -> Optional[Tuple[Any, ...]]:
    try:
        parts = _json_loads(name)
    except ValueError:
        return None
    if not isinstance(parts, list):
        return None
    return tuple(tuple(part) if isinstance(part, list) else part for part in parts)


def _holds(pause: Tuple[Any, ...], key: Any) -> bool:
    """Whether a pause of the endpoint ``pause`` holds a request to ``key`` (an unknown part matches any)."""
    return all(a is None or b is None or a == b for a, b in zip(pause, key))


class SharedPace(object):
    def __init__(self, store: Store, key: str, rpm: Optional[float], tpm: Optional[float]) -> None:
        self.store = store
        self.key = key
        self.rpm = rpm
        self.tpm = tpm

    def paused_for(self, endpoint: Any = None, any_endpoint: bool = False) -> float:
        """Seconds until the pauses holding a request to ``endpoint`` end (``any_endpoint``: the longest of all)."""
        longest = 0.0
        for name, left in self.store.limiter_pauses(self.key).items():
            if name and not any_endpoint:
                parts = _parts(name)
                if endpoint is None or parts is None or not _holds(parts, endpoint):
                    continue
            longest = max(longest, _sane(left, "pause"))
        return longest

    def reserve(self, tokens: int, endpoint: Any) -> Tuple[float, float]:
        """(seconds to this request's slot, seconds to wait: its slot or the pause holding its endpoint)."""
        slot = _sane(self.store.limiter_reserve(self.key, self.rpm, self.tpm, tokens), "next slot")
        return slot, max(slot, self.paused_for(endpoint))

    def wait_turn(self, ticket: Any, wait: float, endpoint: Any, sleep: Callable[[float], bool],
                  clock: Callable[[], float]) -> bool:
        held = wait > ticket.at - clock() + 1e-3  # a pause holds it past its slot
        while True:
            if wait > 0 and not sleep(wait):
                return False
            left = self.paused_for(endpoint)
            if left > 0:  # a pause that came in while this one slept (a 429 in another process) holds it too
                wait, held = left, True
                continue
            if not held or not self.rpm:
                return True
            wait = _sane(self.store.limiter_reslot(self.key, self.rpm), "next slot")  # behind those booked meanwhile
            ticket.at = clock() + wait
            held = False
            if wait <= 0:
                return True

    def settle(self, tokens_more: int) -> None:
        if self.tpm:
            self.store.limiter_adjust(self.key, tokens_more * 60.0 / self.tpm)

    def pause(self, seconds: float, endpoint: Any) -> bool:
        return self.store.limiter_pause(self.key, seconds, endpoint_name(endpoint))
