"""``method="rodas5p"`` (issue 29): Steinebach's fifth-order, stiffly accurate Rosenbrock
method, its Jacobian from ``hawk.jacobian``: its order on fixed steps, Robertson's problem
against SciPy's Radau with far fewer steps than rosenbrock23, its interpolant at recorded
times and at events, and every backend equal to the reference executor."""

from __future__ import annotations

import math

import numpy as np
import pytest

import eagle
import eagle.ode
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import adaptive_bindings, assert_adaptive_run_matches_reference
from hawk.ode.rodas import rodas5p_attempt
from test_stiff import _robertson_rates, relaxation, robertson

scipy_integrate = pytest.importorskip("scipy.integrate")


@hawk.kernel
def fixed_rodas(lam: hawk.Param, h: hawk.Param, t_end: hawk.Param,
                terminated: hawk.Terminated, u: hawk.Mutable[hawk.Scalar],
                f0: hawk.Mutable[hawk.Scalar], t: hawk.Mutable[hawk.Scalar]):
    u, _, _, f0 = rodas5p_attempt(relaxation, u, f0, t, h, lam)
    t += h
    terminated = t >= t_end - 0.5 * h


def test_the_global_error_falls_at_fifth_order():
    """Fixed steps h on u = cos t (u' = lam (u - cos t) - sin t from u(0) = 1, to t = 4): the
    fitted slope of the error against h is 5 within 0.5 at lam = -1 (measured 5.0)."""
    sizes = np.array([0.4, 0.2, 0.1, 0.05])
    errors = []
    for h in sizes:
        state = dict(u=np.ones(1), f0=np.array([0.0]), t=np.zeros(1))
        eagle.until_done(eagle.deploy(fixed_rodas, "cpu"), max_steps=1000, lam=-1.0, h=h,
                         t_end=4.0, **state).run()
        errors.append(abs(state["u"][0] - math.cos(state["t"][0])))
    slope = np.polyfit(np.log(sizes), np.log(errors), 1)[0]
    assert 4.5 < slope < 5.5, (slope, errors)


def test_robertson_to_1e5_matches_radau_in_far_fewer_steps_than_rosenbrock23():
    """Robertson with randomised rates at rtol 1e-6 / atol 1e-10, saved at six times, within
    a few tolerance scales of Radau at 1e-10, mass kept; at rtol 1e-8 rodas5p needs a fraction
    of rosenbrock23's steps (order 5 against 2)."""
    n = 20
    k = _robertson_rates(n)
    u0 = np.vstack([np.ones(n), np.zeros(n), np.zeros(n)])
    rtol, atol = 1e-6, 1e-10
    sol = eagle.ode.solve(robertson, u0, (0.0, 1e5), p=k, method="rodas5p", rtol=rtol,
                          atol=atol, saveat=(0.0, 1e5, 6))
    assert (sol.status == 1).all()
    np.testing.assert_allclose(sol.u.sum(axis=0), 1.0, rtol=0, atol=1e-12)
    worst = 0.0
    for i in (0, 7, 19):
        ref = scipy_integrate.solve_ivp(
            lambda t, y, k=k[:, i]: [-k[0] * y[0] + k[2] * y[1] * y[2],
                                     k[0] * y[0] - k[1] * y[1] ** 2 - k[2] * y[1] * y[2],
                                     k[1] * y[1] ** 2],
            (0.0, 1e5), u0[:, i], method="Radau", rtol=1e-10, atol=1e-14,
            t_eval=np.linspace(0.0, 1e5, 6))
        worst = max(worst, (np.abs(sol.saved[:, :, i] - ref.y.T)
                            / (atol + rtol * np.abs(ref.y.T))).max())
    assert worst < 20.0, worst
    tight = dict(p=k, rtol=1e-8, atol=1e-12)
    fifth = eagle.ode.solve(robertson, u0, (0.0, 1e5), method="rodas5p", **tight)
    second = eagle.ode.solve(robertson, u0, (0.0, 1e5), method="rosenbrock23", **tight)
    assert fifth.accepted.sum() < 0.1 * second.accepted.sum(), (fifth.accepted.mean(),
                                                                  second.accepted.mean())


def test_a_stiff_scalar_state_and_its_saved_values_follow_the_slow_manifold():
    """u' = lam (u - cos t) - sin t at lam = -1e3 ... -1e7: the end on u = cos t to 1e-9, in
    fewer steps the stiffer it is (51, 16, 10 measured: the fast mode is damped, L-stability).
    The values recorded inside steps come from the third-degree interpolant: 5e-9 off at
    lam = -1e3, but a step of 0.3 (lam = -1e7) leaves them 9.4e-5 off (OrdinaryDiffEq's
    Rodas5Pr has a corrected interpolant for this; bound max_step for dense values)."""
    lam = np.array([-1e3, -1e5, -1e7])
    sol = eagle.ode.solve(relaxation, np.full(3, 1.0), (0.0, 3.0), p=lam, method="rodas5p",
                          rtol=1e-8, atol=1e-10, saveat=(0.1, 2.9, 15))
    np.testing.assert_allclose(sol.u, math.cos(3.0), atol=1e-9)
    assert list(np.argsort(sol.accepted)) == [2, 1, 0] and sol.accepted.max() < 100
    off = np.abs(sol.saved - np.cos(sol.ts)[:, None]).max(axis=0)
    assert off[0] < 1e-7 and off.max() < 3e-4, off
    bounded = eagle.ode.solve(relaxation, np.full(3, 1.0), (0.0, 3.0), p=lam,
                              method="rodas5p", rtol=1e-8, atol=1e-10, saveat=(0.1, 2.9, 15),
                              max_step=0.02)
    assert np.abs(bounded.saved - np.cos(bounded.ts)[:, None]).max() < 1e-7


@hawk.func
def _fall(u, t, g):
    return hawk.vec2(u[1], -g)


@hawk.func
def _height(u, t, g):
    return u[0]


def test_an_event_is_located_on_the_interpolant():
    """A dropped ball's landing, sqrt(2 h0 / g), located on rodas5p's interpolant."""
    h0 = np.array([1.0, 5.0, 20.0])
    sol = eagle.ode.solve(_fall, np.vstack([h0, np.zeros(3)]), (0.0, 100.0), p=9.81,
                          method="rodas5p", rtol=1e-10, atol=1e-12, event=_height)
    assert (sol.status == 2).all()
    np.testing.assert_allclose(sol.t, np.sqrt(2 * h0 / 9.81), rtol=1e-10)


def test_rodas_kernels_equal_the_reference_on_every_backend(target):  # noqa: F811
    n = 100
    k = _robertson_rates(n)
    kernel = hawk.ode.dopri5_kernel(robertson, hawk.Vec3, hawk.Vec3, saveat=True,
                                    method="rodas5p")
    bindings = adaptive_bindings(k, np.vstack([np.ones(n), np.zeros(n), np.zeros(n)]),
                                 np.vstack([-k[0], k[0], np.zeros(n)]), t_end=10.0, rtol=1e-6,
                                 atol=1e-10, h=1e-4, save_every=2.0, save_count=6)
    assert_adaptive_run_matches_reference(target, kernel, bindings, 2000)


def test_the_rodas_kernel_compiles_for_the_gpu_with_nvrtc():
    nvrtc = pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.emit import emit_cuda

    kernel = hawk.ode.dopri5_kernel(robertson, hawk.Vec3, hawk.Vec3, saveat=True,
                                    method="rodas5p")
    assert nvrtc.compile_source(emit_cuda(kernel.specialize({})), "sm_90")[:4] == b"\x7fELF"


@hawk.func
def _robertson_jacobian(u, t, k):
    return hawk.matrix((-k[0], k[2] * u[2], k[2] * u[1]),
                       (k[0], -2.0 * k[1] * u[1] - k[2] * u[2], -k[2] * u[1]),
                       (0.0, 2.0 * k[1] * u[1], 0.0))


@hawk.func
def _no_coupling(u, t, k):
    return hawk.matrix((-k[0], 0.0, 0.0), (0.0, -k[2] * u[2], 0.0), (0.0, 0.0, 0.0))


@pytest.mark.parametrize("method", eagle.ode.IMPLICIT)  # the registry's
def test_a_jacobian_the_user_gives_is_used(method):
    """jac=: Robertson's analytic Jacobian gives hawk.jacobian's solution (the same steps, the
    end within 1e-9 relative: only rounding differs); a Jacobian without the coupling terms
    changes the steps (so it is the one used) yet still converges; an explicit method or a
    sensitivity run refuses it by name."""
    n = 8
    k = _robertson_rates(n)
    u0 = np.vstack([np.ones(n), np.zeros(n), np.zeros(n)])
    options = dict(p=k, method=method, rtol=1e-6, atol=1e-10)
    exact = eagle.ode.solve(robertson, u0, (0.0, 1e3), **options)
    given = eagle.ode.solve(robertson, u0, (0.0, 1e3), jac=_robertson_jacobian, **options)
    assert np.abs(given.accepted - exact.accepted).max() <= 1
    np.testing.assert_allclose(given.u, exact.u, rtol=1e-9, atol=1e-15)
    rough = eagle.ode.solve(robertson, u0, (0.0, 1e3), jac=_no_coupling, max_steps=200_000,
                            **options)
    assert not np.array_equal(rough.accepted, exact.accepted)
    with pytest.raises(ValueError, match="jac is for the Rosenbrock methods"):
        eagle.ode.solve(robertson, u0, (0.0, 1.0), p=k, jac=_robertson_jacobian)
    with pytest.raises(ValueError, match="does not go with jac"):
        eagle.ode.solve(robertson, u0, (0.0, 1.0), p=k, method=method,
                        jac=_robertson_jacobian, sensitivity="p")
