"""scripts/wire_drift.py: the official SDKs (openai, anthropic, google-genai, botocore) against what the dialects map.

On the SDK versions pinned in setup.cfg's test extra (the script's PINNED) the report is clean: every name an SDK
knows is mapped or ignored with a why, and nothing the tables list has gone.  Each mapped name is checked against
the dialect's source (a table cannot claim what the code does not do); that check needs no SDK.  A name an SDK
adds or drops is reported and the script exits 1."""

import configparser
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "wire_drift.py")


def _load():
    spec = importlib.util.spec_from_file_location("wire_drift", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


drift = _load()

SDK_MODULES = {"openai": "openai", "anthropic": "anthropic", "google-genai": "google.genai", "botocore": "botocore"}


def pinned_sdks():
    """Skip unless every SDK is installed at the version the tables were written against (CI installs exactly
    those from the test extra: a newer SDK is the script's business, not this test's)."""
    for dist, module in SDK_MODULES.items():
        pytest.importorskip(module)
        if drift.sdk_version(dist) != drift.PINNED[dist]:
            pytest.skip("{} {} is installed, the tables hold {}".format(dist, drift.sdk_version(dist), drift.PINNED[dist]))


def test_the_pins_are_the_test_extras():
    """setup.cfg's test extra installs exactly PINNED where the SDK installs (Python 3.10+, google-genai 3.11+;
    botocore keeps a floor for older ones)."""
    parser = configparser.ConfigParser()
    parser.read(os.path.join(ROOT, "setup.cfg"))
    lines = [line.strip() for line in parser["options.extras_require"]["test"].splitlines() if line.strip()]
    for dist, version in drift.PINNED.items():
        assert '{}=={}; python_version >= "{}"'.format(dist, version, drift.PINNED_PYTHON[dist]) in lines, dist
        others = [line for line in lines if re.match(re.escape(dist) + r"\s*(?:[<>=!~;\[]|$)", line)
                  and not line.startswith(dist + "==") and "python_version < " not in line]
        assert others == [], dist  # no second, unpinned requirement of the same SDK
    assert 'botocore>=1.31; python_version < "3.10"' in lines


@pytest.mark.parametrize("wire", sorted(drift.TABLES))
def test_every_mapped_name_is_in_the_dialects_source(wire):
    assert drift.unbacked(wire) == []


@pytest.mark.parametrize("wire", sorted(drift.TABLES))
def test_a_name_is_mapped_or_ignored_never_both_and_every_ignore_says_why(wire):
    for category in drift.CATEGORIES:
        mapped = drift.mapped(wire, category)
        ignored = drift.ignored(wire, category)
        assert not set(mapped) & set(ignored), (wire, category)
        for why in drift.TABLES[wire].get(category, {}).get("ignored", {}):
            assert len(why) > 10, (wire, category, why)


def test_a_table_claiming_what_the_code_does_not_do_is_caught(monkeypatch):
    table = dict(drift.TABLES["anthropic"])
    table["finish"] = dict(table["finish"], mapped=table["finish"]["mapped"] + " pause_turn")
    monkeypatch.setitem(drift.TABLES, "anthropic", table)
    assert drift.unbacked("anthropic") == [("finish", "pause_turn", "pause_turn")]


def test_the_pinned_sdks_report_nothing_unknown():
    pinned_sdks()
    report = drift.compare(drift.WIRES)
    assert report["missing"] == []
    assert {wire: {c: (rows[c]["unknown"], rows[c]["gone"]) for c in drift.CATEGORIES
                   if rows[c]["unknown"] or rows[c]["gone"]}
            for wire, rows in report["wires"].items()} == {wire: {} for wire in drift.WIRES}
    assert {wire: (rows["unbacked"], rows["deprecated"]) for wire, rows in report["wires"].items()} == {
        wire: ([], []) for wire in drift.WIRES}
    assert (report["unknown"], report["gone"]) == (0, 0)
    # every wire and the categories its SDK types: something was compared
    counts = {wire: {c: rows[c]["sdk"] for c in drift.CATEGORIES} for wire, rows in report["wires"].items()}
    assert all(counts[wire]["request"] and counts[wire]["usage"] and counts[wire]["finish"] for wire in counts)
    assert (counts["anthropic"]["version"], counts["gemini-interactions"]["version"]) == (1, 2)


def test_the_script_exits_0_on_the_pinned_sdks_in_a_real_process():
    pinned_sdks()
    result = subprocess.run([sys.executable, SCRIPT, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    report = json.loads(result.stdout.decode("utf-8"))
    assert (report["unknown"], report["gone"], report["sdks"]) == (0, 0, drift.PINNED)
    text = subprocess.run([sys.executable, SCRIPT, "--wire", "bedrock"], stdout=subprocess.PIPE, timeout=300,
                          cwd=ROOT).stdout.decode("utf-8")
    assert text.splitlines()[-1] == "0 unknown, 0 gone: nothing moved"
    assert "\nbedrock\n  request   18 known:  12 mapped,   6 ignored, 0 unknown, 0 gone\n" in text


def test_what_the_sdk_adds_or_drops_is_reported_and_exits_1(monkeypatch, capsys):
    pinned_sdks()
    dist, collect = drift.WIRES["anthropic"]

    def moved():
        known = collect()
        known["finish"] = (known["finish"] - {"pause_turn"}) | {"compaction_paused"}
        known["usage"] = known["usage"] | {"cache_creation_ttl_tokens"}
        return known

    monkeypatch.setitem(drift.WIRES, "anthropic", (dist, moved))
    assert drift.main(["--wire", "anthropic"]) == 1
    out = capsys.readouterr().out
    assert "    + compaction_paused   (new: map it or list it as ignored, with why)" in out
    assert "    + cache_creation_ttl_tokens   (new: map it or list it as ignored, with why)" in out
    assert "    - pause_turn   (the SDK no longer knows it)" in out
    assert out.splitlines()[-1] == "2 unknown, 1 gone: the wire moved"
    assert drift.main(["--wire", "anthropic", "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)["wires"]["anthropic"]
    assert (rows["finish"]["unknown"], rows["finish"]["gone"]) == (["compaction_paused"], ["pause_turn"])


def test_a_version_header_the_sdk_moves_to_is_reported(monkeypatch, capsys):
    pinned_sdks()
    dist, collect = drift.WIRES["gemini-interactions"]

    def moved():
        known = collect()
        known["version"] = {"path: v2", "Api-Revision: 2027-01-01"}
        return known

    monkeypatch.setitem(drift.WIRES, "gemini-interactions", (dist, moved))
    assert drift.main(["--wire", "gemini-interactions"]) == 1
    out = capsys.readouterr().out
    for line in ("    + Api-Revision: 2027-01-01", "    + path: v2", "    - Api-Revision: 2026-05-20", "    - path: v1"):
        assert line in out


def test_a_missing_sdk_is_not_a_clean_report(monkeypatch, capsys):
    def absent():
        raise ImportError("No module named 'botocore'")

    monkeypatch.setitem(drift.WIRES, "bedrock", ("botocore", absent))
    assert drift.main(["--wire", "bedrock"]) == 2
    assert "not compared: bedrock (botocore: No module named 'botocore')" in capsys.readouterr().out


def test_the_api_versions_agenthub_sends_are_the_sdks():
    """The version headers and paths, read from the SDKs themselves (no table in between)."""
    pinned_sdks()
    import anthropic
    from google.genai import _api_client
    from google.genai._gaos import google_genai
    from agenthub.providers import anthropic as anthropic_dialect, gemini_interactions

    sdk = anthropic.Anthropic(api_key="drift", base_url="http://127.0.0.1:9")
    try:
        assert sdk.default_headers["anthropic-version"] == anthropic_dialect.ANTHROPIC_VERSION
    finally:
        sdk.close()
    assert gemini_interactions.API_REVISION == google_genai.GOOGLE_GENAI_API_REVISION
    assert gemini_interactions.API_VERSION == _api_client.GOOGLE_AI_API_DEFAULT_VERSION


def test_another_checkouts_dialects_are_checked_with_source_root(tmp_path):
    """The Interactions dialect as it was before GA (POST /v1beta/interactions) does not speak the SDK's v1."""
    for wire in drift.TABLES:
        paths = set(drift.TABLES[wire]["sources"])
        for category in drift.CATEGORIES:
            paths |= set(drift.TABLES[wire].get(category, {}).get("sources", ()))
        for path in paths:
            with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
                text = handle.read()
            if path.endswith("gemini_interactions.py"):
                text = text.replace('API_VERSION = "v1"', 'API_VERSION = "v1beta"')
            target = tmp_path / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    assert drift.unbacked("gemini-interactions", str(tmp_path)) == [("version", "path: v1", "v1")]
    assert all(drift.unbacked(wire, str(tmp_path)) == [] for wire in drift.TABLES if wire != "gemini-interactions")


def test_a_field_sent_that_the_sdk_deprecates_is_reported(monkeypatch, capsys):
    """google-genai marks Interactions fields deprecated (pydantic Field(deprecated=...)): one the dialect sends is
    reported unless the table says why it stays; an accepted one the SDK no longer deprecates is gone."""
    pinned_sdks()
    dist, collect = drift.WIRES["gemini-interactions"]
    known = collect()
    assert {"response_mime_type", "generation_config.temperature", "generation_config.top_p"} <= known["deprecated"]

    def moved():
        out = collect()
        out["deprecated"] = (out["deprecated"] - {"generation_config.top_p"}) | {"generation_config.seed"}
        return out

    monkeypatch.setitem(drift.WIRES, "gemini-interactions", (dist, moved))
    assert drift.main(["--wire", "gemini-interactions"]) == 1
    out = capsys.readouterr().out
    assert "    ~ generation_config.seed   (sent, and the SDK deprecates it: move off it or list why it stays)" in out
    assert "    - generation_config.top_p   (accepted as deprecated: the SDK no longer deprecates it, or it is not " \
           "sent)" in out
    assert out.splitlines()[-1] == "1 unknown, 1 gone: the wire moved"


def test_an_sdk_whose_types_moved_is_a_moved_wire_not_a_traceback(monkeypatch, capsys):
    def renamed():
        raise AttributeError("module 'anthropic.types' has no attribute 'RawMessageStreamEvent'")

    monkeypatch.setitem(drift.WIRES, "anthropic", ("anthropic", renamed))
    assert drift.main(["--wire", "anthropic"]) == 1
    out = capsys.readouterr().out
    assert "not compared, the SDK's types moved (update the collector): anthropic (anthropic " in out
    assert "AttributeError: module 'anthropic.types' has no attribute 'RawMessageStreamEvent')" in out
    assert out.splitlines()[-1] == "1 unknown, 0 gone: the wire moved"
