"""The one registry of integration methods: ``METHODS``, name -> ``Method``.

Every layer reads it and none writes a method list of its own: the adaptive kernel
(``hawk.ode.kernels``) takes a method's step, interpolant, controller and error norm from here,
the fixed-step kernel its step, ``eagle.ode.solve`` the names it accepts and which options go
with which method (``adaptive``, ``implicit``, ``stochastic``), the documentation its table of
methods (``docs/_shared/method_table.py``, made when the site is built), the tests their
cases. An explicit Runge-Kutta method is one tableau file (``hawk.ode.tableaus``) and one line
below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .control import controller
from .explicit import error_norm, error_norm_for, explicit_attempt, polynomial_value
from .fixed import euler, euler_maruyama, rk4
from .rodas import rodas5p_attempt, rodas5p_control, rodas5p_value
from .rosenbrock import (
    rosenbrock23_control,
    rosenbrock23_method_attempt,
    rosenbrock23_method_value,
)
from .tableau import ButcherTableau
from .tableaus import DOP853, DOPRI5, RK23, TSIT5, VERN7, VERN9
from .tsit5 import tsit5_value

__all__ = ["Method", "METHODS", "explicit_method"]


@dataclass(frozen=True)
class Method:
    """What a kernel needs of one method.

    Attributes:
        name: the name ``eagle.ode.solve(method=...)`` and the kernels take.
        kind: ``"adaptive"`` (error control, events, ``saveat`` by interpolation),
            ``"fixed"`` (steps of ``dt``) or ``"stochastic"`` (fixed steps of an SDE).
        order: the solution's order.
        attempt: adaptive: the ``@hawk.func`` ``(f, u, k1, t, h, p[, jac]) -> (u_new, err, q,
            k_next)``.
        value: adaptive: the interpolant ``(u, h, q, theta)``.
        control: adaptive: the controller ``(err_norm, h, c) -> (accepted, h_next, c_next)``.
        norm: adaptive: the error norm ``(err, u, u_new, rtol, atol)``.
        step: fixed and stochastic: the step ``(f, u, t, dt, p)`` (``(f, g, u, t, dt, p)``).
        implicit: the step takes a Jacobian (``jac=``): the Rosenbrock methods.
        tableau: the explicit methods' ``ButcherTableau``, else None.
        start_order: adaptive: the estimate's order for the first step's size
            (``hawk.ode.start.initial_step``'s exponent ``1 / (start_order + 1)``): 4,
            Hairer's DOPRI5 choice, for every method before ``rk23`` and ``dop853``, which
            take SciPy's (their controllers' orders).
    """

    name: str
    kind: str
    order: int
    attempt: Callable | None = None
    value: Callable | None = None
    control: Callable | None = None
    norm: Callable = error_norm
    step: Callable | None = None
    implicit: bool = False
    tableau: ButcherTableau | None = None
    start_order: int = 4

    @property
    def adaptive(self) -> bool:
        return self.kind == "adaptive"

    @property
    def stochastic(self) -> bool:
        return self.kind == "stochastic"


def explicit_method(tab: ButcherTableau, control=None, value=None, start_order: int = 4
                    ) -> Method:
    """The adaptive ``Method`` of an explicit tableau: the generic step, its polynomial
    interpolant (or ``value``), ``control`` (default: Hairer's PI controller for the embedded
    estimate's order) and the first step's ``start_order``."""
    return Method(tab.name, "adaptive", tab.order, attempt=explicit_attempt(tab),
                  value=value if value is not None else polynomial_value(tab),
                  control=control if control is not None else controller("pi", tab.error_order),
                  norm=error_norm_for(tab), tableau=tab, start_order=start_order)


#: every method, by name: adaptive (explicit, then linearly implicit), fixed-step, stochastic
METHODS: dict[str, Method] = {m.name: m for m in (
    explicit_method(DOPRI5),
    explicit_method(TSIT5, value=tsit5_value),
    explicit_method(VERN7),
    explicit_method(VERN9),
    # SciPy's RK23 and DOP853: its I-controller and first step, for the orders it gives them
    explicit_method(RK23, controller("i", RK23.error_order), start_order=RK23.error_order),
    explicit_method(DOP853, controller("i", 7), start_order=7),
    Method("rosenbrock23", "adaptive", 2, rosenbrock23_method_attempt,
           rosenbrock23_method_value, rosenbrock23_control, implicit=True),
    Method("rodas5p", "adaptive", 5, rodas5p_attempt, rodas5p_value, rodas5p_control,
           implicit=True),
    Method("rk4", "fixed", 4, step=rk4),
    Method("euler", "fixed", 1, step=euler),
    Method("euler_maruyama", "stochastic", 1, step=euler_maruyama),
)}
