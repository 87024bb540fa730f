"""Fail when the built documentation shows a Markdown table as raw text.

A notebook cell's Markdown output that the renderer does not parse as a table reaches the page
as ``| Arm | What it does | ...`` in a paragraph; a reader sees pipes, not a table. Code blocks
(``<pre>``) may show such text on purpose and are skipped.

    python scripts/check_docs_html.py docs/_build/html
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_CODE = re.compile(r"<pre.*?</pre>", re.S)
_TAGS = re.compile(r"<[^>]+>")
_RULE = re.compile(r"\|\s*:?(-{3,}|\u2014+|\u2013+):?\s*\|")  # |---| (or dashes made typographic)


def raw_tables(html: str) -> list[str]:
    text = _TAGS.sub("", _CODE.sub("", html))
    return [line.strip()[:80] for line in text.splitlines() if _RULE.search(line)]


def main(folder: str) -> int:
    pages = sorted(Path(folder).rglob("*.html"))
    if not pages:
        print(f"check_docs_html: no pages under {folder}", file=sys.stderr)
        return 2
    bad = [(page, line) for page in pages for line in raw_tables(page.read_text())]
    for page, line in bad:
        print(f"{page}: a Markdown table shown as text: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/_build/html"))
