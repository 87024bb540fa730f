"""Solve an ensemble of differential equations in one call: ``eagle.ode.solve``.

It builds the ensemble kernel for the model (``hawk.ode``'s factories), allocates the
integrator's per-sample state next to the user's initial values (NumPy arrays run on the CPU,
CuPy arrays on their GPU), prepares the first step and runs the kernel until every sample is
done. Nothing here is new numerics: the kernels are hawk code, checked against the reference
executor like any other.

``solver`` is the call itself, ``adjoint`` its reverse-mode gradients (``solve(...,
adjoint=True)``, ``Solution.vjp``), ``fitting`` the sum of squares and its gradient for
``scipy.optimize``, ``arguments`` checks what the user passed (every refusal names
the user's argument, before anything is allocated or run), ``probes`` types the user's funcs
alone so that a wrong shape is refused in the user's words, ``model_args`` packs ``args=(...)``
into the one ``p`` the kernels bind and unpacks it for the user's funcs, ``events`` makes
SciPy's list of events one vector-valued event and locates a pure recording's events after the
run.
"""

from .adjoint import Gradients
from .fitting import loss_and_grad
from .solver import ADAPTIVE, IMPLICIT, METHODS, Solution, solve

__all__ = ["solve", "Solution", "METHODS", "ADAPTIVE", "IMPLICIT", "loss_and_grad",
           "Gradients"]
