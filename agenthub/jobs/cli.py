"""``agenthub batch ...``: bulk jobs from the command line.

::

    agenthub batch run IN.jsonl -o OUT.jsonl [--workers N] [--rpm N] [--tpm N] [--engine live|ray]
                       [--retry-failed] [--skip-invalid] [--max-retries N] [--no-progress]

Exit status of ``batch run``: 0 every row has an answer in OUT; 3 the job ran to its end but some rows
have error rows, written now or before (rerun with --retry-failed to send them again); 1 the job did not
start (a bad line, an unknown model, a missing key: all listed on stderr, nothing sent) or another agenthub error;
2 bad usage; 130 interrupted (Ctrl-C: OUT is resumable, run the same command again).

Other ``batch`` actions register in ``ACTIONS`` (name -> (add arguments, run)).
"""

import argparse
import sys
from typing import Any, Callable, Dict, Tuple

from .batch_cli import positive as _positive  # the positive-number option type (written once)

__all__ = ["add_parser", "main", "ACTIONS", "EXIT_FAILED_ROWS"]

#: ``batch run`` finished, but some rows have error rows
EXIT_FAILED_ROWS = 3


def _add_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="IN.jsonl", help="the job file (one JSON object a line)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.jsonl",
                        help="the output file: rows are appended; rows already in it are skipped (resume)")
    parser.add_argument("--workers", type=_positive(int), default=8, metavar="N", help="rows in flight (default 8)")
    parser.add_argument("--rpm", type=_positive(float), metavar="N", help="requests per minute, spread evenly")
    parser.add_argument("--tpm", type=_positive(float), metavar="N", help="tokens per minute (estimated, then corrected)")
    parser.add_argument("--engine", choices=("live", "ray"), default="live",
                        help="live: a thread pool here (default); ray: a Ray Data pipeline (pip install '.[ray]' from agenthub's checkout)")
    parser.add_argument("--retry-failed", action="store_true", help="send the rows with error rows again")
    parser.add_argument("--skip-invalid", action="store_true",
                        help="write an error row for each invalid line instead of refusing the job")
    parser.add_argument("--max-retries", type=int, default=2, metavar="N", help="retries per row (default 2)")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")


def _run(args: argparse.Namespace) -> int:
    from .._controls import dollars
    from .runner import run

    summary = run(args.input, args.output, workers=args.workers, rpm=args.rpm, tpm=args.tpm,
                  retry_failed=args.retry_failed, skip_invalid=args.skip_invalid, max_retries=args.max_retries,
                  engine=None if args.engine == "live" else args.engine,
                  progress=False if args.no_progress else None)
    print("agenthub batch run: {} done, {} failed, {} skipped of {} rows; {:,} tokens, ${}{}; {:.1f} s{}{}".format(
        summary.done, summary.failed, summary.skipped, summary.total, summary.tokens, dollars(summary.cost_usd),
        " ({} rows unpriced)".format(summary.unpriced) if summary.unpriced else "", summary.wall_s,
        "; {} rows have error rows in all (--retry-failed sends them again)".format(summary.failed_total)
        if summary.failed_total > summary.failed else "",
        "; interrupted: {} rows left, run the same command again".format(summary.left) if summary.interrupted else ""),
        file=sys.stderr)
    if summary.interrupted:
        return 130
    return EXIT_FAILED_ROWS if summary.failed_total else 0  # (error rows written before count: skipped, not answered)


ACTIONS = {
    "run": ("run a job file live (or on Ray) within rate limits; resumable", _add_run, _run),
}  # type: Dict[str, Tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]]

from .batch_cli import ACTIONS as _ENGINE_ACTIONS  # noqa: E402  submit, status, fetch, cancel (the batch engines)

ACTIONS.update(_ENGINE_ACTIONS)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add ``batch`` and its actions to the ``agenthub`` subparsers."""
    batch = sub.add_parser("batch", help="bulk jobs: run a JSON Lines job file (resumable, rate limited)",
                           description="Bulk jobs: a JSON Lines job file, one row per request, answered "
                                       "into an output file that a rerun resumes.")
    actions = batch.add_subparsers(dest="batch_command", metavar="ACTION")
    for name, (text, add, _) in ACTIONS.items():
        add(actions.add_parser(name, help=text, description=text))
    return batch


def main(args: argparse.Namespace, parser: Any = None) -> int:
    action = ACTIONS.get(getattr(args, "batch_command", None) or "")
    if action is None:
        if parser is not None:
            parser.parse_args(["batch", "--help"])
        return 2
    return action[2](args)
