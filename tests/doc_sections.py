"""Where the documentation's sections are: README.md (the front page) and the pages under docs/ (the guide).

Tests that run a section's examples find it by its heading, wherever it lives, so moving a section between
pages moves no test: ``section("Bulk jobs")`` is the text from that heading to the next heading of the same
or a higher level (fenced code is not read as headings).
"""

import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def doc_files():
    """README.md, then every Markdown page under docs/ (subfolders too), as paths relative to the root."""
    pages = glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)
    return ["README.md"] + sorted(os.path.relpath(p, ROOT).replace(os.sep, "/") for p in pages)


def read(doc):
    with open(os.path.join(ROOT, doc), encoding="utf-8") as handle:
        return handle.read()


def headings(text):
    """[(level, title, offset of the heading line)] outside fenced code."""
    found, fence, offset = [], None, 0
    for line in text.splitlines(True):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            mark = stripped[:3]
            fence = None if fence == mark else (fence or mark)
        elif fence is None:
            match = re.match(r"^(#{1,6}) (.+?)\s*$", line)
            if match:
                found.append((len(match.group(1)), match.group(2), offset))
        offset += len(line)
    return found


def find(heading, doc=None):
    """(doc, text) of the one section titled ``heading`` (in ``doc`` when given, else in any doc file)."""
    hits = []
    for name in [doc] if doc else doc_files():
        text = read(name)
        marks = headings(text)
        for number, (level, title, start) in enumerate(marks):
            if title == heading:
                end = next((o for lv, _, o in marks[number + 1:] if lv <= level), len(text))
                hits.append((name, text[start:end]))
    assert len(hits) == 1, "heading {!r}: found in {} (want exactly one)".format(heading, [h[0] for h in hits])
    return hits[0]


def section(heading, doc=None):
    """The text of the one section titled ``heading``."""
    return find(heading, doc)[1]
