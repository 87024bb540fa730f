"""``hawk.ode.tableau.ButcherTableau``: a tableau is checked when it is defined (shapes, row
sums, ``sum(b) = 1``, ``sum(e) = 0``, the order conditions of every rooted tree up to its
order, the interpolant's), so a mistyped coefficient fails at import with the condition named;
and the registry ``hawk.ode.METHODS`` is what every layer reads."""

from __future__ import annotations

import dataclasses

import pytest

import eagle.ode
import hawk.ode
from hawk.ode.tableau import ButcherTableau, rooted_trees
from hawk.ode.tableaus import DOPRI5, VERN7, VERN9


def test_the_rooted_trees_are_counted_as_they_should_be():
    """1, 1, 2, 4, 9, 20, 48, 115, 286 trees of orders 1 to 9 (OEIS A000081)."""
    counts = [len(rooted_trees(n)) - len(rooted_trees(n - 1)) if n > 1 else 1
              for n in range(1, 10)]
    assert counts == [1, 1, 2, 4, 9, 20, 48, 115, 286]


def _changed(tab, field, at, delta):
    """``tab`` with entry ``at`` (a tuple of indices) of ``field`` moved by ``delta``."""
    def move(value, path):
        if not path:
            return value + delta
        items = list(value)
        items[path[0]] = move(items[path[0]], path[1:])
        return tuple(items)

    return dataclasses.replace(tab, **{field: move(getattr(tab, field), at)})


@pytest.mark.parametrize("tab, field, at, delta, message", [
    (VERN7, "a", (5, 3), 1e-7, "weights of stage 7 sum to"),
    (DOPRI5, "b", (0,), 1e-9, "b sum to"),
    (DOPRI5, "e", (6,), 1e-9, "error weights e sum to"),
    (VERN9, "c", (3,), 1e-9, "sum to"),
    (VERN7, "dense", (2, 4), 1e-6, "interpolant"),
])
def test_a_mistyped_coefficient_is_refused_when_the_tableau_is_defined(tab, field, at, delta,
                                                                        message):
    with pytest.raises(ValueError, match=message):
        _changed(tab, field, at, delta)


def test_weights_that_lose_an_order_are_refused_by_the_order_conditions():
    """Two of vern9's weights moved against each other keep every row sum and ``sum(b) = 1``
    but miss the order conditions; a claimed order that is too high or too low is refused."""
    b = list(VERN9.b)
    b[9] += 1e-9
    b[10] -= 1e-9
    with pytest.raises(ValueError, match="miss an order condition"):
        dataclasses.replace(VERN9, b=tuple(b))
    with pytest.raises(ValueError, match="not of order 6"):
        dataclasses.replace(DOPRI5, order=6)
    with pytest.raises(ValueError, match="higher than the 4 given"):
        dataclasses.replace(DOPRI5, order=4)
    with pytest.raises(ValueError, match="has 2 weights, not 1"):
        dataclasses.replace(DOPRI5, a=((0.1, 0.1), *DOPRI5.a[1:]))


def test_a_small_tableau_is_checked_and_runs_from_its_data_alone():
    """Heun's method with Euler embedded, defined here, meets its conditions."""
    heun = ButcherTableau(name="heun", order=2, error_order=1, c=(1.0,), a=((1.0,),),
                          b=(0.5, 0.5), e=(-0.5, 0.5, 0.0))
    attempt = hawk.ode.explicit_attempt(heun)
    u_new, err, q, k_next = attempt(lambda u, t, p: -u, 1.0, -1.0, 0.0, 0.1, None)
    assert u_new == pytest.approx(1.0 - 0.1 + 0.005)
    assert err == pytest.approx(0.1 * (0.5 * 1.0 - 0.5 * 0.9))


def test_the_registry_is_the_one_method_list():
    """``eagle.ode.solve``'s methods and adaptive/implicit sets are the registry's."""
    assert eagle.ode.METHODS == tuple(hawk.ode.METHODS)
    assert set(eagle.ode.ADAPTIVE) == {n for n, m in hawk.ode.METHODS.items() if m.adaptive}
    assert set(eagle.ode.IMPLICIT) == {n for n, m in hawk.ode.METHODS.items() if m.implicit}
    for name, method in hawk.ode.METHODS.items():
        assert method.name == name
        if method.tableau is not None:
            assert method.tableau.name == name and method.order == method.tableau.order
