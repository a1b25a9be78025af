"""Before/after helpers for the issue-41 benches: the library as it was at a git revision (``git archive`` of
``agenthub/`` into a temporary directory, removed at exit), worker processes run with one tree or the other
first on ``sys.path``, and the load average printed beside every ratio."""

import atexit
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tree_at(rev):
    """A directory holding ``agenthub/`` as it was at ``rev`` of this repository (removed at exit)."""
    where = tempfile.mkdtemp(prefix="agenthub-{}-".format(rev.replace("/", "_")))
    atexit.register(shutil.rmtree, where, True)
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "agenthub"], stdout=subprocess.PIPE, check=True)
    subprocess.run(["tar", "-x", "-C", where], input=archive.stdout, check=True)
    return where


def run_worker(tree, script, args, timeout=600):
    """``python script args`` with ``tree`` first on the path; its stdout (one JSON document) parsed."""
    import json

    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run([sys.executable, script] + list(args), env=env, stdout=subprocess.PIPE, check=True,
                         timeout=timeout)
    return json.loads(out.stdout.decode().strip().splitlines()[-1])


def load():
    return os.getloadavg()[0]


def loads_text(samples):
    return "load {:.1f}-{:.1f} (median {:.1f})".format(min(samples), max(samples), statistics.median(samples))
