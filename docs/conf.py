"""Sphinx configuration: MyST pages and MyST-NB notebooks, executed at build time.

A code cell tagged ``gpu`` needs a CUDA GPU. On a build without one (``gpu_available()`` is
false) such a cell is not executed, and a note saying so is shown above it: never a silent skip.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_shared"))
from nb_helpers import gpu_available  # noqa: E402

project = "eagle + hawk"
author = "the eagle + hawk authors"
copyright = f"2026, {author}"
# One version: pyproject.toml's (the same file the package's metadata comes from).
release = version = tomllib.loads((HERE.parent / "pyproject.toml").read_text())["project"][
    "version"]
# method_table (_shared/method_table.py): the ``ode-methods`` directive, the table of
# hawk.ode.METHODS made when the page is built.
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.intersphinx",
              "method_table"]
source_suffix = {".md": "myst-nb"}
exclude_patterns = ["_build", "_shared", "_intersphinx", "guide/_fixtures",
                    "**/.ipynb_checkpoints"]
# Every cross-reference must resolve (a name the reader cannot follow is a warning, and -W makes
# it an error).
nitpicky = True
# The inventories are kept in the repository: the build machine need not reach the web.
# python.inv is the inventory of Python 3.11's documentation (Debian's python3.11-doc);
# numpy.inv is written by _intersphinx/make_numpy_inventory.py for the names eagle's API uses.
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", str(HERE / "_intersphinx" / "python.inv")),
    "numpy": ("https://numpy.org/doc/stable", str(HERE / "_intersphinx" / "numpy.inv")),
}
myst_enable_extensions = ["colon_fence"]
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_timeout = 600
nb_merge_streams = True
# Markdown that a cell prints is parsed as MyST (tables included), not CommonMark (no tables).
nb_render_markdown_format = "myst"
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = True
html_theme = "furo"
html_title = f"{project} {release}"
html_static_path = ["_static"]
html_css_files = ["wide.css"]
suppress_warnings = ["mystnb.unknown_mime_type"]

GPU = gpu_available()
_GPU_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n:tags: \[([^\]]*\bgpu\b[^\]]*)\]\n", re.M)
_NOTE = ("```{note}\nThe next cell needs a CUDA GPU. This build had none, so it was not run; "
         "run the page on a machine with a GPU to see its output.\n```\n\n")


def _skip_gpu_cells(app, docname, source):
    if GPU:
        return
    source[0] = _GPU_CELL.sub(
        lambda m: _NOTE + m.group(0).replace(f"[{m.group(1)}]",
                                             f"[{m.group(1)}, skip-execution]"), source[0])


# Names a signature shows bare (an annotation ``str | Path`` kept as text) and what they are.
_BARE_NAMES = {"Path": "pathlib.Path"}


def _resolve_bare_name(app, env, node, contnode):
    target = _BARE_NAMES.get(node.get("reftarget"))
    if target is None:
        return None
    from sphinx.ext.intersphinx import missing_reference

    node["reftarget"] = target
    return missing_reference(app, env, node, contnode)


def setup(app):
    app.connect("source-read", _skip_gpu_cells)
    app.connect("missing-reference", _resolve_bare_name, priority=400)
