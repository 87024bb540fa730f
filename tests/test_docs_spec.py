"""The "What a graph is" page reproduces the spec it was made from (issue 17).

The spec (``shared/spec/what-a-graph-is.md``, the text of the page as a browser shows it) and
the page's MyST source are both turned into lines of plain text: a paragraph or a list item is
one line, a code cell is its code lines, a table row is its cells joined by tabs, a hidden-input
cell is announced by the two lines the spec's browser shows ("Show code cell source", "Hide code
cell source"); blank lines are dropped, and curly quotes read as straight ones. The two line
lists are then compared, and every difference (a run of spec lines replaced by a run of page
lines) must be one listed, with its reason, in ``docs/guide/what-a-graph-is/spec-differences.toml``;
a listed difference that no longer occurs fails too, so the list stays the truth.
"""

from __future__ import annotations

import difflib
import re
import shutil
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGE = DOCS / "guide" / "what-a-graph-is" / "what-a-graph-is.md"
DIFFERENCES = PAGE.with_name("spec-differences.toml")


def _spec_path() -> Path:
    for base in (ROOT.parent, ROOT.parent.parent):
        path = base / "shared" / "spec" / "what-a-graph-is.md"
        if path.is_file():
            return path
    pytest.skip("the shared spec (../shared/spec/what-a-graph-is.md) is not beside this checkout")


_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})
_ROLE = re.compile(r"\{([\w:]+)\}`([^`]*)`")
_LINK_TEXT = re.compile(r"^(.*?)\s*<([^>]+)>$", re.S)


def _title(doc: Path) -> str:
    for line in doc.read_text().splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    raise AssertionError(f"{doc} has no title")


def _inline(text: str, here: Path) -> str:
    """MyST inline markup as a browser shows it: roles by their text, code without backticks,
    emphasis without stars; a glue role stays visible as ``{glue:NAME}``."""
    def role(match: re.Match) -> str:
        name, body = match.groups()
        if name.startswith("glue"):
            return "{glue:" + body + "}"
        explicit = _LINK_TEXT.match(body)
        if explicit:
            return explicit.group(1)
        if name == "doc":
            return _title((here.parent / body).with_suffix(".md").resolve())
        return body.lstrip("~")

    text = _ROLE.sub(role, text)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
    text = re.sub(r"\*([^*]+)\*", r"\1", text)
    return text.translate(_QUOTES).strip()


def page_lines(path: Path = PAGE) -> list[str]:
    """The page's MyST source as the lines a browser shows (see the module docstring)."""
    source = path.read_text()
    if source.startswith("---\n"):
        source = source[source.index("\n---\n", 4) + 5:]
    out: list[str] = []
    paragraph: list[str] = []

    def flush():
        if paragraph:
            out.append(_inline(" ".join(paragraph), path))
            paragraph.clear()

    lines = iter(source.splitlines())
    for line in lines:
        if line.startswith("```{code-cell}"):
            flush()
            body = []
            for inner in lines:
                if inner.startswith("```"):
                    break
                body.append(inner)
            if body and body[0].startswith(":tags:"):
                if "hide-input" in body[0]:
                    out += ["Show code cell source", "Hide code cell source"]
                body = body[1:]
            out += [code.rstrip().translate(_QUOTES) for code in body if code.strip()]
        elif line.startswith(":::{table}"):
            flush()
            out.append(_inline(line[len(":::{table}"):], path))
        elif line.startswith(":::"):
            flush()
        elif line.startswith("|"):
            flush()
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if not all(set(cell) <= set("-:") for cell in cells):
                out.append("\t".join(_inline(cell, path) for cell in cells))
        elif line.startswith("#"):
            flush()
            out.append(_inline(line.lstrip("#"), path))
        elif line.startswith("- "):
            flush()
            paragraph.append("\u2022 " + line[2:])
        elif not line.strip():
            flush()
        else:
            paragraph.append(line.strip())
    flush()
    return out


def spec_lines(path: Path) -> list[str]:
    """The spec's page, below its ``---`` line, one line per non-blank line."""
    text = path.read_text().split("\n---\n", 1)[1]
    return [line.rstrip().translate(_QUOTES) for line in text.splitlines() if line.strip()]


def differences(spec: list[str], page: list[str]) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    matcher = difflib.SequenceMatcher(None, spec, page, autojunk=False)
    return [(tuple(spec[i1:i2]), tuple(page[j1:j2]))
            for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def documented() -> list[dict]:
    entries = tomllib.loads(DIFFERENCES.read_text())["difference"]
    for entry in entries:
        assert entry.get("reason", "").strip(), f"a listed difference has no reason: {entry}"
    return entries


def _show(hunk) -> str:
    spec, page = hunk
    return ("\n  spec: " + "\n        ".join(spec or ["(nothing)"])
            + "\n  page: " + "\n        ".join(page or ["(nothing)"]))


def test_the_page_differs_from_the_spec_only_where_listed_with_a_reason():
    actual = differences(spec_lines(_spec_path()), page_lines())
    listed = [(tuple(e["spec"]), tuple(e["page"])) for e in documented()]
    unlisted = [h for h in actual if h not in listed]
    stale = [h for h in listed if h not in actual]
    assert not unlisted, ("the page differs from the spec where spec-differences.toml says "
                          "nothing:" + "".join(_show(h) for h in unlisted))
    assert not stale, ("spec-differences.toml lists differences the page no longer has:"
                       + "".join(_show(h) for h in stale))


def page_cells(path: Path = PAGE) -> list[list[str]]:
    """The code lines of each code cell of the page, blank lines dropped."""
    cells = re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```", path.read_text(), re.M | re.S)
    return [[line.rstrip().translate(_QUOTES) for line in cell.splitlines()
             if line.strip() and not line.startswith(":tags:")] for cell in cells]


def test_every_code_cell_is_the_spec_s_cell_unchanged_or_a_listed_addition():
    """The spec's cells are acceptance tests that must run unchanged: each cell of the page is
    one of them, line for line, or a whole cell the differences list adds, with its reason. A
    spec cell may carry lines the list adds (the figure's y ranges), never lose or change one."""
    spec = "\n".join(spec_lines(_spec_path()))
    added = {line for e in documented() if e["kind"] == "addition" for line in e["page"]}
    cells = page_cells()
    assert len(cells) >= 8
    for cell in cells:
        if all(line in added for line in cell):
            continue
        own = [line for line in cell if line not in added]
        assert "\n".join(own) in spec, f"a code cell that is not the spec's: {cell[:3]}"


def test_each_listed_difference_has_a_kind_that_matches_its_lines():
    kinds = {"output": "the spec shows a cell's output, which the build makes",
             "addition": "the page adds lines the spec does not have",
             "wording": "the page says a spec sentence differently"}
    for entry in documented():
        assert entry["kind"] in kinds, f"kind must be one of {sorted(kinds)}: {entry}"
        if entry["kind"] == "output":
            assert entry["spec"] and not entry["page"], entry
        if entry["kind"] == "addition":
            assert entry["page"] and not entry["spec"], entry


def test_the_comparison_sees_a_changed_word_a_dropped_sentence_and_a_changed_cell(tmp_path):
    """The comparison itself: a page edited in three small ways gives three new differences."""
    text = PAGE.read_text()
    edited = (text.replace("the host reads nothing until it's done", "the host reads little")
              .replace(" Nothing\ninside a step may allocate device memory or synchronize — `out`, "
                       "`position` and `terminated` are\nall pre-allocated above.", "")
              .replace("replays = 5", "replays = 6"))
    assert edited.count("\n") < text.count("\n") and edited != text
    shutil.copytree(DOCS, tmp_path / "docs", ignore=shutil.ignore_patterns("_build"))
    copy = tmp_path / "docs" / PAGE.relative_to(DOCS)
    copy.write_text(edited)
    spec = spec_lines(_spec_path())
    before = set(differences(spec, page_lines()))
    after = [h for h in differences(spec, page_lines(copy)) if h not in before]
    changed = " ".join(" ".join(h[1]) for h in after)
    assert len(after) >= 3
    assert "the host reads little" in changed and "replays = 6" in changed
    assert any("Nothing inside a step may allocate" in " ".join(h[0]) for h in after)
