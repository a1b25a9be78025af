"""The applications' wing (agenthub/apps/): its place in the layers, its documented import paths, and
the pages' files as package data (read from an installed wheel, a zip and a copied folder alike)."""

import ast
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

import agenthub
from agenthub.apps import _dom, playground, viewer

PACKAGE = os.path.dirname(os.path.abspath(agenthub.__file__))
ROOT = os.path.dirname(PACKAGE)
ASSETS = os.path.join(PACKAGE, "apps", "assets")
ASSET_FILES = ("dom.js", "pages.css", "playground.css", "playground.html", "playground.js", "viewer.css",
               "viewer.html", "viewer.js")


def _imports(rel):
    """The agenthub modules ``rel`` (a path under agenthub/) imports, as dotted names under agenthub."""
    with open(os.path.join(PACKAGE, rel), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    here = ["agenthub"] + rel[:-len(".py")].replace("/", ".").split(".")
    package = here[:-1]  # the package a relative import starts from (for __init__.py, its own)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "agenthub")
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if (node.module or "").split(".")[0] == "agenthub":
                    found.add(node.module)
                continue
            base = package[:len(package) - node.level + 1]
            if node.module:
                found.add(".".join(base + node.module.split(".")))
            else:
                found.update(".".join(base + [alias.name]) for alias in node.names)
    return found


def _modules():
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                yield os.path.relpath(os.path.join(folder, name), PACKAGE).replace(os.sep, "/")


def test_the_resolver_sees_relative_imports():
    assert "agenthub.apps.terminal" in _imports("apps/demo.py")
    assert "agenthub.errors" in _imports("apps/server.py")
    assert "agenthub.apps.chat" in _imports("__main__.py")


def test_only_the_command_line_and_the_old_names_import_the_applications():
    """The pipeline never reaches up into the applications; nothing imports the command line
    (the __main__ <-> demo circle is gone)."""
    shims = {"server.py", "playground.py"}
    for rel in _modules():
        names = _imports(rel)
        assert "agenthub.__main__" not in names, rel
        if rel.startswith("apps/") or rel == "__main__.py" or rel in shims:
            continue
        assert not [n for n in names if n == "agenthub.apps" or n.startswith("agenthub.apps.")], rel


def test_the_documented_import_paths_still_work():
    import agenthub.playground
    import agenthub.server
    from agenthub.__main__ import Printer, main, model_line, usage_line
    from agenthub.apps import server, terminal

    assert agenthub.server.make_app is server.make_app and agenthub.server.serve is server.serve
    assert agenthub.server.load_config is server.load_config and agenthub.server.AgentHubApp is server.AgentHubApp
    assert agenthub.playground.PAGE is playground.PAGE and agenthub.playground.CSP is playground.CSP
    assert (Printer, usage_line, model_line) == (terminal.Printer, terminal.usage_line, terminal.model_line)
    assert callable(main)


def _read(name):
    with open(os.path.join(ASSETS, name), encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.parametrize("module, name", [(playground, "playground"), (viewer, "viewer")])
def test_each_page_is_its_files_and_its_csp_names_their_hashes(module, name):
    style = _read("pages.css") + _read(name + ".css")
    script = '\n(function () {\n"use strict";\n' + _read("dom.js") + _read(name + ".js") + "})();\n"
    assert module.STYLE == style and module.SCRIPT == script
    html = module.PAGE.decode("utf-8") if isinstance(module.PAGE, bytes) else module.PAGE
    assert html == _read(name + ".html").replace("{{style}}", style).replace("{{script}}", script)
    assert html.count("<style>" + style + "</style>") == 1 and html.count("<script>" + script + "</script>") == 1
    assert "script-src " + _dom.csp_source(script) + ";" in module.CSP
    assert "style-src " + _dom.csp_source(style) + ";" in module.CSP
    # one stylesheet for what the pages share: the shared rules are written once, in pages.css
    assert "--thinkbg" in _read("pages.css") and "details.thinking" in _read("pages.css")
    assert "--thinkbg" not in _read(name + ".css") and "details.thinking" not in _read(name + ".css")


def test_the_hash_is_sha256_of_the_utf8_text():
    # echo -n 'a' | openssl dgst -sha256 -binary | base64
    assert _dom.csp_source("a") == "'sha256-ypeBEsobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSLs='"


def test_a_page_asset_that_would_end_its_element_is_refused(monkeypatch):
    real = _dom.asset
    monkeypatch.setattr(_dom, "asset", lambda n: real(n) + ("</SCRIPT>" if n == "viewer.js" else ""))
    with pytest.raises(AssertionError, match="must not contain </script"):
        _dom.build("viewer")


def _copy_package(target):
    shutil.copytree(PACKAGE, os.path.join(target, "agenthub"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


_SAME_PAGES = ("import sys; sys.path.insert(0, sys.argv[1]); import agenthub.apps.playground as p, "
               "agenthub.apps.viewer as v; assert p.__file__.startswith(sys.argv[1]), p.__file__; "
               "import hashlib; print(hashlib.sha256(p.PAGE + v.PAGE.encode() + p.CSP.encode() + v.CSP.encode())"
               ".hexdigest())")


def _expected_digest():
    import hashlib

    return hashlib.sha256(playground.PAGE + viewer.PAGE.encode() + playground.CSP.encode()
                          + viewer.CSP.encode()).hexdigest()


def test_a_vendored_agenthub_folder_and_a_zip_serve_the_same_pages(tmp_path):
    """An agenthub/ folder copied into a project (no install), and the same folder in a zip on sys.path."""
    _copy_package(str(tmp_path / "vendored"))
    out = subprocess.check_output([sys.executable, "-I", "-c", _SAME_PAGES, str(tmp_path / "vendored")],
                                  cwd=str(tmp_path), timeout=120)
    assert out.decode().strip() == _expected_digest()
    archive = str(tmp_path / "vendored.zip")
    with zipfile.ZipFile(archive, "w") as handle:
        for folder, _, files in os.walk(str(tmp_path / "vendored")):
            for name in files:
                path = os.path.join(folder, name)
                handle.write(path, os.path.relpath(path, str(tmp_path / "vendored")))
    out = subprocess.check_output([sys.executable, "-I", "-c", _SAME_PAGES, archive], cwd=str(tmp_path), timeout=120)
    assert out.decode().strip() == _expected_digest()


def test_the_wheel_ships_the_assets_and_they_load_from_it(tmp_path):
    pytest.importorskip("setuptools", reason="building a wheel needs setuptools (pip install '.[test]')")
    pytest.importorskip("wheel", reason="building a wheel needs wheel (pip install '.[test]')")
    source = tmp_path / "source"
    source.mkdir()
    for name in ("setup.py", "setup.cfg", "README.md", "LICENSE", "pyproject.toml", "MANIFEST.in"):
        if os.path.isfile(os.path.join(ROOT, name)):
            shutil.copy(os.path.join(ROOT, name), str(source / name))
    _copy_package(str(source))
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                    "-w", str(dist), str(source)], check=True, timeout=300, cwd=str(tmp_path),
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wheels = [name for name in os.listdir(str(dist)) if name.endswith(".whl")]
    assert len(wheels) == 1, wheels
    with zipfile.ZipFile(str(dist / wheels[0])) as handle:
        names = set(handle.namelist())
        for name in ASSET_FILES:
            assert "agenthub/apps/assets/" + name in names
            assert handle.read("agenthub/apps/assets/" + name).decode("utf-8") == _read(name)
        assert "agenthub/apps/assets/__init__.py" in names
        handle.extractall(str(tmp_path / "installed"))  # what pip install puts in site-packages
    out = subprocess.check_output([sys.executable, "-I", "-c", _SAME_PAGES, str(tmp_path / "installed")],
                                  cwd=str(tmp_path), timeout=120)
    assert out.decode().strip() == _expected_digest()
