"""The documentation's table of integration methods is made from the registry
(``hawk.ode.METHODS``) when the site is built (``docs/_shared/method_table.py``, the
``ode-methods`` directive): every method in it, with what the registry says of it. The function
that makes the table is tested here, not the Sphinx build (``test_docs_site.py`` builds it)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import hawk.ode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_shared"))
import method_table  # noqa: E402


def test_every_registry_method_has_a_row_in_the_registrys_order():
    rows = method_table.method_table()
    assert [row[0] for row in rows] == list(hawk.ode.METHODS)
    assert all(len(row) == len(method_table.HEADER) for row in rows)


def test_each_row_says_what_the_registry_says():
    rows = {row[0]: dict(zip(method_table.HEADER, row, strict=True))
            for row in method_table.method_table()}
    for name, method in hawk.ode.METHODS.items():
        row = rows[name]
        assert row["order"] == str(method.order), name
        if method.adaptive:
            assert row["step-size control"].endswith("_control"), name
            assert row["error estimate"] and row["interpolant"], name
            assert ("implicit" in row["kind"]) == method.implicit, name
        else:
            assert not row["step-size control"] and not row["interpolant"], name
        if method.tableau is not None:
            assert row["f per step"] == str(method.tableau.stages), name
            assert row["error estimate"].split()[0] == str(method.tableau.error_order), name


def test_a_method_added_to_the_registry_is_in_the_table():
    methods = dict(hawk.ode.METHODS)
    methods["rk23_copy"] = hawk.ode.METHODS["rk23"]
    assert "rk23_copy" in [row[0] for row in method_table.method_table(methods)]


def test_the_rendered_table_names_every_method():
    pytest.importorskip("docutils")
    text = method_table.table_node(method_table.method_table()).astext()
    assert all(name in text.split() for name in (*method_table.HEADER[:3], *hawk.ode.METHODS))


def test_the_guide_shows_the_generated_table():
    page = (ROOT / "docs" / "guide" / "differential-equations" / "differential-equations.md")
    assert "```{ode-methods}\n```" in page.read_text()
    assert "method_table" in (ROOT / "docs" / "conf.py").read_text()
