"""A fixed wall clock for the price tests: the catalog's clock (``cost`` with no ``at``, a Budget's holds) and
the attempt loop's (``Attempt.started_ms``: when a call started, the time its turn is priced at) read the
time given; everything else (deadlines, sleeps: ``time.monotonic``) runs on the real clock."""

import datetime
import time as real_time

import agenthub.attempts
import agenthub.catalog


def utc(hhmm, day=7):
    """Unix seconds of 2026-12-``day`` at ``hhmm`` ("02:41") UTC."""
    hours, minutes = (int(part) for part in hhmm.split(":"))
    return datetime.datetime(2026, 12, day, hours, minutes, tzinfo=datetime.timezone.utc).timestamp()


class _Time(object):
    def __init__(self, seconds):
        self.seconds = seconds

    def time(self):
        return self.seconds

    def __getattr__(self, name):
        return getattr(real_time, name)


def fix_clock(monkeypatch, hhmm, day=7):
    """Every wall-clock read of the catalog and the attempt loop says ``hhmm`` UTC of 2026-12-``day`` (the 7th is
    a Monday, the 12th a Saturday) (-> its Unix seconds)."""
    return fix_time(monkeypatch, utc(hhmm, day))


def fix_time(monkeypatch, seconds):
    """Every wall-clock read of the catalog and the attempt loop says ``seconds`` (Unix time) (-> it)."""
    monkeypatch.setattr(agenthub.catalog, "_clock", lambda: seconds)
    monkeypatch.setattr(agenthub.attempts, "time", _Time(seconds))
    return seconds
