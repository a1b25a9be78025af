"""Packaging: pip builds agenthub through PEP 517 (pyproject.toml) with setup.cfg's metadata."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as handle:
        return handle.read()


def test_pyproject_names_the_setuptools_backend_and_leaves_the_metadata_to_setup_cfg():
    text = _read("pyproject.toml")
    assert re.search(r'^\[build-system\]$', text, re.M)
    assert re.search(r'^build-backend = "setuptools\.build_meta"$', text, re.M)
    assert re.search(r'^requires = \["setuptools>=\d+"', text, re.M)
    assert "[project]" not in text          # one home for the metadata: setup.cfg
    assert "name = agenthub" in _read("setup.cfg")
