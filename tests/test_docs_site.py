"""The documentation builds as a site and its links hold (issue 29 B2).

README.md is the front page (under 300 lines, the two set-up commands first); the guide is docs/, built by
mkdocs (mkdocs.yml at the root) with the API reference generated from the docstrings and type hints by
mkdocstrings.  ``mkdocs build --strict`` fails on a broken link or anchor between pages, a page left out of
the navigation, or a reference to a name the code no longer has; it runs here when the docs extra is installed
(``pip install '.[docs]'``: CI installs it on Python 3.13).  The relative links of README.md, which mkdocs does
not read, are checked without it.
"""

import importlib.util
import os
import re
import subprocess
import sys

import pytest

from doc_sections import ROOT, doc_files, headings, read

#: the front page's first lines, byte for byte: the demo and the whole test suite
SETUP = ["```bash",
         "pip install . && python -m agenthub demo          # a tool-calling turn per protocol, replayed: no key, no network",
         "pip install '.[test]' && python -m pytest -q      # the whole test suite",
         "```"]


def _have(module):
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _slugs(text):
    """The anchors a page's headings get: GitHub's (punctuation dropped, each space a dash) and mkdocs'
    (runs of spaces and dashes one dash)."""
    found = set()
    for _, title, _ in headings(text):
        plain = re.sub(r"[^\w\s-]", "", title).strip().lower()
        found.add(plain.replace(" ", "-"))
        found.add(re.sub(r"[-\s]+", "-", plain))
    return found


def _links(text):
    """(line, target) of every Markdown link outside fenced and inline code."""
    out, fence = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        line = re.sub(r"`[^`]*`", "", line)
        out += [(number, target) for target in re.findall(r"\]\(([^)\s]+)\)", line)]
    return out


def test_the_readme_is_a_front_page():
    text = read("README.md")
    lines = text.splitlines()
    assert lines[0] == "# agenthub" and lines[2:6] == SETUP
    assert len(lines) < 300
    # one example per main capability, each runs (tests/test_docs_blocks.py, the MCP one tests/test_mcp_readme.py)
    titles = [title for level, title, _ in headings(text) if level == 2]
    assert titles == ["One call", "Streaming", "Tools and the runner", "MCP", "Failover", "Jobs", "Serve", "The docs"]
    for page in doc_files()[1:]:
        assert "(" + page + ")" in text or "(" + page + "#" in text, "the README's map leaves out " + page


def test_every_relative_link_resolves():
    broken = []
    for doc in doc_files():
        text = read(doc)
        for number, target in _links(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            where = os.path.normpath(os.path.join(ROOT, os.path.dirname(doc), path)) if path else os.path.join(ROOT, doc)
            if not os.path.exists(where):
                broken.append("{}:{}: {} (no such file)".format(doc, number, target))
            elif anchor and where.endswith(".md") and anchor not in _slugs(read(os.path.relpath(where, ROOT))):
                broken.append("{}:{}: {} (no such heading)".format(doc, number, target))
            elif doc.startswith("docs/") and not where.startswith(os.path.join(ROOT, "docs") + os.sep):
                broken.append("{}:{}: {} (outside docs/: the site has no such page)".format(doc, number, target))
    assert broken == []


def test_every_page_is_in_the_navigation_and_the_reference_is_generated():
    config = read("mkdocs.yml")
    for page in doc_files()[1:]:
        assert " " + page[len("docs/"):] + "\n" in config, page + " is not in mkdocs.yml's nav"
    api = read("docs/api.md")
    modules = re.findall(r"^::: (\S+)$", api, re.M)
    assert {"agenthub", "agenthub.attempts", "agenthub.agent", "agenthub.mcp", "agenthub.telemetry",
            "agenthub.jobs"} <= set(modules)


@pytest.mark.skipif(not (_have("mkdocs") and _have("mkdocstrings_handlers.python")),
                    reason="mkdocs and mkdocstrings[python] are not installed (pip install '.[docs]')")
def test_the_site_builds_strict(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           os.path.join(ROOT, "mkdocs.yml"), "--site-dir", str(site)], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    output = done.stdout.decode("utf-8", "replace")
    assert done.returncode == 0, output
    assert "WARNING" not in output, output
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    # the reference is read from the code: names, their docstrings and their signatures
    for anchor in ("agenthub.AutoLLMClient", "agenthub.AutoLLMClient.streaming_response", "agenthub.attempts.AttemptHook",
                   "agenthub.attempts.AttemptHook.on_call_start", "agenthub.mcp.connect", "agenthub.jobs.run",
                   "agenthub.telemetry.instrument", "agenthub.telemetry.is_instrumented", "agenthub.telemetry.tool_span",
                   "agenthub.telemetry.OpenTelemetryInstrumentor"):
        assert 'id="{}"'.format(anchor) in api, anchor
    # offline: the pages load nothing from elsewhere
    for page in site.rglob("*.html"):
        assert not re.search(r'<(script|link)[^>]+(src|href)="https?://', page.read_text(encoding="utf-8")), page
