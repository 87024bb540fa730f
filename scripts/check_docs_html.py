"""Fail when the built documentation shows what a reader should not see:

- a Markdown table as raw text: a notebook cell's Markdown output that the renderer does not
  parse as a table reaches the page as ``| Arm | What it does | ...`` in a paragraph; a reader
  sees pipes, not a table. Code blocks (``<pre>``) may show such text on purpose and are
  skipped;
- the build machine in an executed cell's output: an absolute path into this checkout, the
  Python environment that built the site (a virtual environment, ``site-packages``) or a home
  folder (``/root/...``, ``/home/NAME/...``, this user's own). Paths a cell makes on purpose
  under the temporary folder are not the build machine's identity and pass;
- a Python warning in a cell's stderr (``.../tqdm/auto.py:21: TqdmWarning: IProgress not
  found``): the page would publish a warning the reader cannot act on. A cell that means to
  show a warning prints it to stdout.

Only executed cells' outputs are checked for the last two: a code cell's source may name any
path. The source of every rule is one table here (``PATH_PATTERNS``, ``WARNING``).

    python scripts/check_docs_html.py docs/_build/html
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

_CODE = re.compile(r"<pre.*?</pre>", re.S)
_TAGS = re.compile(r"<[^>]+>")
_RULE = re.compile(r"\|\s*:?(-{3,}|\u2014+|\u2013+):?\s*\|")  # |---| (or dashes made typographic)
#: one rendered output of an executed cell (myst-nb: a literal block whose classes are
#: ``output`` and its kind: ``stream`` for stdout, ``stderr``, ``text_plain``...)
_OUTPUT = re.compile(r'<div class="output ([\w-]+)[^"]*">\s*<div class="highlight"><pre>(.*?)'
                     r"</pre>", re.S)
#: absolute paths that belong to whatever machine built the site, whoever it was
PATH_PATTERNS = (
    re.compile(r"(?<![\w.~-])/root/"),
    re.compile(r"(?<![\w.~-])/home/[\w.-]+/"),
    re.compile(r"(?<![\w.~-])/Users/[\w.-]+/"),
    re.compile(r"/(?:site|dist)-packages/"),
    re.compile(r"/\.?venv/"),
)
#: a Python warning as ``warnings`` writes it (``file.py:12: SomeWarning: message``), or a
#: warning category's name followed by its message
WARNING = re.compile(r"\b\w*Warning: ")


def raw_tables(html_text: str) -> list[str]:
    text = _TAGS.sub("", _CODE.sub("", html_text))
    return [line.strip()[:80] for line in text.splitlines() if _RULE.search(line)]


def cell_outputs(html_text: str) -> list[tuple[str, str]]:
    """``(kind, text)`` of every executed cell's output on a page, as the reader sees it."""
    return [(kind, html.unescape(_TAGS.sub("", body)))
            for kind, body in _OUTPUT.findall(html_text)]


def machine_roots() -> list[str]:
    """The folders that are this build machine's own: this checkout, the Python environment
    (when it is not the system's) and the user's home folder."""
    roots = [Path(__file__).resolve().parents[1], Path.home()]
    if sys.prefix != sys.base_prefix:
        roots.append(Path(sys.prefix))
    return [str(root) for root in roots if len(root.parts) > 2]


def leaks(html_text: str, roots: list[str] | None = None) -> list[str]:
    """What an executed cell's output shows of the build machine: each line with one of its
    paths, or a Python warning on stderr."""
    roots = machine_roots() if roots is None else roots
    found = []
    for kind, text in cell_outputs(html_text):
        for line in text.splitlines():
            if any(root in line for root in roots) or any(p.search(line)
                                                          for p in PATH_PATTERNS):
                found.append(f"a build-machine path in a cell's output: {line.strip()[:120]}")
            if kind == "stderr" and WARNING.search(line):
                found.append(f"a Python warning in a cell's stderr: {line.strip()[:120]}")
    return found


def main(folder: str) -> int:
    pages = sorted(Path(folder).rglob("*.html"))
    if not pages:
        print(f"check_docs_html: no pages under {folder}", file=sys.stderr)
        return 2
    bad = []
    for page in pages:
        text = page.read_text()
        bad += [(page, f"a Markdown table shown as text: {line}") for line in raw_tables(text)]
        bad += [(page, problem) for problem in leaks(text)]
    for page, problem in bad:
        print(f"{page}: {problem}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/_build/html"))
