"""``eagle.ode.solve(..., args=(...))`` (issue 43, item 1): a model's arguments of any shapes,
each per sample or shared, passed one by one, ``f(u, t, W1, b1, W2, b2)``; packed into one
array the kernels bind and taken out again bit for bit (``eagle.ode.model_args``).

Each test fails on the code before: ``solve`` had no ``args``, and a tuple ``p`` of arrays of
different shapes failed inside NumPy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import eagle.ode
import hawk

H, K, N = 8, 4, 40


@hawk.func
def _tanh8(v):
    out = hawk.zeros(8)
    for i in range(8):
        out[i] = math.tanh(v[i])
    return out


@hawk.func
def neural(u, t, W1, b1, W2, b2):
    """A neural right-hand side: one hidden layer of 8, shared weights."""
    return W2 @ _tanh8(W1 @ u + b1) + b2 - 0.1 * u


@hawk.func
def neural_packed(u, t, P):
    """The same network with its weights packed by hand into one 16 x 9 matrix (what a user
    had to write before ``args``)."""
    W1, b1, W2, b2 = hawk.zeros(8, 4), hawk.zeros(8), hawk.zeros(4, 8), hawk.zeros(4)
    for i in range(8):
        for j in range(4):
            W1[i, j] = P[i, j]
            W2[j, i] = P[8 + j, i]
        b1[i] = P[i, 4]
    for j in range(4):
        b2[j] = P[8 + j, 8]
    return neural(u, t, W1, b1, W2, b2)


def _weights(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(H, K)) * 0.5, rng.normal(size=H) * 0.1,
            rng.normal(size=(K, H)) * 0.5, rng.normal(size=K) * 0.1)


def _packed(W1, b1, W2, b2):
    P = np.zeros((16, 9))
    P[0:8, 0:4], P[0:8, 4], P[8:12, 0:8], P[8:12, 8] = W1, b1, W2, b2
    return P


@pytest.mark.parametrize("method", ["dopri5", "rodas5p"])
def test_a_neural_rhs_with_separate_weights_is_bit_identical_to_the_packed_one(method):
    weights = _weights()
    u0 = np.random.default_rng(1).normal(size=(K, N))
    given = [w.copy() for w in weights]
    for w in given:
        w.flags.writeable = False
    sol = eagle.ode.solve(neural, u0, (0.0, 2.0), args=tuple(given), method=method,
                          saveat=(0.0, 2.0, 5))
    ref = eagle.ode.solve(neural_packed, u0, (0.0, 2.0), _packed(*weights), method=method,
                          saveat=(0.0, 2.0, 5))
    assert (sol.status == 1).all()
    np.testing.assert_array_equal(sol.u, ref.u)
    np.testing.assert_array_equal(sol.saved, ref.saved)
    np.testing.assert_array_equal(sol.accepted, ref.accepted)
    for w, original in zip(given, weights, strict=True):  # nothing written into them
        np.testing.assert_array_equal(w, original)


@hawk.func
def relax(u, t, rate, target, scale):
    return -rate * (u - target[0]) * scale


@hawk.func
def relax_p(u, t, p):
    return -p[0] * (u - p[1]) * p[2]


def test_per_sample_and_shared_arguments_mixed_and_their_sensitivities():
    """``rate`` per sample ``(n,)``, ``target`` a shared vector, ``scale`` a number: the same
    bits as ``p`` packed by hand into a ``Vector[3]`` per sample, ``du_dp`` included (its
    columns: the arguments' numbers in order)."""
    rate, target = np.linspace(0.5, 2.0, N), np.array([0.25, 9.0])
    u0 = np.linspace(1.0, 2.0, N)
    sol = eagle.ode.solve(relax, u0, (0.0, 1.5), args=(rate, target, 1.5), sensitivity="p")
    p = np.stack([rate, np.full(N, 0.25), np.full(N, 9.0), np.full(N, 1.5)])

    @hawk.func
    def relax4(u, t, p):
        return -p[0] * (u - p[1]) * p[3]

    ref = eagle.ode.solve(relax4, u0, (0.0, 1.5), p, sensitivity="p")
    np.testing.assert_array_equal(sol.u, ref.u)
    assert sol.du_dp.shape == (1, 4, N)
    np.testing.assert_array_equal(sol.du_dp, ref.du_dp)
    exact = 0.25 + (u0 - 0.25) * np.exp(-rate * 1.5 * 1.5)
    np.testing.assert_allclose(sol.u, exact, rtol=1e-5)
    np.testing.assert_allclose(sol.du_dp[0, 0], -(u0 - 0.25) * 2.25 * np.exp(-rate * 2.25),
                               rtol=1e-4)


@hawk.func
def fall(u, t, g, drag):
    return hawk.vec2(u[1], -g - drag[0] * u[1])


@hawk.func
def floor(u, t, g, drag):
    return u[0]


@hawk.func
def bounce(u, t, g, drag, i):
    return hawk.vec2(u[0], -drag[1] * u[1])


def test_events_updates_with_an_index_and_backward_time_take_the_arguments():
    u0 = np.array([np.linspace(1.0, 2.0, N), np.zeros(N)])
    drag = np.array([0.0, 0.9])
    sol = eagle.ode.solve(fall, u0, (0.0, 3.0), args=(9.81, drag), event=floor,
                          on_event=bounce, record_events=3, max_step=0.1, rtol=1e-9,
                          atol=1e-9)
    first = np.sqrt(2 * u0[0] / 9.81)
    np.testing.assert_allclose(sol.t_events[0], first, atol=1e-8)
    assert (sol.events >= 2).all()
    back = eagle.ode.solve(fall, sol.u, (3.0, 2.9), args=(9.81, drag))
    @hawk.func
    def fall_p(u, t, p):
        return hawk.vec2(u[1], -p[0] - p[1] * u[1])
    ref = eagle.ode.solve(fall_p, sol.u, (3.0, 2.9), np.array([9.81, 0.0]))
    np.testing.assert_array_equal(back.u, ref.u)


@hawk.func
def wrong_shape(u, t, a, b):
    return a


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(p=(np.ones((2, 2)), np.ones(3))), ValueError, "pass a model's several arguments "
     "as args="),
    (dict(p=(np.ones(3), 1.0)), ValueError, r"p\[0\] has shape \(3,\).*args="),
    (dict(p=1.0, args=(1.0, 2.0)), ValueError, "not both"),
    (dict(args=np.ones(3)), TypeError, "args must be a tuple"),
    (dict(args=(1.0, np.ones((2, 2, 2, 2)))), ValueError, r"args\[1\] must be a number"),
    (dict(args=(1.0, "x")), TypeError, r"args\[1\] must be real numbers"),
    (dict(args=(np.ones((16, 16)), 1.0)), ValueError, "257 numbers in all"),
])
def test_bad_arguments_are_refused_by_name(kwargs, error, message):
    with pytest.raises(error, match=message):
        eagle.ode.solve(wrong_shape, np.ones((2, N)), (0.0, 1.0), **kwargs)


def test_a_wrong_result_names_f_and_the_arguments():
    with pytest.raises(ValueError, match=r"f must return du/dt.*args as \(Matrix\[3, 3\], "
                                         r"a number\); wrong_shape\(\) returned"):
        eagle.ode.solve(wrong_shape, np.ones((2, N)), (0.0, 1.0), args=(np.eye(3), 1.0))


@hawk.func
def drift(u, t, rate, level):
    return -rate * (u - level)


@hawk.func
def spread(u, t, rate, level):
    return 0.1 * level + 0.0 * u


@hawk.func
def kick(u, t, rate, level):
    return u + level


@hawk.func
def drift_p(u, t, p):
    return -p[0] * (u - p[1])


@hawk.func
def spread_p(u, t, p):
    return 0.1 * p[1] + 0.0 * u


@hawk.func
def kick_p(u, t, p):
    return u + p[1]


def test_noise_and_on_stop_take_the_arguments():
    """An SDE's diffusion and a stop's update get the arguments too: the same bits as the
    same model on a hand-packed ``p`` (the same seed)."""
    rate = np.linspace(0.5, 1.5, N)
    p = np.stack([rate, np.full(N, 2.0)])
    u0 = np.ones(N)
    sde = eagle.ode.solve(drift, u0, (0.0, 1.0), args=(rate, 2.0), method="euler_maruyama",
                          noise=spread, dt=0.01, seed=7)
    sde_p = eagle.ode.solve(drift_p, u0, (0.0, 1.0), p, method="euler_maruyama",
                            noise=spread_p, dt=0.01, seed=7)
    np.testing.assert_array_equal(sde.u, sde_p.u)
    kicked = eagle.ode.solve(drift, u0, (0.0, 2.0), args=(rate, 2.0), tstops=(0.5, 0.5),
                             on_stop=kick)
    kicked_p = eagle.ode.solve(drift_p, u0, (0.0, 2.0), p, tstops=(0.5, 0.5), on_stop=kick_p)
    np.testing.assert_array_equal(kicked.u, kicked_p.u)
    assert not np.array_equal(kicked.u, eagle.ode.solve(drift, u0, (0.0, 2.0),
                                                        args=(rate, 2.0)).u)


@hawk.func
def _tanh(v):
    out = hawk.zeros(hawk.width(v))
    for i in range(hawk.width(v)):
        out[i] = math.tanh(v[i])
    return out


@hawk.func
def tiny_net(u, t, W1, b1, W2, b2):
    return W2 @ _tanh(W1 @ u + b1) + b2 - 0.5 * u


def test_the_sensitivity_to_a_small_networks_weights_against_finite_differences():
    """``du/dp`` for ``args=(W1, b1, W2, b2)`` (4 x 2, 4, 2 x 4, 2: 22 numbers, the state
    and its sensitivities 2 + 2 x 22 = 46 components): each column against central
    differences of tightly solved runs, in the arguments' order, row by row."""
    rng = np.random.default_rng(5)
    weights = [rng.normal(size=(4, 2)) * 0.7, rng.normal(size=4) * 0.2,
               rng.normal(size=(2, 4)) * 0.7, rng.normal(size=2) * 0.2]
    u0 = np.array([[0.5, -0.3, 1.0], [0.2, 0.4, -0.6]])
    tight = dict(rtol=1e-11, atol=1e-11)
    sol = eagle.ode.solve(tiny_net, u0, (0.0, 1.0), args=tuple(weights), sensitivity="p",
                          **tight)
    assert sol.du_dp.shape == (2, 22, 3)
    flat = np.concatenate([w.ravel() for w in weights])
    sizes = np.cumsum([0] + [w.size for w in weights])

    def end_state(numbers):
        parts = [numbers[a:b].reshape(w.shape) for a, b, w in zip(sizes[:-1], sizes[1:],
                                                                  weights, strict=True)]
        return eagle.ode.solve(tiny_net, u0, (0.0, 1.0), args=tuple(parts), **tight).u

    for j in (0, 7, 9, 13, 21):  # a number of each argument
        step = np.zeros(22)
        step[j] = 1e-5
        central = (end_state(flat + step) - end_state(flat - step)) / 2e-5
        np.testing.assert_allclose(sol.du_dp[:, j], central, rtol=1e-5, atol=1e-8)
