"""Integrators of ordinary and stochastic differential equations, written in hawk.

Two ways to use them:

- **From your own kernel**: the integrators are ``@hawk.func`` functions that take the model's
  right-hand side as a func ``f(u, t, p)``: ``euler``, ``rk4``, ``euler_maruyama`` (fixed
  steps), and ``dopri5_step`` (one adaptive Dormand-Prince 5(4) step with per-sample error
  control; start it with ``dopri5_start``), with ``dense_coefficients``/``dense_value`` (the
  step's interpolant) and ``locate`` (an event's time on it); ``tsit5_attempt``,
  ``vern7_attempt`` and ``vern9_attempt`` (other explicit pairs, each with its interpolant;
  Verner's with ``pi_control``'s exponents for their orders); ``rosenbrock23_attempt`` (one
  linearly implicit step for stiff problems, its Jacobian by ``hawk.jacobian``).
- **Methods as data**: ``METHODS``, the one registry (name -> ``Method``) every layer reads;
  an explicit method is a ``ButcherTableau`` (``hawk.ode.tableaus``: checked when defined)
  run by one generic step (``explicit_attempt``) and interpolant (``polynomial_value``), with
  a controller of ``hawk.ode.control`` (``pi_control``, ``i_control``) for its order.
- **Ready-made kernels**: ``dopri5_kernel``, ``rosenbrock23_kernel``, ``fixed_step_kernel`` and
  ``sde_kernel`` build the ensemble kernel for a right-hand side; ``eagle.ode.solve`` binds
  one to arrays and runs it.

The state ``u`` is a number or a vector (``Vec2`` ... ``Vector[128]``); ``p`` is whatever ``f``
takes.
"""

from .control import controller, i_control, pi_control
from .dopri5 import (
    BETA,
    C_START,
    FAC_MAX,
    FAC_MIN,
    SAFE,
    dense_coefficients,
    dense_value,
    dopri5_attempt,
    dopri5_control,
    dopri5_start,
    dopri5_step,
    error_norm,
    rms,
)
from .events import crossed, first_crossing, locate
from .explicit import explicit_attempt, explicit_stages, polynomial_value
from .fixed import euler, euler_maruyama, rk4
from .kernels import (
    FIXED_METHODS,
    MAX_TABLES,
    STATUS_DONE,
    STATUS_EVENT,
    STATUS_FAILED,
    STATUS_LOCATING,
    STATUS_RUNNING,
    dopri5_kernel,
    dopri5_start_kernel,
    fixed_step_kernel,
    rosenbrock23_kernel,
    sde_kernel,
)
from .linsolve import LINSOLVES, refined_solve, sparse_stage_solve
from .methods import METHODS, Method
from .rodas import rodas5p_attempt, rodas5p_control, rodas5p_value
from .rosenbrock import (
    automatic_jacobian,
    rosenbrock23_attempt,
    rosenbrock23_control,
    rosenbrock23_value,
)
from .sensitivity import event_correction_kernel, forward_sensitivity
from .tableau import ButcherTableau
from .tsit5 import tsit5_attempt, tsit5_value
from .verner import (
    vern7_attempt,
    vern7_control,
    vern7_value,
    vern9_attempt,
    vern9_control,
    vern9_value,
)

__all__ = [
    "euler", "rk4", "euler_maruyama", "dopri5_step", "dopri5_start", "dopri5_attempt",
    "dopri5_control", "dense_coefficients", "dense_value", "error_norm", "rms", "crossed",
    "first_crossing",
    "locate", "dopri5_kernel", "dopri5_start_kernel", "fixed_step_kernel", "sde_kernel",
    "rosenbrock23_kernel", "rosenbrock23_attempt", "rosenbrock23_control", "rosenbrock23_value",
    "rodas5p_attempt", "rodas5p_control", "rodas5p_value", "automatic_jacobian",
    "refined_solve", "sparse_stage_solve", "LINSOLVES", "forward_sensitivity",
    "event_correction_kernel", "tsit5_attempt", "tsit5_value",
    "vern7_attempt", "vern7_value", "vern7_control", "vern9_attempt", "vern9_value",
    "vern9_control", "pi_control", "i_control", "controller", "METHODS", "Method",
    "ButcherTableau", "explicit_attempt", "explicit_stages", "polynomial_value",
    "STATUS_RUNNING", "STATUS_DONE", "STATUS_EVENT", "STATUS_FAILED", "STATUS_LOCATING",
    "FIXED_METHODS",
    "MAX_TABLES", "C_START", "BETA", "SAFE", "FAC_MIN", "FAC_MAX",
]  # fmt: skip
