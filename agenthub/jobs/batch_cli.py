"""``agenthub batch submit|status|fetch|cancel``: a job file on the providers' batch engines.

::

    agenthub batch submit IN.jsonl --backend openai|anthropic|gemini|auto [--state STATE] [--skip-done OUT.jsonl]
    agenthub batch status STATE [--json]
    agenthub batch fetch STATE -o OUT.jsonl [--wait] [--interval SECONDS] [--timeout SECONDS]
    agenthub batch cancel STATE

``submit`` prints the state file's path (default ``IN.jsonl.batch.json``) on stdout and the batches on
stderr; ``status`` prints each remote batch (``--json``: one JSON object on stdout); ``fetch`` appends
the results of the ended batches to OUT (rows OUT has already are left alone: fetch as often as you
like), ``--wait`` polls until every batch ended first (and again for the re-ask rounds of typed rows);
rows an expired or cancelled batch never ran are finished live by ``agenthub batch run IN.jsonl -o OUT.jsonl`` (it skips the rows OUT has).

Exit status: 0 done (submit: submitted; status: every batch ended; fetch: every row has an answer row;
cancel: cancelled or already ended); 3 fetch: some rows have error rows; 4 status / fetch: some batches
have not ended yet (ask again later); 5 fetch: some rows have no result (expired, cancelled, or a batch
that failed): run them live with ``agenthub batch run``; 1 an agenthub error (nothing was submitted when
submit says so; a bad row, an unknown model, a missing key: all listed); 2 bad usage; 130 interrupted.
"""

import argparse
import json
import math
import sys
import time
from typing import Any, Callable, Dict, Tuple

__all__ = ["ACTIONS", "EXIT_FAILED_ROWS", "EXIT_NOT_ENDED", "EXIT_NO_RESULT"]

EXIT_FAILED_ROWS = 3
EXIT_NOT_ENDED = 4
EXIT_NO_RESULT = 5


def _err(text: str) -> None:
    _say(text, sys.stderr)


def _say(text: str, stream: Any = None) -> None:
    """A line for the user; an engine's words in it (a batch's errors, its id, its status) escaped on a terminal."""
    from .._controls import shown_for

    stream = sys.stdout if stream is None else stream
    print(shown_for(stream)(text), file=stream)


def positive(kind: Callable[[str], Any], what: str = "a number") -> Callable[[str], Any]:
    """An argparse ``type=``: ``kind(text)`` (int or float), refused unless > 0 (``batch`` and ``jobs`` options)."""
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError("{!r} is not {}".format(text, what)) from None
        if not value > 0 or not math.isfinite(value):  # (inf: a sleep or a pace no clock takes)
            raise argparse.ArgumentTypeError("must be a finite number > 0 (got {})".format(text))
        return value
    return parse


_seconds = positive(float, "a number of seconds")


def _add_submit(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="IN.jsonl", help="the job file")
    parser.add_argument("--backend", required=True, choices=("openai", "anthropic", "gemini", "auto"),
                        help="the engine: openai (OpenAI and Azure OpenAI rows), anthropic, gemini, or auto (each "
                             "row to its provider's)")
    parser.add_argument("--state", metavar="STATE", help="the state file to write (default IN.jsonl.batch.json)")
    parser.add_argument("--skip-done", metavar="OUT.jsonl", help="leave out the rows that already have a row in OUT")


def _submit(args: argparse.Namespace) -> int:
    from .batch import submit

    job = submit(args.input, backend=args.backend, state_path=args.state, output_path=args.skip_done)
    status = job.status()
    _err(status.summary())
    _err("agenthub batch: submitted; poll with `agenthub batch status {0}`, then `agenthub batch fetch {0} -o "
         "OUT.jsonl`".format(job.state_path))
    print(job.state_path)
    return 0


def _add_state(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("state", metavar="STATE", help="the state file submit wrote")


def _add_status(parser: argparse.ArgumentParser) -> None:
    _add_state(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")


def _status(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from .batch import load

    status = load(args.state).status()
    if args.json:
        from .._controls import json_for
        from ..stream import surrogates_escaped

        print(json_for(sys.stdout)(surrogates_escaped(json.dumps({
            "state": status.state, "rows": status.rows, "done": status.done,
            "batches": [asdict(b) for b in status.batches]}, ensure_ascii=False))))
    else:
        _say(status.summary())
    return 0 if status.done else EXIT_NOT_ENDED


def _add_fetch(parser: argparse.ArgumentParser) -> None:
    _add_state(parser)
    parser.add_argument("-o", "--output", required=True, metavar="OUT.jsonl", help="the output file (appended to)")
    parser.add_argument("--wait", action="store_true", help="poll until every batch ended, then fetch")
    parser.add_argument("--interval", type=_seconds, default=60.0, metavar="SECONDS",
                        help="seconds between polls with --wait (default 60)")
    parser.add_argument("--timeout", type=_seconds, metavar="SECONDS", help="give up waiting after this long")


def _fetch(args: argparse.Namespace) -> int:
    from .batch import load

    job = load(args.state)
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    written = [0, 0]
    rounds = False
    while True:
        ended = False
        if args.wait:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            current = job.wait(args.interval, left, progress=lambda s: _err("agenthub batch: {}".format(
                s.summary().splitlines()[0])))
            ended = current.done
            # (still submitting: wait stopped on re-ask rounds a fetch planned and did not create; this fetch
            # creates them; rows never created are wait's ConfigError; once, so that a round that is not
            # created again ends the loop)
            rounds = not rounds and current.state == "submitting"
        summary = job.fetch(args.output)
        written = [written[0] + summary.done, written[1] + summary.failed]
        if not (args.wait and (ended or rounds) and summary.pending):
            break
        # every batch had ended, and rows are pending again: typed rows in a new re-ask round (--wait waits for it)
    summary.done, summary.failed = written
    _err("agenthub batch fetch: {} answers and {} error rows written to {}, {} already there; {} rows without a "
         "result, {} in batches not ended yet".format(summary.done, summary.failed, args.output, summary.skipped,
                                                      len(summary.missing), len(summary.pending)))
    if summary.unreadable:
        _err("agenthub batch: {} result items could not be read (their rows count as without a result)".format(
            summary.unreadable))
    if summary.unknown or summary.duplicates:
        _err("agenthub batch: {} result(s) named no row of the batch and {} repeated a row already answered: "
             "ignored".format(summary.unknown, summary.duplicates))
    if summary.pending:
        _err("agenthub batch: not every batch has ended: fetch again later (or --wait)")
        return EXIT_NOT_ENDED
    if summary.missing:
        _err("agenthub batch: {} rows never ran (expired or cancelled): finish them live with `agenthub batch run {} "
             "-o {}`".format(len(summary.missing), job.input_path, args.output))
        return EXIT_NO_RESULT
    return EXIT_FAILED_ROWS if summary.failed_total else 0


def _cancel(args: argparse.Namespace) -> int:
    from .batch import load

    status = load(args.state).cancel()
    _say(status.summary())
    return 0


ACTIONS = {
    "submit": ("send a job file to the providers' batch engines (half price, results within 24 h)", _add_submit,
               _submit),
    "status": ("how the batches of a submitted job stand", _add_status, _status),
    "fetch": ("append the results of a submitted job's ended batches to an output file", _add_fetch, _fetch),
    "cancel": ("cancel a submitted job's batches (finished requests keep their results)", _add_state, _cancel),
}  # type: Dict[str, Tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]]
