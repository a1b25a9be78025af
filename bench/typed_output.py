"""Typed output's checker (``agenthub.typeschema``) beside pydantic's TypeAdapter on the same type and data.

    python bench/typed_output.py                 # 1,000 objects, 7 rounds, a table on stdout
    python bench/typed_output.py --objects 200   # a smoke run

The type: a dataclass of 50 fields (str, int, float, bool, Optional, Enum, Literal, List[int], Dict[str, float],
a nested dataclass, a list of 3 nested dataclasses, Tuple).  The data: 1,000 distinct JSON objects of that
shape (``json.loads`` output, built once, not timed).  Each side converts every object into the dataclass
(``Compiled.convert`` / ``TypeAdapter.validate_python``), checks the first result is the same value, then the
CPU per object (``time.process_time``, min of the rounds) is printed with the ratio.  pydantic's validator is
compiled Rust (pydantic-core); agenthub's is pure Python: the ratio says what the pure core costs, not a
target.  A second table does the same for a plain JSON Schema (agenthub's subset checker beside
``jsonschema``'s Draft 2020-12 validator) where jsonschema is installed.  A third measures the streamed
value's reader (``agenthub.output.partial``) on a 1 MB and a 2 MB answer in 20,000 deltas (linear: double the
answer, double the time) beside re-reading the buffer at every delta.  Not part of the test suite.
"""

import argparse
import enum
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field, make_dataclass
from typing import Any, Dict, List, Literal, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from agenthub import typeschema  # noqa: E402


class Kind(enum.Enum):
    A = "a"
    B = "b"
    C = "c"


@dataclass
class Part:
    sku: str
    price: float
    qty: int = 1
    tags: List[str] = field(default_factory=list)


#: (field name prefix, type, a value maker)
KINDS = [
    ("s", str, lambda r: "text-{}".format(r.randint(0, 999))),
    ("i", int, lambda r: r.randint(-1000, 1000)),
    ("f", float, lambda r: r.random() * 100),
    ("b", bool, lambda r: r.random() < 0.5),
    ("o", Optional[int], lambda r: None if r.random() < 0.3 else r.randint(0, 9)),
    ("e", Kind, lambda r: r.choice(["a", "b", "c"])),
    ("l", Literal["x", "y"], lambda r: r.choice(["x", "y"])),
    ("li", List[int], lambda r: [r.randint(0, 9) for _ in range(5)]),
    ("d", Dict[str, float], lambda r: {"k{}".format(n): r.random() for n in range(3)}),
    ("p", Part, lambda r: {"sku": "p{}".format(r.randint(0, 99)), "price": r.random(), "qty": r.randint(1, 5),
                           "tags": ["t1", "t2"]}),
    ("lp", List[Part], lambda r: [{"sku": "q", "price": 1.5, "qty": 2, "tags": []} for _ in range(3)]),
    ("t", Tuple[int, str], lambda r: [r.randint(0, 9), "z"]),
]
FIELDS = 50


def build_type() -> Any:
    spec = []
    for n in range(FIELDS):
        prefix, tp, _ = KINDS[n % len(KINDS)]
        spec.append(("{}{}".format(prefix, n), tp))
    return make_dataclass("Wide", spec)


def build_data(count: int, seed: int = 7) -> List[Dict[str, Any]]:
    r = random.Random(seed)
    rows = []
    for _ in range(count):
        row = {}
        for n in range(FIELDS):
            prefix, _, make = KINDS[n % len(KINDS)]
            row["{}{}".format(prefix, n)] = make(r)
        rows.append(json.loads(json.dumps(row)))
    return rows


def cpu_per_object(fn: Any, rows: List[Any], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for row in rows:
            fn(row)
        best = min(best, time.process_time() - start)
    return best / len(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--deltas", type=int, default=20000)
    args = parser.parse_args()
    wide = build_type()
    rows = build_data(args.objects)
    compiled = typeschema.compile(wide)
    print("typed output: a {}-field dataclass (nested), {} objects, min of {} rounds, CPU per object".format(
        FIELDS, len(rows), args.rounds))
    print("{:<44} {:>12} {:>8}".format("checker", "us/object", "ratio"))
    ours = cpu_per_object(compiled.convert, rows, args.rounds)
    try:
        import pydantic
    except ImportError:
        print("{:<44} {:>12.1f} {:>8}".format("agenthub.typeschema Compiled.convert", ours * 1e6, "-"))
        print("(pydantic is not installed: no ratio)")
        return 0
    adapter = pydantic.TypeAdapter(wide)
    assert adapter.validate_python(rows[0]) == compiled.convert(rows[0]), "the two checkers disagree"
    theirs = cpu_per_object(adapter.validate_python, rows, args.rounds)
    print("{:<44} {:>12.1f} {:>8.2f}".format("pydantic {} TypeAdapter.validate_python".format(pydantic.VERSION),
                                             theirs * 1e6, 1.0))
    print("{:<44} {:>12.1f} {:>8.2f}".format("agenthub.typeschema Compiled.convert", ours * 1e6, ours / theirs))
    try:
        import jsonschema
    except ImportError:
        return 0
    schema = compiled.inline()
    plain = typeschema.compile(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid(rows[0]) and plain.convert(rows[0]) is rows[0]
    print()
    print("the same objects against the type's JSON Schema (inline), validity only")
    print("{:<44} {:>12} {:>8}".format("checker", "us/object", "ratio"))
    theirs = cpu_per_object(validator.is_valid, rows, args.rounds)
    ours = cpu_per_object(plain.convert, rows, args.rounds)
    print("{:<44} {:>12.1f} {:>8.2f}".format("jsonschema Draft202012Validator.is_valid", theirs * 1e6, 1.0))
    print("{:<44} {:>12.1f} {:>8.2f}".format("agenthub.typeschema (a schema dict)", ours * 1e6, ours / theirs))
    streaming(args.deltas)
    return 0


def _answer(chars: int) -> str:
    """A JSON answer of about ``chars`` characters: a list of small invoice lines (strings with escapes too)."""
    items = []
    size = 0
    n = 0
    while size < chars:
        row = {"id": n, "name": "item \"{}\" \u00e9".format(n), "price": n * 1.25, "tags": ["a", "b"], "ok": n % 2 == 0}
        items.append(row)
        size += len(json.dumps(row)) + 2
        n += 1
    return json.dumps({"items": items})


def _pieces(text: str, deltas: int) -> List[str]:
    step = max(1, len(text) // deltas)
    return [text[i:i + step] for i in range(0, len(text), step)]


def streaming(deltas: int) -> None:
    """The streamed value's reader (agenthub.output.partial) on a 1 MB and a 2 MB answer in ``deltas`` deltas,
    beside re-parsing the buffer at every delta (what peers do; measured on a sample of deltas and scaled:
    doing it whole takes minutes)."""
    from agenthub.output.partial import PartialJSON

    print()
    print("streamed typed output: the JSON so far after every delta ({} deltas), CPU".format(deltas))
    print("{:<10} {:>14} {:>16} {:>10}".format("answer", "partial (s)", "re-parse (s)*", "ratio"))
    for size in (1_000_000, 2_000_000):
        text = _answer(size)
        pieces = _pieces(text, deltas)
        best = None
        for _ in range(3):
            start = time.process_time()
            reader = PartialJSON()
            for piece in pieces:
                reader.feed(piece)
            spent = time.process_time() - start
            best = spent if best is None else min(best, spent)
        assert reader.done and reader.value == json.loads(text)
        # re-parse per delta: a tolerant parse of the buffer so far (the closing brackets added), sampled
        sample = max(1, len(pieces) // 200)
        start = time.process_time()
        buffer = ""
        timed = 0
        for n, piece in enumerate(pieces):
            buffer += piece
            if n % sample == 0:
                PartialJSON().feed(buffer)  # the same reader from scratch: what a re-parse per delta costs at least
                timed += 1
        reparse = (time.process_time() - start) * len(pieces) / timed
        print("{:<10} {:>14.3f} {:>16.1f} {:>10.4f}".format("{:.1f} MB".format(len(text) / 1e6), best, reparse,
                                                           best / reparse))
    print("* re-parse: the buffer read again from its start at every delta (sampled every {}th delta, scaled)".format(
        sample))


if __name__ == "__main__":
    sys.exit(main())
