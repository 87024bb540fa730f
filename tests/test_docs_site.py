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


# What the reference documents with autodoc: ``.. autofunction:: name`` and friends, with the
# ``:members:`` line that follows (a list, or every documented member when empty).
_AUTODOC = re.compile(r"^\.\. auto(function|class|exception|module):: (\S+)\n"
                      r"((?:   :[\w-]+:.*\n)*)", re.M)


def _documented_callables():
    """(qualified name, callable, the docstring the reader sees) for every function, method and
    class constructor the reference pages render, and every public function and class of
    ``eagle`` and ``hawk``. A class's constructor is described by the class's own docstring
    (autodoc shows that one, not ``__init__``'s); an enum's, or one inherited from Python's
    exceptions, is not ours to describe."""
    import dataclasses
    import enum
    import inspect
    import pkgutil

    import eagle
    import hawk

    targets = {}
    for page in DOCS.rglob("*.md"):
        if "_build" in page.parts:
            continue
        for kind, name, options in _AUTODOC.findall(page.read_text()):
            members = re.search(r":members:(.*)", options)
            targets[name] = (kind, None if members is None else
                             [m.strip() for m in members.group(1).split(",") if m.strip()])
    for package in (eagle, hawk):
        for name in package.__all__:
            value = getattr(package, name)
            if inspect.isfunction(value) or inspect.isclass(value):
                targets.setdefault(f"{package.__name__}.{name}",
                                   ("class" if inspect.isclass(value) else "function", None))

    def ours(function) -> bool:
        return inspect.isfunction(function) and \
            function.__module__.split(".")[0] in ("eagle", "hawk")

    found = []
    for name, (kind, members) in sorted(targets.items()):
        # as autodoc reads it: the last part is an attribute of the module before it (so
        # ``hawk.kernel`` is the decorator, not the module ``hawk/kernel.py``)
        obj = pkgutil.resolve_name(name if kind == "module" else ":".join(name.rsplit(".", 1)))
        if kind == "function":
            found.append((name, obj, inspect.getdoc(obj)))
            continue
        if kind == "module":
            found += [(f"{name}.{m}", getattr(obj, m), inspect.getdoc(getattr(obj, m)))
                      for m in members or ()]
            continue
        if not issubclass(obj, enum.Enum) and (
                ours(obj.__init__) or ours(obj.__new__) or dataclasses.is_dataclass(obj)
                or hasattr(obj, "_fields")):  # a NamedTuple's constructor is its fields
            found.append((name, obj, inspect.getdoc(obj)))
        if members is None:
            continue
        names = members or [k for k, v in vars(obj).items()
                            if not k.startswith("_") and getattr(v, "__doc__", None)]
        for member in names:
            raw = inspect.getattr_static(obj, member)
            if isinstance(raw, staticmethod | classmethod) or inspect.isfunction(raw):
                method = getattr(obj, member)
                found.append((f"{name}.{member}", method, inspect.getdoc(method)))
    # one object under two names (``hawk.Program``, ``hawk.ir.Program``) is checked once
    return list({id(entry[1]): entry for entry in reversed(found)}.values())


def _mentions(doc: str, parameter: str) -> bool:
    """``parameter`` is described in ``doc``: an ``Args:``/``Attributes:`` entry
    (``name: ...``, ``a, b: ...``, ``**bindings: ...``) or named in double backquotes in a
    sentence (``name`` or ``name=...``)."""
    if re.search(r"``\*{0,2}" + re.escape(parameter) + r"\b", doc):
        return True
    for line in doc.splitlines():
        entry = re.match(r"\s*(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?:\([^)]*\))?\s*:(?:\s|$)",
                         line)
        if entry and parameter in {n.strip().lstrip("*") for n in entry.group(1).split(",")}:
            return True
    return False


def test_every_parameter_of_the_reference_is_described_in_its_docstring():
    import inspect

    undescribed = []
    for name, obj, doc in _documented_callables():
        if not doc:
            undescribed.append(f"{name} (no docstring at all)")
        try:
            parameters = inspect.signature(obj).parameters
        except (TypeError, ValueError):  # a builtin's signature: nothing of ours to describe
            continue
        for parameter in parameters:
            if parameter not in ("self", "cls") and not _mentions(doc or "", parameter):
                undescribed.append(f"{name}({parameter})")
    assert not undescribed, (f"{len(undescribed)} parameters of the API reference have no "
                             f"description in their docstring: {undescribed}")


def test_the_main_entry_points_show_an_example():
    import eagle
    import hawk

    entry_points = {"eagle.until_done": eagle.until_done, "eagle.simulate": eagle.simulate,
                    "eagle.deploy": eagle.deploy, "eagle.Runner.run": eagle.Runner.run,
                    "hawk.kernel": hawk.kernel, "hawk.func": hawk.func}
    without = [name for name, entry in entry_points.items()
               if not re.search(r"^\s*Example::\n\n\s+\S", entry.__doc__ or "", re.M)]
    assert not without, f"entry points whose docstring shows no example: {without}"
