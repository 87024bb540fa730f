"""The table of integration methods, made from the registry (``hawk.ode.METHODS``) when the
documentation is built: ``method_table`` gives its rows, the ``ode-methods`` directive (a page
writes ```` ```{ode-methods} ```` where the table goes; ``conf.py`` registers it) renders them.
No page writes a method list by hand: a method added to the registry is in the table.
"""

from __future__ import annotations

import re

__all__ = ["HEADER", "method_table", "table_node", "setup"]

HEADER = ("method", "kind", "order", "error estimate", "step-size control", "f per step",
          "interpolant")

#: the first line a controller's docstring starts with (``hawk.ode.control.controller``'s,
#: and the Rosenbrock methods'): ```pi_control`` for an error estimate of order 4:`
_CONTROL = re.compile(r"``(\w+)`` for an error estimate of order (\d+)")
_ORDER = re.compile(r"\(order (\d+)\)|\b(second|third|fourth|fifth) order\b")
_ORDINALS = {"second": "2", "third": "3", "fourth": "4", "fifth": "5"}


def _kind(method) -> str:
    if method.kind == "fixed":
        return "fixed step"
    if method.stochastic:
        return "SDE, fixed step"
    if method.implicit:
        return "adaptive, linearly implicit (Jacobian)"
    return "adaptive, explicit" if method.tableau is not None else "adaptive"


def _control(method) -> tuple[str, str]:
    """(the controller's name, the order of the estimate it is set for), from its docstring."""
    found = _CONTROL.search((method.control.__doc__ or "") if method.control else "")
    return (found.group(1), found.group(2)) if found else ("", "")


def _interpolant(method) -> str:
    if method.value is None:
        return ""
    tableau = method.tableau
    if tableau is not None and tableau.dense is not None:
        return f"order {tableau.dense_order}"
    found = _ORDER.search(method.value.__doc__ or "")
    if found is None:
        return "yes"
    return f"order {found.group(1) or _ORDINALS[found.group(2)]}"


def method_table(methods=None) -> list[tuple[str, ...]]:
    """One row of ``HEADER``'s columns per method of ``methods`` (default ``hawk.ode.METHODS``),
    in the registry's order; a cell the method has nothing for is empty."""
    if methods is None:
        from hawk.ode import METHODS as methods
    rows = []
    for name, method in methods.items():
        control, control_order = _control(method)
        tableau = method.tableau
        if tableau is not None:
            estimate = str(tableau.error_order) + (f" and {tableau.low_order}"
                                                   if tableau.low_order else "")
        else:
            estimate = control_order
        rows.append((name, _kind(method), str(method.order), estimate, control,
                     str(tableau.stages) if tableau is not None else "",
                     _interpolant(method)))
    return rows


def table_node(rows):
    """The docutils table of ``rows`` (``method_table``'s) under ``HEADER``."""
    from docutils import nodes

    table = nodes.table(classes=["ode-methods"])
    group = nodes.tgroup(cols=len(HEADER))
    table += group
    for _ in HEADER:
        group += nodes.colspec(colwidth=1)

    def row(cells, head=False):
        line = nodes.row()
        for index, text in enumerate(cells):
            entry = nodes.entry()
            paragraph = nodes.paragraph()
            if index == 0 and not head:
                paragraph += nodes.literal(text=text)
            elif text:
                paragraph += nodes.Text(text)
            entry += paragraph
            line += entry
        return line

    group += nodes.thead("", row(HEADER, head=True))
    body = nodes.tbody()
    for cells in rows:
        body += row(cells)
    group += body
    return table


def _directive():
    from docutils.parsers.rst import Directive

    class MethodTable(Directive):
        """```` ```{ode-methods} ````: the table of ``hawk.ode.METHODS``."""

        has_content = False

        def run(self):
            return [table_node(method_table())]

    return MethodTable


def setup(app):
    """Register the ``ode-methods`` directive (``conf.py`` calls this)."""
    app.add_directive("ode-methods", _directive())
    return {"parallel_read_safe": True}
