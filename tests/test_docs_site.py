"""The documentation site as a reader gets it (issue 17): every page of the list is there, every
cross-reference resolves (Sphinx's nitpicky mode, warnings as errors), no Markdown table reaches
a page as raw text, the theme shows the version and a real footer, and the Configuration page
names every environment variable the code reads.

The build here does not execute the notebooks (``make docs`` does, in CI): it checks the
structure and the references in about a minute; the executed pages' own checks are in
``make docs``, which runs with the same ``nitpicky = True``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = ["index", "installation", "compatibility", "configuration", "debugging", "faq",
         "changelog", "api", "language", "artifacts", "architecture", "reliability",
         "guide/thirty-seconds/thirty-seconds", "guide/what-a-graph-is/what-a-graph-is",
         "guide/performance/performance", "guide/interoperability/interoperability",
         "guide/many-machines/many-machines"]


def _check_html():
    spec = importlib.util.spec_from_file_location("check_docs_html",
                                                  ROOT / "scripts" / "check_docs_html.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_nb")
    out = tmp_path_factory.mktemp("html")
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-n", "-W", "--keep-going", "-q",
         "-D", "nb_execution_mode=off",
         # without execution a glued value and a cell's language are unknown by design
         "-D", "suppress_warnings=mystnb.glue,mystnb.unknown_mime_type,myst-nb.lexer",
         str(DOCS), str(out)],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    return out, done


@pytest.mark.slow
def test_the_site_builds_with_every_reference_resolved(site):
    out, done = site
    assert done.returncode == 0 and "WARNING" not in done.stderr, done.stderr[-4000:]


@pytest.mark.slow
def test_every_page_of_the_list_is_built(site):
    out, _ = site
    missing = [page for page in PAGES if not (out / f"{page}.html").is_file()]
    assert not missing, f"pages not built: {missing}"


@pytest.mark.slow
def test_no_page_shows_a_markdown_table_as_text(site):
    out, _ = site
    check = _check_html()
    bad = {page.name: check.raw_tables(page.read_text()) for page in out.rglob("*.html")}
    assert not {name: lines for name, lines in bad.items() if lines}


@pytest.mark.slow
def test_the_theme_shows_the_version_and_a_real_footer(site):
    out, _ = site
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    index = (out / "index.html").read_text()
    assert "furo" in index
    assert f"eagle + hawk {version}" in index
    footer = re.sub(r"<[^>]+>|\s+", " ", index[index.rindex("<footer"):])
    assert "Copyright" in footer or "©" in footer
    assert not re.search(r"©\s*\.", footer) and "the eagle + hawk authors" in footer


def test_every_environment_variable_the_code_reads_is_on_the_configuration_page():
    source = "\n".join(path.read_text() for path in (ROOT / "src").rglob("*.py"))
    names = set(re.findall(r"""environ(?:\.get)?[\[(]\s*["']([A-Z0-9_]+)["']""", source))
    names |= set(re.findall(r"""^ENV_VAR = ["']([A-Z0-9_]+)["']""", source, re.M))
    assert {"EAGLE_NUM_THREADS", "EAGLE_CACHE_DIR"} <= names
    page = (DOCS / "configuration.md").read_text()
    assert not [name for name in names if f"`{name}`" not in page]


@pytest.mark.slow
def test_every_public_name_has_an_entry_in_the_reference(site):
    out, _ = site
    import types

    import eagle
    import hawk

    ids = set()
    for page in out.rglob("*.html"):
        ids |= set(re.findall(r'id="((?:eagle|hawk)\.[\w.]+)"', page.read_text()))
    missing = []
    for package in (eagle, hawk):
        prefix = package.__name__ + "."
        for name in package.__all__:
            if isinstance(getattr(package, name), types.ModuleType):
                found = any(i.startswith(f"{prefix}{name}.") for i in ids)
            else:
                found = any(i == prefix + name or (i.startswith(prefix) and
                                                   i.endswith("." + name)) for i in ids)
            if not found:
                missing.append(prefix + name)
    assert not missing, f"public names with no entry in the API reference: {missing}"
