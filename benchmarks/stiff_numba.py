"""Hand-written Numba peers of eagle's stiff methods for a model of any size (issue 42).

``stiff_peers.rosenbrock23_numba`` is the peer for Robertson's three states, every component a
scalar local. At 20 to 64 states that style no longer fits a hand-written code: here the state,
the stages, the Jacobian and ``W`` are small arrays per member (allocated once per member,
nothing allocated per step), and the model is two ``@njit`` functions:

* ``rhs(y, p, out)``: ``out = f(y)`` for the state ``y`` (k,) and the member's parameters ``p``
  (m,) (autonomous models only: ``df/dt`` is left out, as ``stiff_peers`` does; eagle adds
  ``h d * 0``);
* ``jac(y, p, jac_out)``: the analytic ``df/dy`` into ``jac_out`` (k, k), writing its nonzero
  entries only (the array is zeroed once per member: the pattern is the model's, fixed).

``make_peers(model, rhs, jac)`` gives both integrators of that model by name, each with
``ode_peers.dopri5_numba``'s signature (``ode_peers.solve_numba(..., integrator=...)``):

* ``rosenbrock23``: eagle's ``method="rosenbrock23"`` (``hawk.ode.rosenbrock``) step for step,
  the same step, controller, initial step and error norm as ``stiff_peers.rosenbrock23_numba``
  (its docstring lists them) on arrays;
* ``rodas5p``: eagle's ``method="rodas5p"`` (``hawk.ode.rodas``, Steinebach's coefficients,
  OrdinaryDiffEq's formulation with ``W = I / (h gamma) - J``): stage ``s`` at ``u + sum_j A_sj
  k_j``, right-hand side ``f(...) + (sum_j C_sj k_j) / h``, ``u_new = u + sum_j A_8j k_j + k_8``,
  the error ``k_8``; the I-controller ``h * clip(0.9 err^(-1/5), 0.2, 6)`` (no growth after a
  rejection, at most ``0.9 h`` on one) and Hairer's initial step with exponent 1/5.

Both factor ``W`` once per step (``lu_factor``: Gaussian elimination with partial pivoting, the
first largest ``|a[i][k]|`` as pivot, as LAPACK's ``getrf`` and ``hawk.linalg``; a zero pivot's
column gets factor 0), and apply the factors to each stage (``lu_solve``): a dense LU, as a
Numba user writes one without a banded solver, ``k^3 / 3`` multiply-adds per step. The sums run
in eagle's order (left to right over stages and components), so the step counts are eagle's.
``@njit(parallel=True, cache=True)``, a ``prange`` over members, no fastmath.

``brusselator_rhs`` and ``brusselator_jac`` are ``stiff_models``' Brusselator (one parameter:
the diffusion ``a``), in the arithmetic order of ``stiff_models.brusselator_source``, and
``BRUSSELATOR`` its peers (``{method: integrator}``).
"""

from __future__ import annotations

import hashlib
import inspect
import math
from pathlib import Path

import numpy as np
import peer_numba
from numba import njit

from hawk.ode import rodas

__all__ = ["lu_factor", "lu_solve", "make_peers", "brusselator_rhs", "brusselator_jac",
           "BRUSSELATOR"]

# hawk.ode.rosenbrock's and hawk.ode.control's constants
D23 = 1.0 / (2.0 + math.sqrt(2.0))
E32 = 6.0 + math.sqrt(2.0)
SAFE, FAC_MIN = 0.9, 0.2
FAC_MAX_23, FAC_MAX_RODAS = 5.0, rodas.FAC_MAX
EXPO_23, EXPO_RODAS = -1.0 / 3, -1.0 / 5  # controller("i", order): -1 / (order + 1)
SMALLEST_STEP = 10 * 2.0**-52  # hawk.ode.kernels: a member whose step falls below gives up
GAMMA = rodas.GAMMA
STAGES = rodas.STAGES


def _square(rows) -> tuple:
    """``hawk.ode.rodas``' ragged rows of weights as one flat tuple, row ``s`` column ``j`` at
    ``s * STAGES + j`` (Numba indexes a homogeneous tuple at run time and, unlike a global
    array, can cache the code that reads it)."""
    return tuple(float(row[j]) if j < len(row) else 0.0 for row in rows for j in range(STAGES))


RODAS_A, RODAS_C = _square(rodas.A), _square(rodas.C)
# every weight a stage uses is nonzero (eagle skips zero weights; here none is skipped)
assert all(w != 0.0 for row in rodas.A + rodas.C for w in row)


@njit(nogil=True, error_model="numpy", cache=True)
def lu_factor(w, perm):
    """Factor ``w`` (k, k) in place: the upper triangle, each row's factor below the pivot;
    ``perm[j]`` the row swapped with row ``j`` at column ``j``."""
    k = w.shape[0]
    for j in range(k):
        p = j
        big = abs(w[j, j])
        for i in range(j + 1, k):
            if abs(w[i, j]) > big:
                p, big = i, abs(w[i, j])
        perm[j] = p
        if p != j:
            for c in range(j, k):
                w[j, c], w[p, c] = w[p, c], w[j, c]
        pivot = w[j, j]
        for i in range(j + 1, k):
            f = w[i, j] / pivot if pivot != 0.0 else 0.0
            w[i, j] = f
            for c in range(j + 1, k):
                w[i, c] = w[i, c] - f * w[j, c]


@njit(nogil=True, error_model="numpy", cache=True)
def lu_solve(w, perm, b):
    """Overwrite ``b`` (k,) with ``x``, ``a x = b``, for ``w, perm = lu_factor(a)``."""
    k = w.shape[0]
    for j in range(k):
        p = perm[j]
        if p != j:
            b[j], b[p] = b[p], b[j]
        for i in range(j + 1, k):
            b[i] = b[i] - w[i, j] * b[j]
    for i in range(k - 1, -1, -1):
        value = b[i]
        for c in range(i + 1, k):
            value = value - w[i, c] * b[c]
        b[i] = value / w[i, i]


@njit(inline="always")
def _rms(total, k):
    return math.sqrt(total / k)


@njit(nogil=True, error_model="numpy")
def _hinit(rhs, t0, t1, y, f0, p, rtol, atol, scratch, probe):
    """``hawk.ode.start.initial_step`` with the exponent 1/5 (both methods')."""
    k = y.shape[0]
    d0 = d1 = 0.0
    for c in range(k):
        s = atol + abs(y[c]) * rtol
        d0 += (y[c] / s) * (y[c] / s)
        d1 += (f0[c] / s) * (f0[c] / s)
    d0, d1 = _rms(d0, k), _rms(d1, k)
    span = t1 - t0
    h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
    h0 = min(h0, span)
    for c in range(k):
        scratch[c] = y[c] + h0 * f0[c]
    rhs(scratch, p, probe)
    d2 = 0.0
    for c in range(k):
        q = (probe[c] - f0[c]) / (atol + abs(y[c]) * rtol)
        d2 += q * q
    d2 = _rms(d2, k) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** 0.2
    return min(min(100.0 * h0, h1), span)

@njit(nogil=True, error_model="numpy", cache=True)
def _control(err, h, hs, after_reject, expo, fac_max):
    """``(accepted, h_next)``: ``hawk.ode.control.i_control`` and the kernel's rule that a
    step shortened to land on ``t1`` does not shrink the next one."""
    fac = min(fac_max, max(FAC_MIN, SAFE * err ** expo))
    if after_reject:
        fac = min(fac, 1.0)
    if err <= 1.0:
        h_next = hs * fac
        if hs < h:
            h_next = max(h_next, h)
        return True, h_next
    return False, hs * min(fac, 0.9)


@njit(nogil=True, error_model="numpy")
def rosenbrock23_member(rhs, jac, i, u0, p, t0, t1, rtol, atol, max_steps, u, t_out, accepted,
                        rejected, done):
    """Member ``i`` of ``u0`` (k, n), parameters ``p`` (m, n), from ``t0`` to ``t1``, into
    ``u[:, i]`` and the counts' ``[i]``."""
    k = u0.shape[0]
    pm = p[:, i].copy()
    y, f0 = u0[:, i].copy(), np.empty(k)
    ys, g, yn, fn = np.empty(k), np.empty(k), np.empty(k), np.empty(k)
    q1, q2, q3 = np.empty(k), np.empty(k), np.empty(k)
    J, W, perm = np.zeros((k, k)), np.empty((k, k)), np.empty(k, np.int64)
    rhs(y, pm, f0)
    h = _hinit(rhs, t0, t1, y, f0, pm, rtol, atol, ys, g)
    t, after_reject, n_acc, n_rej = t0, False, 0, 0
    while t < t1 and n_acc + n_rej < max_steps:
        hs = min(h, t1 - t)
        t_new = t1 if hs == t1 - t else t + hs
        jac(y, pm, J)
        hd = hs * D23
        for r in range(k):
            for c in range(k):
                W[r, c] = (1.0 if r == c else 0.0) - hd * J[r, c]
        lu_factor(W, perm)
        q1[:] = f0
        lu_solve(W, perm, q1)
        half = 0.5 * hs
        for c in range(k):
            ys[c] = y[c] + half * q1[c]
        rhs(ys, pm, g)
        for c in range(k):
            q2[c] = g[c] - q1[c]
        lu_solve(W, perm, q2)
        for c in range(k):
            q2[c] = q2[c] + q1[c]
            yn[c] = y[c] + hs * q2[c]
        rhs(yn, pm, fn)
        for c in range(k):
            q3[c] = fn[c] - E32 * (q2[c] - g[c]) - 2.0 * (q1[c] - f0[c])
        lu_solve(W, perm, q3)
        h6 = hs / 6.0
        total = 0.0
        for c in range(k):
            e = (h6 * (q1[c] - 2.0 * q2[c] + q3[c])
                 / (atol + rtol * max(abs(y[c]), abs(yn[c]))))
            total += e * e
        ok, h_next = _control(_rms(total, k), h, hs, after_reject, EXPO_23, FAC_MAX_23)
        t_start = t
        if ok:
            t, after_reject, n_acc = t_new, False, n_acc + 1
            y[:], f0[:] = yn, fn
        else:
            after_reject, n_rej = True, n_rej + 1
        h = h_next
        if not h > SMALLEST_STEP * abs(t_start):  # eagle's STATUS_FAILED
            break
    u[:, i] = y
    t_out[i], accepted[i], rejected[i], done[i] = t, n_acc, n_rej, t >= t1


@njit(nogil=True, error_model="numpy")
def rodas5p_member(rhs, jac, i, u0, p, t0, t1, rtol, atol, max_steps, u, t_out, accepted,
                   rejected, done):
    """Member ``i`` of ``u0`` (k, n), parameters ``p`` (m, n), from ``t0`` to ``t1``, into
    ``u[:, i]`` and the counts' ``[i]``."""
    k = u0.shape[0]
    pm = p[:, i].copy()
    y, f0 = u0[:, i].copy(), np.empty(k)
    ys, du, yn, fn = np.empty(k), np.empty(k), np.empty(k), np.empty(k)
    ks = np.empty((STAGES, k))
    J, W, perm = np.zeros((k, k)), np.empty((k, k)), np.empty(k, np.int64)
    rhs(y, pm, f0)
    h = _hinit(rhs, t0, t1, y, f0, pm, rtol, atol, ys, du)
    t, after_reject, n_acc, n_rej = t0, False, 0, 0
    while t < t1 and n_acc + n_rej < max_steps:
        hs = min(h, t1 - t)
        t_new = t1 if hs == t1 - t else t + hs
        jac(y, pm, J)
        scale = 1.0 / (hs * GAMMA)
        for r in range(k):
            for c in range(k):
                W[r, c] = (scale if r == c else 0.0) - J[r, c]
        lu_factor(W, perm)
        ks[0, :] = f0
        lu_solve(W, perm, ks[0])
        for s in range(1, STAGES):
            for c in range(k):
                acc = RODAS_A[s * STAGES] * ks[0, c]
                for j in range(1, s):
                    acc = acc + RODAS_A[s * STAGES + j] * ks[j, c]
                ys[c] = y[c] + acc
            rhs(ys, pm, du)
            for c in range(k):
                acc = RODAS_C[s * STAGES] * ks[0, c]
                for j in range(1, s):
                    acc = acc + RODAS_C[s * STAGES + j] * ks[j, c]
                ks[s, c] = du[c] + acc / hs
            lu_solve(W, perm, ks[s])
        total = 0.0
        for c in range(k):
            acc = RODAS_A[(STAGES - 1) * STAGES] * ks[0, c]
            for j in range(1, STAGES - 1):
                acc = acc + RODAS_A[(STAGES - 1) * STAGES + j] * ks[j, c]
            yn[c] = (y[c] + acc) + ks[STAGES - 1, c]
            e = ks[STAGES - 1, c] / (atol + rtol * max(abs(y[c]), abs(yn[c])))
            total += e * e
        ok, h_next = _control(_rms(total, k), h, hs, after_reject, EXPO_RODAS,
                             FAC_MAX_RODAS)
        t_start = t
        if ok:
            rhs(yn, pm, fn)
            t, after_reject, n_acc = t_new, False, n_acc + 1
            y[:], f0[:] = yn, fn
        else:
            after_reject, n_rej = True, n_rej + 1
        h = h_next
        if not h > SMALLEST_STEP * abs(t_start):  # eagle's STATUS_FAILED
            break
    u[:, i] = y
    t_out[i], accepted[i], rejected[i], done[i] = t, n_acc, n_rej, t >= t1

# The parallel driver of one model and one method is generated, with the model's functions as
# its module's globals, so that Numba caches it: code that takes a function as an argument, or a
# closure over one, cannot be cached ("dynamic globals"). ``_hinit`` and the member's function
# are copied into it from this file with their ``rhs, jac`` parameters left out (``_bound``);
# the copy carries this file's and the model's file's hash, so that an edit compiles it again.
_DRIVER = """
from {model} import {rhs} as rhs, {jac} as jac
from stiff_numba import (D23, E32, EXPO_23, EXPO_RODAS, FAC_MAX_23, FAC_MAX_RODAS, GAMMA,
                         RODAS_A, RODAS_C, SMALLEST_STEP, STAGES, _control, _rms, lu_factor,
                         lu_solve)

# stiff_numba.py and the model's file: {digest}
{functions}

@njit(parallel=True, nogil=True, error_model="numpy", cache=True)
def {method}(u0, p, t0, t1, rtol, atol, max_steps, u, t_out, accepted, rejected, done):
    for i in prange(u0.shape[1]):
        {method}_member(i, u0, p, t0, t1, rtol, atol, max_steps, u, t_out, accepted, rejected,
                        done)
"""


def _bound(function) -> str:
    """``function``'s source with the model's functions as globals instead of parameters."""
    source = inspect.getsource(function.py_func)
    for taken, left in (("(rhs, jac, i, ", "(i, "), ("_hinit(rhs, ", "_hinit(")):
        source = source.replace(taken, left)
    assert "rhs, " not in source.split(":", 1)[0], function  # the signature no longer takes it
    return source


def make_peers(model: str, rhs: str, jac: str) -> dict:
    """``{method: integrator}``: the integrators of the model whose ``rhs`` and ``jac`` (see
    the module docstring) are the ``@njit`` functions so named in the module ``model``
    (importable from ``benchmarks/``), each ``@njit(parallel=True, cache=True)`` with a
    ``prange`` over members; for each of eagle's implicit methods (``eagle.ode.IMPLICIT``)
    written here (a ``<method>_member`` function)."""
    import importlib

    import eagle.ode

    files = (Path(__file__), Path(importlib.import_module(model).__file__))
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]
    peers = {}
    for method in eagle.ode.IMPLICIT:
        member = globals().get(f"{method}_member")
        if member is None:
            continue
        functions = "\n\n".join(_bound(f) for f in (_hinit, member))
        source = _DRIVER.format(model=model, rhs=rhs, jac=jac, method=method, digest=digest,
                                functions=functions)
        peers[method] = getattr(peer_numba.load_source(source, f"{model}_{rhs}_{method}"),
                                method)
    return peers


# -- the Brusselator of stiff_models --------------------------------------------------------------


@njit(nogil=True, error_model="numpy", cache=True)
def brusselator_rhs(y, p, out):
    """``stiff_models.brusselator_source``'s right-hand side, ``p[0]`` the diffusion ``a``."""
    cells = y.shape[0] // 2
    d = p[0] * float((cells + 1) ** 2)
    for i in range(cells):
        u, v = y[2 * i], y[2 * i + 1]
        ul = 1.0 if i == 0 else y[2 * i - 2]
        ur = 1.0 if i == cells - 1 else y[2 * i + 2]
        vl = 3.0 if i == 0 else y[2 * i - 1]
        vr = 3.0 if i == cells - 1 else y[2 * i + 3]
        out[2 * i] = 1.0 + u * u * v - 4.0 * u + d * (ul - 2.0 * u + ur)
        out[2 * i + 1] = 3.0 * u - u * u * v + d * (vl - 2.0 * v + vr)


@njit(nogil=True, error_model="numpy", cache=True)
def brusselator_jac(y, p, jac_out):
    """Its Jacobian's nonzero entries (``stiff_models.brusselator_jacobian``'s), banded."""
    cells = y.shape[0] // 2
    d = p[0] * float((cells + 1) ** 2)
    for i in range(cells):
        u, v = y[2 * i], y[2 * i + 1]
        iu, iv = 2 * i, 2 * i + 1
        jac_out[iu, iu] = 2.0 * u * v - 4.0 - 2.0 * d
        jac_out[iu, iv] = u * u
        jac_out[iv, iu] = 3.0 - 2.0 * u * v
        jac_out[iv, iv] = -u * u - 2.0 * d
        if i > 0:
            jac_out[iu, iu - 2] = d
            jac_out[iv, iv - 2] = d
        if i < cells - 1:
            jac_out[iu, iu + 2] = d
            jac_out[iv, iv + 2] = d


BRUSSELATOR = make_peers("stiff_numba", "brusselator_rhs", "brusselator_jac")
