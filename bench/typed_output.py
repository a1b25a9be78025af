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
``jsonschema``'s Draft 2020-12 validator) where jsonschema is installed.  Not part of the test suite.
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
