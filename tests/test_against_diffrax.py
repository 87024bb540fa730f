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


def test_robertson_to_1e5_agrees_with_kvaerno5_as_with_radau():
    """The stiff end state at t = 1e5 (rtol 1e-6, atol 1e-10, as tests/test_stiff.py checks
    against Radau): within a small factor of the tolerance of diffrax's Kvaerno5 at rtol
    1e-10, with the steps each took printed (661 and 2,755; 42.8 tolerance scales apart)."""
    k = np.array([0.04, 3e7, 1e4])
    u0 = np.array([[1.0], [0.0], [0.0]])
    ours = eagle.ode.solve(robertson, u0, (0.0, 1e5), p=k, method="rosenbrock23", rtol=1e-6,
                           atol=1e-10)
    sol = diffrax.diffeqsolve(diffrax.ODETerm(_robertson_jax), diffrax.Kvaerno5(), 0.0, 1e5,
                              None, jnp.asarray(u0[:, 0]), args=k,
                              stepsize_controller=diffrax.PIDController(rtol=1e-10,
                                                                        atol=1e-14),
                              max_steps=100_000)
    reference = np.asarray(sol.ys[-1])
    scaled = np.abs(ours.u[:, 0] - reference) / (1e-10 + 1e-6 * np.abs(reference))
    print(f"rosenbrock23: {int(ours.accepted[0])} steps, Kvaerno5 at 1e-10: "
          f"{int(sol.stats['num_accepted_steps'])}; largest error {scaled.max():.1f} "
          "tolerance scales")
    assert scaled.max() < 100  # order 2: the same bound tests/test_stiff.py holds to Radau
