"""SciPy's ``RK23`` (Bogacki-Shampine 3(2)) and ``DOP853`` (Hairer's 8(5,3)), added as data only:
a tableau file each (``hawk.ode.tableaus``) and a line of ``hawk.ode.METHODS``, run by the
generic step, interpolant and controllers. With SciPy's controller (an I-controller for the
orders SciPy gives them, and its first step), they take SciPy's very steps on SciPy's kind of
test problems (exponential decay, Lotka-Volterra, the Arenstorf orbit) and end where SciPy
ends; their interpolants give SciPy's dense output; fixed steps fall at orders 3 and 8; events
work; every backend equals the reference executor."""

from __future__ import annotations

import math

import numpy as np
import pytest

import eagle.ode
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import adaptive_bindings, assert_adaptive_run_matches_reference
from hawk.ode import METHODS
from ode_models import G, bounce, free_fall, height

integrate = pytest.importorskip("scipy.integrate")

#: the restricted three-body problem's mass ratio and a periodic orbit (Arenstorf's, as in
#: Hairer, Norsett and Wanner I, II.0, the classic test of DOP853)
MU = 0.012277471
ARENSTORF_U0 = (0.994, 0.0, 0.0, -2.00158510637908252240537862224)
ARENSTORF_T = 17.0652165601579625588917206249


@hawk.func
def decay(u, t, k):
    return -k * u


@hawk.func
def lotka_volterra(u, t, p):
    return hawk.vec2(1.5 * u.x - u.x * u.y, -3.0 * u.y + u.x * u.y)


@hawk.func
def arenstorf(u, t, p):
    m = 1.0 - MU
    d1 = ((u.x + MU) ** 2 + u.y ** 2) ** 1.5
    d2 = ((u.x - m) ** 2 + u.y ** 2) ** 1.5
    return hawk.vec4(u.z, u.w, u.x + 2.0 * u.w - m * (u.x + MU) / d1 - MU * (u.x - m) / d2,
                     u.y - 2.0 * u.z - m * u.y / d1 - MU * u.y / d2)


def _arenstorf_python(t, u):
    x, y, vx, vy = u
    m = 1.0 - MU
    d1 = ((x + MU) ** 2 + y**2) ** 1.5
    d2 = ((x - m) ** 2 + y**2) ** 1.5
    return [vx, vy, x + 2 * vy - m * (x + MU) / d1 - MU * (x - m) / d2,
            y - 2 * vx - m * y / d1 - MU * y / d2]


#: name -> (hawk model, SciPy's, u0, t_end, p)
PROBLEMS = {
    "decay": (decay, lambda t, y: -0.5 * y, (1.0,), 10.0, 0.5),
    "lotka-volterra": (lotka_volterra,
                       lambda t, z: [1.5 * z[0] - z[0] * z[1], -3 * z[1] + z[0] * z[1]],
                       (10.0, 5.0), 15.0, 0.0),
    "arenstorf": (arenstorf, _arenstorf_python, ARENSTORF_U0, ARENSTORF_T, 0.0),
}
#: the method's name in SciPy, and its right-hand side evaluations per attempted step
SCIPY = {"rk23": ("RK23", 3), "dop853": ("DOP853", 12)}
#: (method, rtol, atol): SciPy's default tolerances and tighter ones
TOLERANCES = [("rk23", 1e-3, 1e-6), ("rk23", 1e-6, 1e-9), ("dop853", 1e-6, 1e-9),
              ("dop853", 1e-10, 1e-12)]


def _eagle(problem, method, rtol, atol, **options):
    f, _, u0, t_end, p = PROBLEMS[problem]
    u0 = np.array(u0)
    return eagle.ode.solve(f, u0 if len(u0) == 1 else u0[:, None], (0.0, t_end), p=p,
                           method=method, rtol=rtol, atol=atol, **options)


@pytest.mark.parametrize("problem", list(PROBLEMS))
@pytest.mark.parametrize("method, rtol, atol", TOLERANCES)
def test_the_steps_and_the_end_are_scipys(problem, method, rtol, atol):
    """The same accepted and rejected steps as SciPy (measured: every one of these 12 cases;
    e.g. Arenstorf with rk23 at 1e-6, 1482 and 57; with dop853 at 1e-10, 211 and 65), and the
    end within one tolerance unit ``atol + rtol |u|`` of SciPy's, or within 1% of SciPy's own
    global error where that is far larger (Arenstorf at 1e-10: 900 units apart, where both are
    7e5 units from the orbit, an amplification of rounding by its close approach to the moon)."""
    _, fun, u0, t_end, _ = PROBLEMS[problem]
    name, per_step = SCIPY[method]
    theirs = integrate.solve_ivp(fun, (0.0, t_end), u0, method=name, rtol=rtol, atol=atol)
    exact = integrate.solve_ivp(fun, (0.0, t_end), u0, method="DOP853", rtol=1e-13,
                                atol=1e-14).y[:, -1]
    ours = _eagle(problem, method, rtol, atol)
    accepted = len(theirs.t) - 1
    rejected = (theirs.nfev - 2) // per_step - accepted  # f0 and the first step's probe
    assert (int(ours.accepted[0]), int(ours.rejected[0])) == (accepted, rejected)
    end = np.ravel(ours.u[..., 0] if ours.u.ndim == 2 else ours.u)
    allowed = np.maximum(atol + rtol * np.abs(theirs.y[:, -1]),
                         0.01 * np.abs(theirs.y[:, -1] - exact))
    assert (np.abs(end - theirs.y[:, -1]) <= allowed).all()


@pytest.mark.parametrize("method, rtol, atol", [("rk23", 1e-6, 1e-9), ("dop853", 1e-8, 1e-10)])
def test_saved_values_are_scipys_dense_output(method, rtol, atol):
    """Lotka-Volterra saved at 61 times: SciPy's dense output on the same steps, to 1e-11
    (measured 1.1e-12 and 2.1e-13): DOP853's is Hairer's CONTD8, here multiplied out into
    powers of theta (``from_hairer_dense``) with its three extra stages."""
    _, fun, u0, t_end, _ = PROBLEMS["lotka-volterra"]
    theirs = integrate.solve_ivp(fun, (0.0, t_end), u0, method=SCIPY[method][0], rtol=rtol,
                                 atol=atol, dense_output=True)
    ours = _eagle("lotka-volterra", method, rtol, atol, saveat=(0.0, t_end, 61))
    ts = np.linspace(0.0, t_end, 61)
    assert np.abs(ours.saved[:, :, 0] - theirs.sol(ts).T).max() < 1e-11


def _fixed_steps(attempt, f, u, t_end, n):
    """``u`` after ``n`` steps of ``t_end / n`` (the funcs called from Python on NumPy
    values)."""
    h, t = t_end / n, 0.0
    k1 = f(u, t, 1.0)
    for _ in range(n):
        u, _, _, k1 = attempt(f, u, k1, t, h, 1.0)
        t += h
    return u


def _slope(sizes, errors):
    return np.polyfit(np.log(sizes), np.log(errors), 1)[0]


def _kepler(u, t, mu):
    r3 = (u[0] ** 2 + u[1] ** 2) ** 1.5
    return np.array([u[2], u[3], -mu * u[0] / r3, -mu * u[1] / r3])


def test_fixed_steps_fall_at_orders_3_and_8():
    """rk23 on ``u' = 2 u cos t`` to t = 8 (50 to 800 steps: fitted slope 3.00), dop853 on one
    Kepler orbit of eccentricity 0.7 (64 to 256 steps: 8.05), each within 0.5 of its order,
    the errors well above roundoff."""
    growth = (lambda u, t, p: 2.0 * u * math.cos(t))
    steps = np.array([50, 100, 200, 400, 800])
    errors = [abs(_fixed_steps(METHODS["rk23"].attempt, growth, 1.0, 8.0, n)
                  - math.exp(2.0 * math.sin(8.0))) for n in steps]
    assert abs(_slope(8.0 / steps, errors) - 3.0) < 0.5, errors
    e = 0.7
    start = np.array([1 - e, 0.0, 0.0, math.sqrt((1 + e) / (1 - e))])
    steps = np.array([64, 96, 128, 192, 256])
    errors = [np.abs(_fixed_steps(METHODS["dop853"].attempt, _kepler, start, 2 * math.pi, n)
                     - start).max() for n in steps]
    assert min(errors) > 1e-11
    assert abs(_slope(2 * math.pi / steps, errors) - 8.0) < 0.5, errors


@pytest.mark.parametrize("method", list(SCIPY))
def test_events_work_with_the_new_methods(method):
    """A bouncing ball: the bounce located on the method's interpolant; with ``on_event``,
    one bounce."""
    u0 = np.vstack([np.full(2, 1.0), np.zeros(2)])
    sol = eagle.ode.solve(free_fall, u0, (0.0, 0.5), p=0.9, method=method, rtol=1e-8,
                          atol=1e-10, event=height)
    assert (sol.status == 2).all()
    np.testing.assert_allclose(sol.t, math.sqrt(2.0 / G), rtol=1e-8)
    bounced = eagle.ode.solve(free_fall, u0, (0.0, 1.0), p=0.9, method=method, rtol=1e-8,
                              atol=1e-10, event=height, on_event=bounce)
    assert (bounced.events == 1).all()


@pytest.mark.parametrize("method", list(SCIPY))
def test_the_new_kernels_equal_the_reference_on_every_backend(target, method):  # noqa: F811
    n = 50
    kernel = hawk.ode.dopri5_kernel(lotka_volterra, hawk.Vec2, hawk.Scalar, saveat=True,
                                    method=method)
    rng = np.random.default_rng(3)
    u0 = np.vstack([rng.uniform(5.0, 10.0, n), rng.uniform(2.0, 5.0, n)])
    k1 = np.vstack([1.5 * u0[0] - u0[0] * u0[1], -3.0 * u0[1] + u0[0] * u0[1]])
    bindings = adaptive_bindings(np.zeros(n), u0, k1, t_end=2.0, rtol=1e-8, atol=1e-8, h=1e-3,
                                 save_every=0.5, save_count=5)
    assert_adaptive_run_matches_reference(target, kernel, bindings, 3000)


def test_dop853_kernels_compile_for_the_gpu_with_nvrtc():
    """The paired error norm, the extra stages and the records of several events in CUDA
    C++ that NVRTC compiles (no GPU needed)."""
    nvrtc = pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.emit import emit_cuda

    kernel = hawk.ode.dopri5_kernel(free_fall, hawk.Vec2, hawk.Scalar, saveat=True,
                                    method="dop853", event=height, terminal=(True,),
                                    record_events=True)
    assert nvrtc.compile_source(emit_cuda(kernel.specialize({})), "sm_90")[:4] == b"\x7fELF"
