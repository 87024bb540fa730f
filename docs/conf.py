"""Sphinx configuration: MyST pages and MyST-NB notebooks, executed at build time.

A code cell tagged ``gpu`` needs a CUDA GPU. On a build without one (``gpu_available()`` is
false) such a cell is not executed, and a note saying so is shown above it: never a silent skip.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_shared"))
from nb_helpers import gpu_available  # noqa: E402

project = "eagle + hawk"
author = "the eagle developers"
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "myst-nb"}
exclude_patterns = ["_build", "_shared", "guide/_fixtures", "**/.ipynb_checkpoints"]
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
html_theme = "alabaster"
html_title = project
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


def setup(app):
    app.connect("source-read", _skip_gpu_cells)
