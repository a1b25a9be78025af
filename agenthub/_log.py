"""AGENTHUB_LOG: the stderr handler of the "agenthub" logger, attached when the environment asks for it."""

import logging
import os
import sys

__all__ = ["LOG_ENV", "log_from_env"]

logger = logging.getLogger("agenthub")

#: AGENTHUB_LOG=debug|info: a stderr handler on the "agenthub" logger (as OPENAI_LOG does for its SDK)
LOG_ENV = "AGENTHUB_LOG"


def log_from_env() -> None:
    """Attach one stderr handler to the "agenthub" logger when $AGENTHUB_LOG asks for it (once per process).

    DEBUG: one record per HTTP attempt (method, URL without credentials, status, request id, attempt,
    elapsed ms) and one per finished stream (events, finish reason, usage); INFO: retries.  No record
    holds a key, a header or a body.
    """
    value = (os.environ.get(LOG_ENV) or "").strip().lower()
    level = {"debug": logging.DEBUG, "info": logging.INFO}.get(value)
    if level is None and value and not getattr(logger, "_agenthub_env_warned", False):
        logger._agenthub_env_warned = True  # type: ignore[attr-defined]  # once per process, reloads included
        sys.stderr.write("agenthub: {}={!r} is not a level agenthub knows (debug, info): no log handler was "
                         "added\n".format(LOG_ENV, os.environ.get(LOG_ENV)))
    if level is None or any(getattr(handler, "_agenthub_env", False) for handler in logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s agenthub %(levelname)s %(message)s"))
    handler._agenthub_env = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level)
