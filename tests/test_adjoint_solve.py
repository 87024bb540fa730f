"""The adjoint of an ensemble solve (issue 44, the solve's part): ``solve(..., adjoint=True)``
records each sample's accepted steps with the plain solve's end state bit for bit, and
``Solution.vjp(du)`` walks them backward (``eagle.ode.adjoint``, ``hawk.ode.adjoint``).

Checked against finite differences of the same accepted steps replayed (the exact derivative
of the computed step map: to 1e-7 relative, the differences' own error), against
``sensitivity="p"``/``"u0"`` contracted with the same cotangent (to the tolerances' scale: the
adjoint holds the steps fixed, the tangent system is under error control), against
``jax.grad`` through ``diffrax.diffeqsolve`` (slow tier), and what it cannot take refused by
name before anything runs."""

# No `from __future__ import annotations`: the replay kernel's annotations name its factory's
# arguments, which hawk resolves from the function's closure.
import math
import re

import numpy as np
import pytest

import eagle
import eagle.ode
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import assert_matches_reference, reference_run
from hawk import Mutable, Scalar, Table, Terminated, Vector
from hawk.ode.adjoint import ADJOINT_METHODS, backward_kernel, recording_kernel, step_map
from hawk.ode.kernels import _with_tables
from test_rodas import _robertson_jacobian


@hawk.func
def lorenz(u, t, p):
    return hawk.vec3(p[0] * (u[1] - u[0]), u[0] * (p[1] - u[2]) - u[1],
                     u[0] * u[1] - p[2] * u[2])


@hawk.func
def decay(u, t, p):
    return -p * u


@hawk.func
def forced(u, t, p):
    return hawk.vec2(u[1], -p[0] * u[0] - p[1] * u[1] + p[2] * math.sin(t))


def _lorenz_start(n: int = 4):
    u0 = np.vstack([np.ones(n), np.linspace(0.5, 1.5, n), np.ones(n)])
    p = np.vstack([np.linspace(9.5, 10.5, n), np.full(n, 28.0), np.full(n, 8.0 / 3.0)])
    return u0, p


@pytest.mark.parametrize("saveat", [None, (0.0, 0.5, 7)])
@pytest.mark.parametrize("method", ADJOINT_METHODS)
def test_the_recording_solve_ends_where_the_plain_one_does_bit_for_bit(method, saveat):
    u0, p = _lorenz_start()
    plain = eagle.ode.solve(lorenz, u0, (0.0, 0.5), p=p, method=method, rtol=1e-7, atol=1e-7,
                            saveat=saveat)
    sol = eagle.ode.solve(lorenz, u0, (0.0, 0.5), p=p, method=method, rtol=1e-7, atol=1e-7,
                          saveat=saveat, adjoint=True)
    np.testing.assert_array_equal(sol.u, plain.u)
    if saveat is not None:
        np.testing.assert_array_equal(sol.saved, plain.saved)
    np.testing.assert_array_equal(sol.t, plain.t)
    np.testing.assert_array_equal(sol.accepted, plain.accepted)
    np.testing.assert_array_equal(sol.rejected, plain.rejected)
    steps_t, steps_h = sol.arrays["steps_t"], sol.arrays["steps_h"]
    for i in range(u0.shape[1]):  # the rows: the accepted steps, end to end
        k = int(sol.accepted[i])
        assert steps_t[0, i] == 0.0
        np.testing.assert_array_equal(steps_t[1:k, i], steps_t[:k - 1, i] + steps_h[:k - 1, i])
        assert abs(steps_t[k - 1, i] + steps_h[k - 1, i] - 0.5) < 1e-15
        np.testing.assert_array_equal(sol.arrays["steps_u"][0, :, i], u0[:, i])


def test_exponential_decay_has_its_exact_gradient():
    """u(T) = u0 exp(-p T): du/dp = -T u(T), du/du0 = exp(-p T), at rtol 1e-10."""
    n = 5
    p = np.linspace(0.5, 2.0, n)
    u0 = np.linspace(1.0, 2.0, n)
    sol = eagle.ode.solve(decay, u0, (0.0, 2.0), p=p, rtol=1e-10, atol=1e-12, adjoint=True)
    du = np.linspace(-1.0, 1.0, n)
    g = sol.vjp(du)
    assert g.p.shape == (n,) and g.u0.shape == (n,)
    np.testing.assert_allclose(g.p, -2.0 * u0 * np.exp(-2.0 * p) * du, rtol=1e-8)
    np.testing.assert_allclose(g.u0, np.exp(-2.0 * p) * du, rtol=1e-8)


def test_thousands_of_samples_of_different_lengths_each_get_their_own_gradient():
    """3,000 samples, each its own rate, start and end (5 to 300 accepted steps): every
    sample's backward pass reads its own rows (``hawk.sample_index``) however the CPU backend
    packs the live samples; checked against the exact gradient."""
    n = 3000
    rng = np.random.default_rng(5)
    p, u0, end = rng.uniform(0.1, 5.0, n), rng.uniform(0.5, 2.0, n), rng.uniform(0.5, 3.0, n)
    sol = eagle.ode.solve(decay, u0, (0.0, end), p=p, rtol=1e-10, atol=1e-14,
                          saveat=(0.0, 0.5, 3), adjoint=True)
    assert sol.accepted.min() < 10 and sol.accepted.max() > 200
    g = sol.vjp(np.ones(n))
    np.testing.assert_allclose(g.p, -end * u0 * np.exp(-end * p), rtol=1e-8)
    np.testing.assert_allclose(g.u0, np.exp(-end * p), rtol=1e-8)
    ts = np.array([0.0, 0.25, 0.5])[:, None]
    g = sol.vjp(dsaved=np.ones((3, n)))
    np.testing.assert_allclose(g.p, (-ts * u0 * np.exp(-ts * p)).sum(axis=0), rtol=1e-8)


def test_saved_states_have_their_exact_gradient_too():
    """u(t_j) = u0 exp(-p t_j) at 9 recorded times (two of them inside one step, one at t0):
    d/dp = -t_j u(t_j), d/du0 = exp(-p t_j), at rtol 1e-10 (through the interpolant)."""
    n = 4
    p = np.linspace(0.5, 2.0, n)
    u0 = np.linspace(1.0, 2.0, n)
    sol = eagle.ode.solve(decay, u0, (0.0, 2.0), p=p, rtol=1e-10, atol=1e-12,
                          saveat=(0.0, 2.0, 9), adjoint=True)
    rng = np.random.default_rng(3)
    dsaved, du = rng.normal(size=(9, n)), rng.normal(size=n)
    ts = np.linspace(0.0, 2.0, 9)[:, None]
    g = sol.vjp(dsaved=dsaved)
    np.testing.assert_allclose(g.p, (-ts * u0 * np.exp(-ts * p) * dsaved).sum(axis=0),
                               rtol=1e-8)
    np.testing.assert_allclose(g.u0, (np.exp(-ts * p) * dsaved).sum(axis=0), rtol=1e-8)
    both = sol.vjp(du, dsaved)
    alone = sol.vjp(du)
    np.testing.assert_allclose(both.p, g.p + alone.p, rtol=1e-12)
    np.testing.assert_allclose(both.u0, g.u0 + alone.u0, rtol=1e-12)


def test_several_saved_times_in_one_step_and_one_at_the_end():
    """At rtol 1e-5 a step passes up to 4 of 81 recorded times: each one's cotangent goes
    through the interpolant at its own theta (the exact gradient to the interpolant's
    accuracy), and the last, at t_end, is the end state itself (its cotangent is du's)."""
    n = 3
    p = np.array([0.5, 1.0, 1.5])
    sol = eagle.ode.solve(decay, np.ones(n), (0.0, 2.0), p=p, rtol=1e-5, atol=1e-8,
                          saveat=(0.0, 2.0, 81), adjoint=True)
    assert (sol.accepted < 40).all()  # so several recorded times fell in one step
    ts = np.linspace(0.0, 2.0, 81)[:, None]
    g = sol.vjp(dsaved=np.ones((81, n)))
    np.testing.assert_allclose(g.p, (-ts * np.exp(-ts * p)).sum(axis=0), rtol=1e-4)
    last = np.zeros((81, n))
    last[-1] = 1.0
    at_end, by_du = sol.vjp(dsaved=last), sol.vjp(np.ones(n))
    np.testing.assert_array_equal(at_end.p, by_du.p)
    np.testing.assert_array_equal(at_end.u0, by_du.u0)


def test_saved_state_gradients_match_forward_sensitivities_contracted():
    u0, p = _lorenz_start()
    kw = dict(method="dopri5", rtol=1e-10, atol=1e-10, saveat=(0.0, 1.0, 11))
    sol = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, adjoint=True, **kw)
    dsaved = np.random.default_rng(4).normal(size=sol.saved.shape)
    g = sol.vjp(dsaved=dsaved)
    by_p = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, sensitivity="p", **kw)
    expected = np.einsum("Tkmn,Tkn->mn", by_p.saved_sensitivity, dsaved)
    assert np.abs(g.p - expected).max() < 1e-8 * np.abs(expected).max()


@hawk.func
def robertson(u, t, k):
    r1, r2, r3 = k[0] * u[0], k[1] * u[1] * u[1], k[2] * u[1] * u[2]
    return hawk.vec3(-r1 + r3, r1 - r2 - r3, r2)


@pytest.mark.parametrize("method, bound", [("rosenbrock23", 1e-6), ("rodas5p", 3e-6)])
def test_robertsons_gradient_in_shared_rates_matches_forward_sensitivities(method, bound):
    """Robertson to t = 100 (stiff), rates shared by both samples: the step's Jacobian
    (``hawk.jacobian``) and linear solves (``hawk.solve``) differentiated in reverse. At
    rtol 1e-6, atol 1e-10 they agreed to 2e-7 (rosenbrock23) and 9e-7 (rodas5p), relative,
    entry by entry: the tolerances' scale."""
    k = np.array([0.04, 3e7, 1e4])
    u0 = np.vstack([np.ones(2), np.zeros(2), np.zeros(2)])
    kw = dict(method=method, rtol=1e-6, atol=1e-10)
    plain = eagle.ode.solve(robertson, u0, (0.0, 100.0), p=k, **kw)
    sol = eagle.ode.solve(robertson, u0, (0.0, 100.0), p=k, adjoint=True, **kw)
    np.testing.assert_array_equal(sol.u, plain.u)
    du = np.array([[1.0, 0.3], [2.0, -1.0], [0.5, 0.7]])
    g = sol.vjp(du)
    by_p = eagle.ode.solve(robertson, u0, (0.0, 100.0), p=k, sensitivity="p", **kw)
    expected = np.einsum("kmn,kn->m", by_p.du_dp, du)
    np.testing.assert_allclose(g.p, expected, rtol=bound)


@hawk.func
def frozen_coupling(u, t, k):
    """An approximate Jacobian (the coupling through u[1] dropped): other steps, other bits."""
    return hawk.matrix((-k[0], 0.0, 0.0), (k[0], -k[2] * u[2], 0.0), (0.0, 0.0, 0.0))


@pytest.mark.parametrize("method", eagle.ode.IMPLICIT)
@pytest.mark.parametrize("solving", [dict(jac=_robertson_jacobian), dict(jac=frozen_coupling),
                                     dict(linsolve="refined")])
def test_a_users_jacobian_and_refined_solves_are_differentiated_in_reverse(method, solving):
    """``jac=`` and ``linsolve=`` with ``adjoint=True``: the recording run ends on the plain
    solve's bits (same options), and the gradient is that of the steps taken: against central
    differences of the same solve with its steps held (``max_step`` bounding every step after
    the first, short of any the error control would take: about 200 steps over 0.02 time
    units, none rejected), to 1e-6 of the largest entry. An approximate Jacobian changes the
    method, not the rule: its own steps' gradient, through the user's func."""
    k = np.array([0.04, 3e7, 1e4])
    u0 = np.vstack([np.ones(2), np.zeros(2), np.zeros(2)])
    kw = dict(method=method, rtol=1e-3, atol=1e-6, max_step=1e-4, **solving)
    span = (0.0, 0.02)
    plain = eagle.ode.solve(robertson, u0, span, p=k, **kw)
    sol = eagle.ode.solve(robertson, u0, span, p=k, adjoint=True, **kw)
    np.testing.assert_array_equal(sol.u, plain.u)
    assert (sol.rejected == 0).all()
    du = np.array([[1.0, 0.3], [2e3, -1e3], [0.5, 0.7]])
    g = sol.vjp(du)
    expected = np.zeros(3)
    for m in range(3):
        step = k[m] * 1e-6
        up, down = k.copy(), k.copy()
        up[m] += step
        down[m] -= step
        ends = [eagle.ode.solve(robertson, u0, span, p=q, **kw) for q in (up, down)]
        assert all((e.accepted == sol.accepted).all() and (e.rejected == 0).all() for e in ends)
        expected[m] = np.sum((ends[0].u - ends[1].u) * du) / (2 * step)
    # the differences' rounding is about 1e-14 absolute (2e3 x 1e-16 over 2 x 30 for k[1])
    np.testing.assert_allclose(g.p, expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max())


@hawk.func
def half_jacobian(u, t, p):
    """Half the decay's Jacobian: another W, where ``h p`` is 0.5."""
    return -0.5 * p


@pytest.mark.parametrize("method", eagle.ode.IMPLICIT)
def test_the_backward_pass_differentiates_the_users_jacobian_itself(method):
    """``u' = -p u`` with ``jac = -p / 2`` in steps of 0.1 (``h p = 0.5``; tolerances so loose
    that every step is accepted at ``max_step``): the step map depends on ``p`` through the
    user's Jacobian, so a backward pass that took ``hawk.jacobian``'s (``-p``) instead is off
    by 1.5 % (rosenbrock23) and 0.2 % (rodas5p): measured by making it do so. Against central
    differences, to 1e-7."""
    p = np.array([5.0, 4.0])
    kw = dict(method=method, rtol=1.0, atol=1.0, max_step=0.1, jac=half_jacobian)
    sol = eagle.ode.solve(decay, np.ones(2), (0.0, 1.0), p=p, adjoint=True, **kw)
    assert (sol.rejected == 0).all()
    g = sol.vjp(np.ones(2))
    step = 1e-6
    ends = [eagle.ode.solve(decay, np.ones(2), (0.0, 1.0), p=p + d, **kw).u
            for d in (step, -step)]
    np.testing.assert_allclose(g.p, (ends[0] - ends[1]) / (2 * step), rtol=1e-7)


def test_lorenz_gradient_matches_forward_sensitivities_contracted():
    """At rtol = atol = 1e-10 (tsit5 both) they agreed to about 1.4e-10 of the largest entry
    (5e-6 at 1e-6, 4e-8 at 1e-8: the tolerances' scale, since the adjoint holds the steps
    fixed and the sensitivities ride error control); the bound is 1e-8."""
    u0, p = _lorenz_start()
    kw = dict(method="tsit5", rtol=1e-10, atol=1e-10)
    sol = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, adjoint=True, **kw)
    du = np.random.default_rng(0).normal(size=u0.shape)
    g = sol.vjp(du)
    by_p = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, sensitivity="p", **kw)
    by_u0 = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, sensitivity="u0", **kw)
    expected_p = np.einsum("kmn,kn->mn", by_p.du_dp, du)
    expected_u0 = np.einsum("kmn,kn->mn", by_u0.du_du0, du)
    assert g.p.shape == p.shape and g.u0.shape == u0.shape
    assert np.abs(g.p - expected_p).max() < 1e-8 * np.abs(expected_p).max()
    assert np.abs(g.u0 - expected_u0).max() < 1e-8 * np.abs(expected_u0).max()


@hawk.func
def pendulum(u, t, p):
    return hawk.vec2(u[1], -p[0] * math.sin(u[0]) - p[1] * u[1])


@pytest.mark.parametrize("saveat, calls", [(True, 7), (False, 6)])
def test_a_backward_step_recomputes_each_stage_once(saveat, calls):
    """One ``hawk.grad`` in ``(u, p)`` per backward step: tsit5's seven stages, each one
    ``sin`` of the state, computed once for both cotangents (two sweeps, one in ``u`` and one
    in ``p``, left 12 in this kernel); without saved states' cotangents the last stage, read
    only by the interpolant, is not computed at all."""
    kernel = backward_kernel(pendulum, hawk.Vec2, Vector[2], method="tsit5", saveat=saveat)
    program = kernel.specialize({})
    assert sum(op.kind.name == "CALL" and op.attr == "sin" for op in program.ops) == calls


def _replay(f, method: str, state, width: int):
    """A kernel that takes the recorded steps again from ``u`` (its own ``p``): the computed
    solution's step map with the steps held fixed, for finite differences."""
    in_u = step_map(method)
    model = _with_tables(f, 0)
    State, Params = state, Vector[width]

    def replay(p: Params, steps_t: Table[2], steps_h: Table[2], count: Scalar,
               terminated: Terminated, u: Mutable[State], row: Mutable[Scalar],
               table0: Table, table1: Table, table2: Table):
        if row < count:
            s = hawk.sample_index()
            u = in_u(u, p, steps_t[row, s], steps_h[row, s], model,
                     (table0, table1, table2))
            row += 1
        terminated = row >= count

    return hawk.kernel(replay, dtypes={"row": "int64", "count": "int64"})


@pytest.mark.parametrize("method", ["dopri5", "vern7", "rosenbrock23", "rodas5p"])
def test_gradient_matches_central_differences_of_the_same_steps(method):
    u0 = np.array([[1.0, 0.3, -0.5], [0.0, 0.8, 0.2]])
    p = np.array([[1.5, 2.0, 0.7], [0.3, 0.1, 0.4], [0.5, 1.0, 2.0]])
    sol = eagle.ode.solve(forced, u0, (0.0, 3.0), p=p, method=method, rtol=1e-6, atol=1e-6,
                          adjoint=True)
    du = np.array([[0.7, -1.2, 0.4], [1.1, 0.5, -0.9]])
    g = sol.vjp(du)
    kernel = _replay(forced, method, hawk.Vec2, 3)
    a = sol.arrays

    def end(p_, u_):
        u = np.array(u_, copy=True)
        eagle.until_done(kernel, max_steps=10_000, p=p_, steps_t=a["steps_t"],
                         steps_h=a["steps_h"], count=a["accepted"].copy(), u=u,
                         row=np.zeros(3, dtype=np.int64)).run()
        return u

    np.testing.assert_array_equal(end(p, u0), sol.u)  # the replay is the solve's map
    for name, x, other in (("p", p, u0), ("u0", u0, p)):
        got = getattr(g, name)
        for j in range(x.shape[0]):
            step = np.zeros_like(x)
            step[j] = 1e-6
            args_plus = (x + step, other) if name == "p" else (other, x + step)
            args_minus = (x - step, other) if name == "p" else (other, x - step)
            column = (end(*args_plus) - end(*args_minus)) / 2e-6
            expected = (column * du).sum(axis=0)
            np.testing.assert_allclose(got[j], expected, rtol=1e-7, atol=1e-9)


def test_a_shared_p_is_summed_over_the_samples_and_u0_keeps_its_shape():
    u0, p = _lorenz_start(5)  # not 3 samples: a (3,) p would be one number per sample
    shared = np.array([10.0, 28.0, 8.0 / 3.0])
    kw = dict(method="tsit5", rtol=1e-8, atol=1e-8)
    per_sample = eagle.ode.solve(lorenz, u0, (0.0, 0.5), p=np.repeat(shared[:, None], 5, 1),
                                 adjoint=True, **kw)
    one = eagle.ode.solve(lorenz, u0, (0.0, 0.5), p=shared, adjoint=True, **kw)
    du = np.random.default_rng(1).normal(size=u0.shape)
    g_each, g_one = per_sample.vjp(du), one.vjp(du)
    assert g_one.p.shape == (3,)
    np.testing.assert_array_equal(g_one.u0, g_each.u0)
    np.testing.assert_array_equal(g_one.p, np.cumsum(g_each.p, axis=1)[:, -1])
    again = one.vjp(du)
    np.testing.assert_array_equal(again.p, g_one.p)  # bit for bit, run after run
    column = eagle.ode.solve(decay, np.ones((1, 4)), (0.0, 1.0), p=0.5, adjoint=True)
    g = column.vjp(np.ones((1, 4)))
    assert g.u0.shape == (1, 4) and isinstance(g.p, float)
    np.testing.assert_allclose(g.p, -4 * np.exp(-0.5), rtol=1e-5)


def test_a_solve_backward_in_time_has_its_gradient_too():
    n = 3
    p = np.array([0.5, 1.0, 1.5])
    sol = eagle.ode.solve(decay, np.ones(n), (2.0, 0.0), p=p, rtol=1e-10, atol=1e-12,
                          adjoint=True)
    g = sol.vjp(np.ones(n))  # u(0) = exp(2 p) u(2)
    np.testing.assert_allclose(g.p, 2.0 * np.exp(2.0 * p), rtol=1e-8)
    np.testing.assert_allclose(g.u0, np.exp(2.0 * p), rtol=1e-8)


@hawk.func
def _falls(u, t, p):
    return u


@pytest.mark.parametrize("options, named", [
    (dict(method="rk4", dt=0.1), "method"),
    (dict(event=_falls, terminal=False), "terminal"),
    (dict(event=[_falls, _falls]), "several"),
    (dict(event=_falls, record_events=2), "record_events"),
    (dict(event=_falls, on_event=_falls), "on_event"),
    (dict(tstops=(0.0, 0.5)), "tstops"),
    (dict(sensitivity="p"), "sensitivity"),
    (dict(adjoint_steps=0), "adjoint_steps"),
    (dict(adjoint_steps=True), "adjoint_steps"),
])
def test_what_the_adjoint_cannot_take_is_refused_by_name(options, named):
    with pytest.raises(ValueError, match=named):
        eagle.ode.solve(decay, np.ones(2), (0.0, 1.0), p=0.5, adjoint=True, **options)


@hawk.func
def linear(u, t, A, b, c):
    return hawk.matmul(A, u) + b * c


@hawk.func
def linear_packed(u, t, p):
    """``linear`` with its arguments in one vector ``(A row by row, b, c)``."""
    return hawk.vec2(p[0] * u[0] + p[1] * u[1] + p[4] * p[6],
                     p[2] * u[0] + p[3] * u[1] + p[5] * p[6])


@pytest.mark.parametrize("per_sample_times", [False, True])
def test_model_arguments_and_listed_times_match_forward_sensitivities(per_sample_times):
    """``args=(A, b, c)`` (a shared matrix, a vector per sample, a shared number) and
    ``saveat`` as an array of times (shared, or a column per sample, one of them at t0): each
    argument's gradient, shaped as it (the shared ones summed over the samples), against
    ``sensitivity="p"`` of the same model on one packed vector, contracted with the same
    ``du`` and ``dsaved`` (at rtol 1e-10 they agreed to about 7e-11 of the largest entry; the
    bound is 1e-8).
    The recording solve saves what the plain one saves, bit for bit."""
    n = 3
    rng = np.random.default_rng(8)
    u0 = rng.normal(size=(2, n))
    A = np.array([[-0.5, 1.0], [-1.0, -0.3]])
    b, c = rng.normal(size=(2, n)), 0.7
    times = np.array([0.0, 0.3, 1.0, 1.7])
    if per_sample_times:
        times = np.sort(np.vstack([np.zeros(n), rng.uniform(0.1, 2.0, (3, n))]), axis=0)
    kw = dict(method="tsit5", rtol=1e-10, atol=1e-10, saveat=times)
    sol = eagle.ode.solve(linear, u0, (0.0, 2.0), args=(A, b, c), adjoint=True, **kw)
    du, dsaved = rng.normal(size=u0.shape), rng.normal(size=sol.saved.shape)
    g = sol.vjp(du, dsaved)
    packed = np.vstack([np.repeat(A.reshape(4, 1), n, axis=1), b, np.full((1, n), c)])
    by_p = eagle.ode.solve(linear_packed, u0, (0.0, 2.0), p=packed, sensitivity="p", **kw)
    plain = eagle.ode.solve(linear, u0, (0.0, 2.0), args=(A, b, c), **kw)
    np.testing.assert_array_equal(sol.saved, plain.saved)  # the recording solve's own steps
    np.testing.assert_array_equal(sol.u, plain.u)
    expected = np.einsum("kmn,kn->mn", by_p.du_dp, du) \
        + np.einsum("Tkmn,Tkn->mn", by_p.saved_sensitivity, dsaved)
    bound = 1e-8 * np.abs(expected).max()
    assert g.p is None and len(g.args) == 3
    assert g.args[0].shape == (2, 2) and g.args[1].shape == (2, n) and isinstance(g.args[2],
                                                                                    float)
    assert np.abs(g.args[0] - expected[:4].sum(axis=1).reshape(2, 2)).max() < bound
    assert np.abs(g.args[1] - expected[4:6]).max() < bound
    assert abs(g.args[2] - expected[6].sum()) < bound


def test_a_number_per_sample_and_a_shared_one_as_arguments_have_their_exact_gradient():
    """``decay`` with its rate as ``args``: u(T) = u0 exp(-p T), du/dp = -T u(T)."""
    n = 4
    p, u0 = np.linspace(0.5, 2.0, n), np.linspace(1.0, 2.0, n)
    kw = dict(rtol=1e-10, atol=1e-12, adjoint=True)
    each = eagle.ode.solve(decay, u0, (0.0, 2.0), args=(p,), **kw).vjp(np.ones(n))
    assert each.args[0].shape == (n,)
    np.testing.assert_allclose(each.args[0], -2.0 * u0 * np.exp(-2.0 * p), rtol=1e-8)
    one = eagle.ode.solve(decay, u0, (0.0, 2.0), args=(0.5,), **kw).vjp(np.ones(n))
    assert isinstance(one.args[0], float)
    np.testing.assert_allclose(one.args[0], (-2.0 * u0 * np.exp(-1.0)).sum(), rtol=1e-8)
    data = np.zeros((1, n))  # loss sum(u(2)**2): its gradient 2 u(2) du/dp, by args too
    loss, grads = eagle.ode.loss_and_grad(decay, u0, (0.0, 2.0), None, data,
                                          saveat=(2.0, 2.0, 1), args=(p,), rtol=1e-10,
                                          atol=1e-12)
    u_end = u0 * np.exp(-2.0 * p)
    np.testing.assert_allclose(loss, (u_end**2).sum(), rtol=1e-8)
    np.testing.assert_allclose(grads[0], 2.0 * u_end * -2.0 * u_end, rtol=1e-8)


@hawk.func
def network(u, t, W1T, b1, W2, b2, W3):
    out = b2
    for i in range(16):
        a = math.tanh(W1T[0, i] * u[0] + W1T[1, i] * u[1] + b1[i])
        out = out + a * hawk.vec2(W2[0, i], W2[1, i])
    for i in range(4):  # a damping by a row sum of W3 (which makes the arguments 146 numbers)
        out = out - 0.01 * hawk.vec2(W3[i, 0] + W3[i, 15], W3[i, 7]) * u[i % 2]
    return out


def test_shared_network_arguments_packed_as_a_matrix_against_central_differences():
    """146 shared numbers (more than a ``Vector``'s 128: packed as a ``Matrix[10, 16]``): the
    gradient of ``<du, u(1)>`` along three random directions of all five arguments against
    central differences of the solve at rtol 1e-12 (82 numbers, before the fifth, agreed to
    1e-9 to 5e-9 of the sum of the terms' sizes; the bound is 1e-6)."""
    rng = np.random.default_rng(2)
    n = 2
    u0 = rng.uniform(-1.0, 1.0, (2, n))
    given = (rng.normal(scale=0.5, size=(2, 16)), rng.normal(scale=0.5, size=16),
             rng.normal(scale=0.3, size=(2, 16)), np.array([0.1, -0.2]),
             rng.normal(scale=0.5, size=(4, 16)))
    du = rng.normal(size=(2, n))
    kw = dict(method="dopri5", rtol=1e-12, atol=1e-12)
    g = eagle.ode.solve(network, u0, (0.0, 1.0), args=given, adjoint=True, **kw).vjp(du)
    assert [a.shape for a in g.args] == [a.shape for a in given]

    def loss(values):
        return float((eagle.ode.solve(network, u0, (0.0, 1.0), args=values, **kw).u
                      * du).sum())

    for _ in range(3):
        direction = [rng.normal(size=a.shape) for a in given]
        plus = tuple(a + 1e-4 * d for a, d in zip(given, direction, strict=True))
        minus = tuple(a - 1e-4 * d for a, d in zip(given, direction, strict=True))
        expected = (loss(plus) - loss(minus)) / 2e-4
        got = sum(float((a * d).sum()) for a, d in zip(g.args, direction, strict=True))
        scale = sum(float(np.abs(a * d).sum()) for a, d in zip(g.args, direction, strict=True))
        assert abs(got - expected) < 1e-6 * scale


def test_a_bad_cotangent_and_a_solution_without_steps_are_refused_by_name():
    sol = eagle.ode.solve(decay, np.ones(3), (0.0, 1.0), p=0.5, adjoint=True)
    with pytest.raises(ValueError, match=r"du must be shaped as Solution.u, \(3,\)"):
        sol.vjp(np.ones(4))
    with pytest.raises(TypeError, match="du"):
        sol.vjp(np.ones(3, dtype=complex))
    with pytest.raises(ValueError, match="dsaved needs a solve with saveat"):
        sol.vjp(dsaved=np.ones((2, 3)))
    with pytest.raises(ValueError, match="vjp needs du"):
        sol.vjp()
    saving = eagle.ode.solve(decay, np.ones(3), (0.0, 1.0), p=0.5, saveat=(0.0, 1.0, 4),
                             adjoint=True)
    with pytest.raises(ValueError, match=r"dsaved must be shaped as Solution.saved, \(4, 3\)"):
        saving.vjp(dsaved=np.ones((3, 3)))
    plain = eagle.ode.solve(decay, np.ones(3), (0.0, 1.0), p=0.5)
    with pytest.raises(ValueError, match="adjoint=True"):
        plain.vjp(np.ones(3))


@pytest.mark.parametrize("options, least", [(dict(max_step=0.5), 20),
                                             (dict(saveat=(0.0, 10.0, 41)), 11)])
def test_a_budget_that_max_step_or_saveat_exceed_is_refused_before_the_run(monkeypatch,
                                                                           options, least):
    """20 steps at least for a span of 10 in steps of at most 0.5; 11 for 41 recorded times
    (a step passes at most 4): refused naming adjoint_steps before anything is compiled."""
    import eagle.ode.solver

    def no_run(*args, **kwargs):
        raise AssertionError("the solve ran")

    monkeypatch.setattr(eagle.ode.solver, "deploy", no_run)
    monkeypatch.setattr(eagle.ode.solver, "simulate", no_run)
    with pytest.raises(ValueError, match=rf"adjoint_steps=5: sample 0 must take at least "
                                         rf"{least} accepted steps"):
        eagle.ode.solve(decay, np.ones(2), (0.0, 10.0), p=0.5, adjoint=True, adjoint_steps=5,
                        **options)


def test_a_sample_that_needs_more_steps_than_adjoint_steps_is_refused_by_name():
    """Found after the run (the steps are the error control's), saying about how many rows
    would do; what was passed in is untouched, and that many rows then suffice here."""
    u0 = np.ones(2)
    kw = dict(p=np.array([1.0, 2.0]), rtol=1e-8, atol=1e-8, adjoint=True)
    with pytest.raises(ValueError, match=r"adjoint_steps=5: 2 of 2 samples") as refused:
        eagle.ode.solve(decay, u0, (0.0, 10.0), adjoint_steps=5, **kw)
    np.testing.assert_array_equal(u0, np.ones(2))
    would_do = int(re.search(r"about (\d+) would do", str(refused.value)).group(1))
    needed = int(eagle.ode.solve(decay, u0, (0.0, 10.0), **kw).accepted.max())
    assert needed <= would_do  # here 317 for 64: steps grow as the decay slows
    eagle.ode.solve(decay, u0, (0.0, 10.0), adjoint_steps=would_do, **kw)


@pytest.mark.slow
def test_lorenz_gradient_matches_jax_grad_through_diffrax_tsit5():
    """jax.grad of <du, u(1)> through diffrax's Tsit5 (RecursiveCheckpointAdjoint) at the
    same tolerances, rtol = atol = 1e-10: in p and u0 for three samples. They agreed to 9e-11
    of the largest entry (7e-6 at 1e-6, 3e-8 at 1e-8: the steps differ, so the tolerances'
    scale); the bound is 1e-9."""
    diffrax = pytest.importorskip("diffrax")
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def rhs(t, u, p):
        return jnp.stack([p[0] * (u[1] - u[0]), u[0] * (p[1] - u[2]) - u[1],
                          u[0] * u[1] - p[2] * u[2]])

    def loss(u0, p, du):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(rhs), diffrax.Tsit5(), 0.0, 1.0, None, u0,
                                  args=p, stepsize_controller=diffrax.PIDController(
                                      rtol=1e-10, atol=1e-10), max_steps=100_000)
        return jnp.dot(du, sol.ys[-1])

    gradient = jax.jit(jax.grad(loss, argnums=(0, 1)))
    u0, p = _lorenz_start(3)
    du = np.random.default_rng(2).normal(size=u0.shape)
    sol = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, method="tsit5", rtol=1e-10,
                          atol=1e-10, adjoint=True)
    g = sol.vjp(du)
    for i in range(3):
        theirs_u0, theirs_p = (np.asarray(v) for v in gradient(
            jnp.asarray(u0[:, i]), jnp.asarray(p[:, i]), jnp.asarray(du[:, i])))
        assert np.abs(g.p[:, i] - theirs_p).max() < 1e-9 * np.abs(theirs_p).max()
        assert np.abs(g.u0[:, i] - theirs_u0).max() < 1e-9 * np.abs(theirs_u0).max()


@pytest.mark.slow
def test_robertsons_gradient_matches_jax_grad_through_diffrax_kvaerno5():
    """rodas5p's gradient against jax.grad through diffrax's Kvaerno5 (another method, the
    same tolerances rtol 1e-8, atol 1e-12) on Robertson to t = 100: they agreed to 7e-9
    relative in the rates and 4e-9 of the largest entry in u0 (1e-6 at rtol 1e-6); the bound
    is 3e-8."""
    diffrax = pytest.importorskip("diffrax")
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def rhs(t, u, k):
        r1, r2, r3 = k[0] * u[0], k[1] * u[1] * u[1], k[2] * u[1] * u[2]
        return jnp.stack([-r1 + r3, r1 - r2 - r3, r2])

    k = np.array([0.04, 3e7, 1e4])
    du = np.array([1.0, 2.0, 0.5])

    def loss(u0, k):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(rhs), diffrax.Kvaerno5(), 0.0, 100.0, None,
                                  u0, args=k, stepsize_controller=diffrax.PIDController(
                                      rtol=1e-8, atol=1e-12), max_steps=100_000)
        return jnp.dot(jnp.asarray(du), sol.ys[-1])

    theirs_u0, theirs_k = (np.asarray(v) for v in jax.jit(jax.grad(loss, argnums=(0, 1)))(
        jnp.asarray([1.0, 0.0, 0.0]), jnp.asarray(k)))
    u0 = np.array([[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]])
    sol = eagle.ode.solve(robertson, u0, (0.0, 100.0), p=k, method="rodas5p", rtol=1e-8,
                          atol=1e-12, adjoint=True, adjoint_steps=4096)
    g = sol.vjp(np.repeat(du[:, None], 2, axis=1))
    np.testing.assert_allclose(g.p / 2, theirs_k, rtol=3e-8)  # two equal samples, summed
    assert np.abs(g.u0[:, 0] - theirs_u0).max() < 3e-8 * np.abs(theirs_u0).max()


def test_the_adjoint_kernels_equal_the_reference_on_every_backend(target):  # noqa: F811
    """The recording kernel and the backward kernel (with saved states) on each backend
    against the reference executor, 40 Lorenz samples (tsit5)."""
    u0, p = _lorenz_start(40)
    sol = eagle.ode.solve(lorenz, u0, (0.0, 0.5), p=p, method="tsit5", rtol=1e-6, atol=1e-6,
                          saveat=(0.0, 0.5, 6), adjoint=True, adjoint_steps=64)
    a, record = sol.arrays, sol.adjoint
    dsaved = np.random.default_rng(6).normal(size=sol.saved.shape)
    backward = backward_kernel(record.f, record.state, record.params, method="tsit5",
                               saveat=True)
    bindings = dict(p=p, steps_u=a["steps_u"], steps_t=a["steps_t"], steps_h=a["steps_h"],
                    dsaved=dsaved, save_first=a["save_first"], save_every=a["save_every"],
                    first_save=record.first_save.copy(), row=a["accepted"].copy(),
                    lam=np.ones_like(u0), mu=np.zeros_like(p), t_next=a["t"].copy(),
                    saves=a["saves"].copy(), status=a["status"], accepted=a["accepted"],
                    theta_end=a["theta_end"])
    expected, _ = reference_run(backward, bindings, 1000)
    g = sol.vjp(np.ones_like(u0), dsaved)
    np.testing.assert_array_equal(expected["mu"], g.p)  # vjp runs this very kernel
    arrays = target.put(bindings)
    eagle.until_done(eagle.deploy(backward, target.target.device), max_steps=1000,
                     **arrays).run()
    actual = target.get(arrays)
    assert_matches_reference({k: actual[k] for k in ("lam", "mu", "row", "saves")},
                             {k: expected[k] for k in ("lam", "mu", "row", "saves")},
                             target.target.exact_math, rtol=1e-12)
    forward = recording_kernel(record.f, record.state, record.params, method="tsit5",
                               saveat=True)
    start = dict(p=p, t_end=np.full(40, 0.5), rtol=np.full(40, 1e-6), atol=np.full(40, 1e-6),
                 max_step=np.full(40, np.inf), save_first=0.0, save_every=0.1,
                 save_count=6.0, saves=np.zeros(40, dtype=np.int64),
                 saved=np.full((6, 3, 40), np.nan), budget=64.0, u=u0.copy(),
                 k1=np.zeros_like(u0), t=np.zeros(40), h=np.full(40, 0.01),
                 c=np.full(40, 1e-4), accepted=np.zeros(40, dtype=np.int64),
                 rejected=np.zeros(40, dtype=np.int64), status=np.zeros(40, dtype=np.int64),
                 steps_u=np.full((64, 3, 40), np.nan), steps_t=np.full((64, 40), np.nan),
                 steps_h=np.full((64, 40), np.nan), events=np.zeros(40, dtype=np.int64),
                 theta_end=np.zeros(40))
    start["k1"] = np.vstack([p[0] * (u0[1] - u0[0]), u0[0] * (p[1] - u0[2]) - u0[1],
                             u0[0] * u0[1] - p[2] * u0[2]])
    expected, _ = reference_run(forward, start, 1000)
    arrays = target.put(start)
    eagle.until_done(eagle.deploy(forward, target.target.device), max_steps=1000,
                     **arrays).run()
    actual = target.get(arrays)
    names = ("u", "saved", "steps_u", "steps_t", "steps_h")
    assert_matches_reference({k: actual[k] for k in names}, {k: expected[k] for k in names},
                             target.target.exact_math, rtol=1e-9, counts_within=1)


@hawk.func
def lotka_volterra(u, t, r):
    return hawk.vec2(r[0] * u[0] - r[1] * u[0] * u[1], r[2] * u[0] * u[1] - r[3] * u[1])


def test_loss_and_grad_fits_shared_rates_with_scipy_lbfgs():
    """Four Lotka-Volterra rates shared by 20 populations, observed at 15 times (a few
    observations missing: NaN): L-BFGS from rates 20% off, with eagle.ode.loss_and_grad as
    ``fun`` and ``jac=True``, recovers them to 1e-4."""
    optimize = pytest.importorskip("scipy.optimize")
    truth = np.array([1.1, 0.4, 0.1, 0.4])
    u0 = np.random.default_rng(8).uniform(5.0, 15.0, (2, 20))
    kw = dict(method="tsit5", rtol=1e-9, atol=1e-9, adjoint_steps=4096)
    times = (0.5, 7.5, 15)
    data = eagle.ode.solve(lotka_volterra, u0, (0.0, 8.0), truth, saveat=times, method="tsit5",
                           rtol=1e-9, atol=1e-9).saved
    data[3, 0, :5] = np.nan
    loss, grad = eagle.ode.loss_and_grad(lotka_volterra, u0, (0.0, 8.0), truth, data,
                                         saveat=times, **kw)
    assert loss < 1e-12 and grad.shape == (4,)
    result = optimize.minimize(
        lambda q: eagle.ode.loss_and_grad(lotka_volterra, u0, (0.0, 8.0), q, data,
                                          saveat=times, **kw),
        truth * np.array([1.2, 0.8, 1.2, 0.8]), jac=True, method="L-BFGS-B",
        bounds=[(0.05, 2.0)] * 4)  # trial rates far out take many steps: keep them in
    np.testing.assert_allclose(result.x, truth, rtol=1e-4)
    with pytest.raises(ValueError, match=r"data must be shaped as Solution.saved"):
        eagle.ode.loss_and_grad(lotka_volterra, u0, (0.0, 8.0), truth, data[:, :, :3],
                                saveat=times)


@hawk.func
def scaled_decay(u, t, p, table):
    return -p * table[1] * u


@hawk.func
def small_network(u, t, w):
    a = math.tanh(w[0, 0] * u[0] + w[0, 1] * u[1] + w[0, 2])
    b = math.tanh(w[1, 0] * u[0] + w[1, 1] * u[1] + w[1, 2])
    return hawk.vec2(w[2, 0] * a + w[2, 1] * b, w[2, 2] * a - u[1])


def test_a_model_reading_a_table_and_a_float32_solve():
    n = 4
    p = np.linspace(0.5, 2.0, n)
    table = np.array([0.0, 0.5, 0.0])
    sol = eagle.ode.solve(scaled_decay, np.ones(n), (0.0, 2.0), p=p, tables=(table,),
                          rtol=1e-10, atol=1e-12, adjoint=True)
    g = sol.vjp(np.ones(n))
    np.testing.assert_allclose(g.p, -1.0 * np.exp(-p), rtol=1e-8)  # u = exp(-0.5 p t)
    single = eagle.ode.solve(decay, np.ones(n, dtype=np.float32), (0.0, 2.0),
                             p=p.astype(np.float32), rtol=1e-5, atol=1e-6, adjoint=True)
    g = single.vjp(np.ones(n, dtype=np.float32))
    assert g.p.dtype == np.float32 and g.u0.dtype == np.float32
    np.testing.assert_allclose(g.p, -2.0 * np.exp(-2.0 * p), rtol=1e-4)


def test_a_shared_matrix_p_against_central_differences_and_per_sample_matrices():
    """A small network's 3x3 weights shared by 6 samples: the gradient against central
    differences of tightly solved plain runs (1e-6 relative; the steps move with the weights
    there, an effect of the tolerance, 1e-11), and equal to the per-sample matrices' sum."""
    rng = np.random.default_rng(9)
    u0 = rng.uniform(-1.0, 1.0, (2, 6))
    w = rng.normal(size=(3, 3))
    kw = dict(method="vern9", rtol=1e-11, atol=1e-11)
    du = rng.normal(size=u0.shape)
    sol = eagle.ode.solve(small_network, u0, (0.0, 2.0), p=w, adjoint=True, **kw)
    g = sol.vjp(du)
    assert g.p.shape == (3, 3)
    each = eagle.ode.solve(small_network, u0, (0.0, 2.0), p=np.repeat(w[:, :, None], 6, 2),
                           adjoint=True, **kw).vjp(du)
    assert each.p.shape == (3, 3, 6)
    np.testing.assert_array_equal(g.p, np.cumsum(each.p, axis=-1)[..., -1])
    for i, j in ((0, 0), (1, 2), (2, 1)):
        step = np.zeros_like(w)
        step[i, j] = 1e-5
        plus = eagle.ode.solve(small_network, u0, (0.0, 2.0), p=w + step, **kw).u
        minus = eagle.ode.solve(small_network, u0, (0.0, 2.0), p=w - step, **kw).u
        expected = ((plus - minus) / 2e-5 * du).sum()
        assert abs(g.p[i, j] - expected) < 1e-6 * np.abs(g.p).max()


def test_saved_states_of_a_solve_backward_in_time():
    """u(t) = exp(p (2 - t)) from t = 2 down to 0, saved at t = 2, 1.5, ..., 0."""
    p = np.array([0.5, 1.0, 1.5])
    sol = eagle.ode.solve(decay, np.ones(3), (2.0, 0.0), p=p, rtol=1e-10, atol=1e-12,
                          saveat=(2.0, 0.0, 5), adjoint=True)
    ts = np.linspace(2.0, 0.0, 5)[:, None]
    np.testing.assert_allclose(sol.saved, np.exp(p * (2.0 - ts)), rtol=1e-8)
    g = sol.vjp(dsaved=np.ones((5, 3)))
    np.testing.assert_allclose(g.p, ((2.0 - ts) * np.exp(p * (2.0 - ts))).sum(axis=0),
                               rtol=1e-8)


@hawk.func
def falling(u, t, g):
    return hawk.vec2(u[1], -g)


@hawk.func
def ground(u, t, g):
    return u[0]


@pytest.mark.parametrize("method", ["tsit5", "rodas5p"])
def test_a_terminal_events_time_moves_with_p_and_u0(method):
    """A body falling from x0 at v0 under gravity g, ended where x = 0: the end speed is
    v* = -sqrt(v0**2 + 2 g x0), and the end height is 0 whatever the inputs. The event's
    time moves with them (implicit differentiation of g(u(t*)) = 0 on the step's
    interpolant): d v*/d g = -x0 / |v*|, d v*/d x0 = -g / |v*|, d v*/d v0 = -v0 / |v*|."""
    x0, v0, g = np.array([1.0, 2.0, 5.0]), np.array([0.0, 1.0, -2.0]), np.array([9.8, 3.0, 1.0])
    u0 = np.vstack([x0, v0])
    sol = eagle.ode.solve(falling, u0, (0.0, 10.0), p=g, method=method, rtol=1e-10,
                          atol=1e-12, event=ground, adjoint=True)
    assert (sol.status == 2).all()
    plain = eagle.ode.solve(falling, u0, (0.0, 10.0), p=g, method=method, rtol=1e-10,
                            atol=1e-12, event=ground)
    for name in ("u", "t", "status", "accepted", "rejected", "events"):
        np.testing.assert_array_equal(getattr(sol, name), getattr(plain, name))
    one_look = dict(method=method, rtol=1e-6, atol=1e-8, event=ground, event_samples=1)
    np.testing.assert_array_equal(
        eagle.ode.solve(falling, u0, (0.0, 10.0), p=g, adjoint=True, **one_look).u,
        eagle.ode.solve(falling, u0, (0.0, 10.0), p=g, **one_look).u)
    speed = np.sqrt(v0**2 + 2 * g * x0)
    np.testing.assert_allclose(sol.u[1], -speed, rtol=1e-8)
    by_speed = sol.vjp(np.vstack([np.zeros(3), np.ones(3)]))
    np.testing.assert_allclose(by_speed.p, -x0 / speed, rtol=1e-7)
    np.testing.assert_allclose(by_speed.u0, np.vstack([-g / speed, -v0 / speed]), rtol=1e-7,
                               atol=1e-12)
    by_height = sol.vjp(np.vstack([np.ones(3), np.zeros(3)]))
    assert np.abs(by_height.p).max() < 1e-8 and np.abs(by_height.u0).max() < 1e-8


def test_a_terminal_event_against_forward_sensitivities():
    """Lorenz ended where u[2] rises through 20 (after some steps), 4 samples: the adjoint
    against sensitivity='p' with its event correction, contracted (1e-7 of the largest)."""
    u0, p = _lorenz_start()
    kw = dict(method="dopri5", rtol=1e-10, atol=1e-10, event=_height_20, direction=1)
    sol = eagle.ode.solve(lorenz, u0, (0.0, 2.0), p=p, adjoint=True, **kw)
    assert (sol.status == 2).all() and (sol.accepted > 20).all()
    du = np.random.default_rng(10).normal(size=u0.shape)
    g = sol.vjp(du)
    by_p = eagle.ode.solve(lorenz, u0, (0.0, 2.0), p=p, sensitivity="p", **kw)
    np.testing.assert_allclose(by_p.u, sol.u, rtol=1e-9)  # its own steps: the tangents too
    expected = np.einsum("kmn,kn->mn", by_p.du_dp, du)
    assert np.abs(g.p - expected).max() < 1e-7 * np.abs(expected).max()


@hawk.func
def _height_20(u, t, p):
    return u[2] - 20.0


def test_the_event_backward_kernel_equals_the_reference_on_every_backend(target):  # noqa: F811
    """The backward kernel with a terminal event (falling bodies, 30 samples) on each backend
    against the reference executor."""
    rng = np.random.default_rng(11)
    u0 = np.vstack([rng.uniform(0.5, 5.0, 30), rng.uniform(-2.0, 2.0, 30)])
    g = rng.uniform(1.0, 10.0, 30)
    sol = eagle.ode.solve(falling, u0, (0.0, 10.0), p=g, rtol=1e-8, atol=1e-10, event=ground,
                          adjoint=True, adjoint_steps=128)
    a, record = sol.arrays, sol.adjoint
    backward = backward_kernel(record.f, record.state, record.params, event=record.event)
    bindings = dict(p=g, steps_u=a["steps_u"], steps_t=a["steps_t"], steps_h=a["steps_h"],
                    dsaved=np.zeros((1, 2, 30)), save_first=0.0, save_every=1.0,
                    first_save=np.zeros(30, dtype=np.int64), row=a["accepted"].copy(),
                    lam=np.ones_like(u0), mu=np.zeros(30), t_next=a["t"].copy(),
                    saves=np.zeros(30, dtype=np.int64), status=a["status"],
                    accepted=a["accepted"], theta_end=a["theta_end"])
    expected, _ = reference_run(backward, bindings, 1000)
    np.testing.assert_array_equal(expected["mu"], sol.vjp(np.ones_like(u0)).p)
    arrays = target.put(bindings)
    eagle.until_done(eagle.deploy(backward, target.target.device), max_steps=1000,
                     **arrays).run()
    actual = target.get(arrays)
    assert_matches_reference({k: actual[k] for k in ("lam", "mu")},
                             {k: expected[k] for k in ("lam", "mu")},
                             target.target.exact_math, rtol=1e-12)


def test_saved_states_before_a_terminal_event():
    """x(t) = x0 + v0 t - g t**2 / 2 saved at 11 times up to the event (NaN after it, their
    cotangents zero): d/dg = -t**2 / 2, d/dx0 = 1, d/dv0 = t summed over the saved rows."""
    x0, v0, g = np.array([1.0, 2.0, 5.0]), np.array([0.0, 1.0, -2.0]), np.array([9.8, 3.0, 1.0])
    sol = eagle.ode.solve(falling, np.vstack([x0, v0]), (0.0, 10.0), p=g, rtol=1e-10,
                          atol=1e-12, event=ground, saveat=(0.0, 1.0, 11), adjoint=True)
    kept = ~np.isnan(sol.saved[:, 0, :])
    assert not kept.all() and kept[:5].all()
    dsaved = np.zeros_like(sol.saved)
    dsaved[:, 0, :] = kept
    grads = sol.vjp(dsaved=dsaved)
    ts = np.linspace(0.0, 1.0, 11)[:, None]
    np.testing.assert_allclose(grads.p, np.where(kept, -ts**2 / 2, 0.0).sum(axis=0),
                               rtol=1e-9)
    np.testing.assert_allclose(grads.u0, np.stack([kept.sum(axis=0),
                                                   np.where(kept, ts, 0.0).sum(axis=0)]),
                               rtol=1e-9, atol=1e-12)
