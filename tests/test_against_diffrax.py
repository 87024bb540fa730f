"""eagle's ODE solutions and sensitivities against diffrax, the JAX library a user would
otherwise differentiate through: ``jax.jacfwd`` of ``diffrax.diffeqsolve`` (forward mode,
``diffrax.ForwardMode``) on Lorenz and on Robertson's stiff problem, and diffrax's implicit
``Kvaerno5`` as a second reference beside SciPy's Radau for the stiff end states.

Slow tier: JAX traces and compiles each solve (several seconds apiece)."""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import eagle.ode
import hawk

diffrax = pytest.importorskip("diffrax")
jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

pytestmark = pytest.mark.slow


@hawk.func
def lorenz(u, t, p):
    return hawk.vec3(p[0] * (u[1] - u[0]), u[0] * (p[1] - u[2]) - u[1],
                     u[0] * u[1] - p[2] * u[2])


@hawk.func
def robertson(u, t, k):
    r1, r2, r3 = k[0] * u[0], k[1] * u[1] * u[1], k[2] * u[1] * u[2]
    return hawk.vec3(-r1 + r3, r1 - r2 - r3, r2)


def _lorenz_jax(t, u, p):
    return jnp.stack([p[0] * (u[1] - u[0]), u[0] * (p[1] - u[2]) - u[1],
                      u[0] * u[1] - p[2] * u[2]])


def _robertson_jax(t, u, k):
    r1, r2, r3 = k[0] * u[0], k[1] * u[1] * u[1], k[2] * u[1] * u[2]
    return jnp.stack([-r1 + r3, r1 - r2 - r3, r2])


def _diffrax_end(rhs, solver, t1, rtol, atol, max_steps=100_000):
    """``(u0, p) -> u(t1)`` by diffrax, differentiable forward (jacfwd)."""
    def end(u0, p):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(rhs), solver, 0.0, t1, None, u0, args=p,
                                  stepsize_controller=diffrax.PIDController(rtol=rtol,
                                                                            atol=atol),
                                  adjoint=diffrax.ForwardMode(), max_steps=max_steps)
        return sol.ys[-1]
    return end


def test_lorenz_sensitivities_match_jacfwd_through_diffrax():
    """d u(1) / d p and d u(1) / d u0 for four Lorenz members: eagle's forward sensitivity
    (dopri5, the tangent system under the same error control) against jax.jacfwd of
    diffrax's Tsit5 solve, both at rtol = atol = 1e-11 (they agreed to 3e-11 of the largest
    entry; the bound is 1e-8)."""
    p = np.array([10.0, 28.0, 8.0 / 3.0])
    u0 = np.array([[1.0, 0.5, -2.0, 5.0], [1.0, 1.5, 3.0, -4.0], [1.0, 20.0, 25.0, 30.0]])
    by_p = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, rtol=1e-11, atol=1e-11,
                           sensitivity="p")
    by_u0 = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, rtol=1e-11, atol=1e-11,
                            sensitivity="u0")
    end = jax.jit(_diffrax_end(_lorenz_jax, diffrax.Tsit5(), 1.0, 1e-11, 1e-11))
    d_p, d_u0 = jax.jit(jax.jacfwd(end, argnums=1)), jax.jit(jax.jacfwd(end, argnums=0))
    for i in range(4):
        start = jnp.asarray(u0[:, i])
        np.testing.assert_allclose(by_p.u[:, i], np.asarray(end(start, p)), rtol=1e-7)
        theirs_p, theirs_u0 = np.asarray(d_p(start, p)), np.asarray(d_u0(start, p))
        assert np.abs(by_p.du_dp[:, :, i] - theirs_p).max() < 1e-8 * np.abs(theirs_p).max()
        assert np.abs(by_u0.du_du0[:, :, i] - theirs_u0).max() \
            < 1e-8 * np.abs(theirs_u0).max()


def test_robertsons_sensitivities_match_jacfwd_through_diffrax_kvaerno5():
    """Robertson to t = 40 (through the fast transient): d u / d k by rosenbrock23's forward
    sensitivity (its Jacobian by hawk.jacobian, forward over forward) against jax.jacfwd of
    diffrax's Kvaerno5 at rtol 1e-10; rosenbrock23 is of order 2, so it runs at 1e-9 (about
    15,000 steps). They agreed to 2e-10 of each column's scale; the bound is 1e-7."""
    k = np.array([0.04, 3e7, 1e4])
    u0 = np.array([[1.0], [0.0], [0.0]])
    ours = eagle.ode.solve(robertson, u0, (0.0, 40.0), p=k, method="rosenbrock23", rtol=1e-9,
                           atol=1e-13, sensitivity="p")
    end = _diffrax_end(_robertson_jax, diffrax.Kvaerno5(), 40.0, 1e-10, 1e-14)
    theirs = np.asarray(jax.jit(jax.jacfwd(end, argnums=1))(jnp.asarray(u0[:, 0]), k))
    np.testing.assert_allclose(ours.u[:, 0], np.asarray(jax.jit(end)(u0[:, 0], k)),
                               rtol=1e-6, atol=1e-13)
    # each sensitivity column relative to its own scale (d/dk2 is ~1e-12, d/dk1 ~ 1)
    scale = np.abs(theirs).max(axis=0)
    assert (np.abs(ours.du_dp[:, :, 0] - theirs).max(axis=0) < 1e-7 * scale).all(), \
        (ours.du_dp[:, :, 0], theirs)


def _hires_jax(t, y, p):
    return jnp.stack([-1.71 * y[0] + 0.43 * y[1] + 8.32 * y[2] + 0.0007,
                      1.71 * y[0] - 8.75 * y[1],
                      -10.03 * y[2] + 0.43 * y[3] + 0.035 * y[4],
                      8.32 * y[1] + 1.71 * y[2] - 1.12 * y[3],
                      -1.745 * y[4] + 0.43 * y[5] + 0.43 * y[6],
                      -280.0 * y[5] * y[7] + 0.69 * y[3] + 1.71 * y[4] - 0.43 * y[5]
                      + 0.69 * y[6],
                      280.0 * y[5] * y[7] - 1.81 * y[6],
                      -280.0 * y[5] * y[7] + 1.81 * y[6]])


def _oregonator_jax(t, y, p):
    return jnp.stack([77.27 * (y[1] + y[0] * (1.0 - 8.375e-6 * y[0] - y[1])),
                      (y[2] - (1.0 + y[0]) * y[1]) / 77.27, 0.161 * (y[0] - y[2])])


def _van_der_pol_jax(t, u, mu):
    return jnp.stack([u[1], mu * (1.0 - u[0] * u[0]) * u[1] - u[0]])


def _stiff_set():
    """name: (hawk model, JAX model, u0, p, t1, atol, the largest error allowed in tolerance
    scales (atol + rtol |u|) at rtol 1e-6 against Radau at 1e-10: a few times the measured)."""
    import test_stiff as ts

    return {
        "robertson": (ts.robertson, _robertson_jax, [1.0, 0.0, 0.0],
                      np.array([0.04, 3e7, 1e4]), 1e5, 1e-10, 100.0),  # measured 42.8
        "van der pol 1000": (ts.van_der_pol, _van_der_pol_jax, [2.0, 0.0], 1000.0, 1700.0,
                             1e-8, 40.0),  # 10.6
        "hires": (ts.hires, _hires_jax, [1.0, 0, 0, 0, 0, 0, 0, 0.0057], 0.0, 321.8122,
                  1e-10, 30.0),  # 8.0
        "oregonator": (ts.oregonator, _oregonator_jax, [1.0, 2.0, 3.0], 0.0, 360.0, 1e-8,
                       1000.0),  # 368: a limit cycle's phase error (Kvaerno5: 7.8)
    }


@pytest.mark.parametrize("method", eagle.ode.IMPLICIT)  # the registry's
@pytest.mark.parametrize("name", ["robertson", "van der pol 1000", "hires", "oregonator"])
def test_the_stiff_test_set_against_radau_and_kvaerno5(name, method):
    """Hairer and Wanner's stiff problems at rtol 1e-6: eagle's rosenbrock23 and diffrax's
    Kvaerno5 (a PID controller at the same tolerances) each against SciPy's Radau at rtol
    1e-10, in tolerance scales; the steps each took (Radau's at 1e-6 too) printed. A
    second-order method is held to a larger factor than Kvaerno5's fifth order: the bounds
    are a few times what rosenbrock23 measured. rodas5p (order 5) measured 0.37, 0.09, 0.37 and
    0.40 tolerance scales in 97, 513, 202 and 860 steps, fewer than Kvaerno5 (343, 2078, 973,
    5550) and Radau at the same tolerance (188, 796, 210, 1041)."""
    model, model_jax, u0, p, t1, atol, bound = _stiff_set()[name]
    u0 = np.asarray(u0, dtype=float)
    ours = eagle.ode.solve(model, np.repeat(u0[:, None], 4, axis=1), (0.0, t1), p=p,
                           method=method, rtol=1e-6, atol=atol)
    theirs = diffrax.diffeqsolve(diffrax.ODETerm(model_jax), diffrax.Kvaerno5(), 0.0, t1,
                                 None, jnp.asarray(u0), args=p, max_steps=200_000,
                                 stepsize_controller=diffrax.PIDController(rtol=1e-6,
                                                                           atol=atol))
    from scipy.integrate import solve_ivp

    def rhs(t, y):
        return np.asarray(model_jax(t, y, p))

    radau = solve_ivp(rhs, (0.0, t1), u0, method="Radau", rtol=1e-6, atol=atol)
    reference = solve_ivp(rhs, (0.0, t1), u0, method="Radau", rtol=1e-10,
                          atol=atol * 1e-4).y[:, -1]
    scale = atol + 1e-6 * np.abs(reference)
    ours_err = (np.abs(ours.u[:, 0] - reference) / scale).max()
    theirs_err = (np.abs(np.asarray(theirs.ys[-1]) - reference) / scale).max()
    print(f"{name}: {method} {int(ours.accepted[0])} steps, {ours_err:.3g} tolerance "
          f"scales; Kvaerno5 {int(theirs.stats['num_accepted_steps'])} steps, "
          f"{theirs_err:.3g}; Radau at 1e-6 {radau.t.size - 1} steps")
    assert (ours.status == 1).all() and ours_err < bound
