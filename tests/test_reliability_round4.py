"""Reliability round four (issue 40): ``solve`` never writes into the caller's arrays, every
refusal names the user's argument before anything runs, failed fixed steps say so, NaN pivots
and breakpoint slopes as documented.

Each test here failed on the code before this round (the cache's cases are in
``test_cache_seal.py``): say so when adding one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import eagle
import hawk
import hawk.ode
from eagle.ode import solve
from hawk import Mutable, Out, Scalar, Table, Terminated

N = 6


@hawk.func
def decay(u, t, p):
    return -p * u


@hawk.func
def spring(u, t, p):
    return hawk.vector(u[1], -p * u[0])


@hawk.func
def height(u, t, p):
    return u[0]


@hawk.func
def speed(u, t, p):
    return u[1]


@hawk.func
def both(u, t, p):
    return hawk.vector(u[0], u[1])


@hawk.func
def drag(u, t, p, xp, fp):
    return -hawk.interp(t, xp, fp) * u


def read_only(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


# -- solve never writes into an array the caller passed -----------------------------------------

CASES = {
    "adaptive, per-sample everything": dict(
        f=decay, u0=np.linspace(1.0, 2.0, N), t_span=(np.zeros(N), np.full(N, 1.0)),
        kw=dict(p=np.linspace(0.5, 1.0, N), rtol=np.full(N, 1e-6), atol=np.full(N, 1e-8),
                max_step=np.full(N, 0.5), saveat=(0.0, 1.0, 3))),
    "vector state, shared p, event": dict(
        f=spring, u0=np.array([np.linspace(1.0, 2.0, N), np.zeros(N)]),
        t_span=(np.zeros(N), 3.0), kw=dict(p=1.0, event=height, record_events=2)),
    "fixed step": dict(
        f=decay, u0=np.linspace(1.0, 2.0, N), t_span=(np.zeros(N), np.ones(N)),
        kw=dict(p=np.ones(N), method="rk4", dt=np.full(N, 0.1))),
    "backward, float32": dict(
        f=decay, u0=np.linspace(1.0, 2.0, N).astype(np.float32),
        t_span=(np.ones(N, np.float32), np.zeros(N, np.float32)),
        kw=dict(p=np.ones(N, np.float32))),
    "tables, sensitivity": dict(
        f=drag, u0=np.linspace(1.0, 2.0, N), t_span=(np.zeros(N), 1.0),
        kw=dict(p=np.ones(N), tables=(np.linspace(0.0, 2.0, 5), np.linspace(1.0, 2.0, 5)),
                sensitivity="u0")),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_solve_never_writes_into_the_callers_arrays(case):
    """Every argument passed as a read-only array, compared byte for byte afterwards; no
    array of the solution is one of them. Before: ``t_span[0]`` of shape ``(n,)`` was bound as
    the kernel's time and came back holding the end times (``sol.t is t0``)."""
    spec = CASES[case]
    u0 = read_only(spec["u0"])
    t0, t1 = (read_only(v) if isinstance(v, np.ndarray) else v for v in spec["t_span"])
    kw = {k: (read_only(v) if isinstance(v, np.ndarray) else v) for k, v in spec["kw"].items()}
    if "tables" in kw:
        kw["tables"] = tuple(read_only(t) for t in kw["tables"])
    given = [u0, t0, t1, *[v for v in kw.values() if isinstance(v, np.ndarray)],
             *kw.get("tables", ())]
    before = [a.tobytes() if isinstance(a, np.ndarray) else a for a in given]
    sol = solve(spec["f"], u0, (t0, t1), **kw)
    after = [a.tobytes() if isinstance(a, np.ndarray) else a for a in given]
    assert after == before
    mine = {id(a) for a in given if isinstance(a, np.ndarray)}
    assert not {id(v) for v in (sol.u, sol.t, sol.saved, *sol.arrays.values())} & mine
    again = solve(spec["f"], u0, (t0, t1), **kw)
    np.testing.assert_array_equal(again.u, sol.u)


def test_a_fortran_ordered_u0_is_copied_like_any_other():
    """Before: refused as "'k1' (Mutable[Vec2]) is not contiguous"."""
    u0 = np.asfortranarray(np.array([np.linspace(1.0, 2.0, N), np.zeros(N)]))
    sol = solve(spring, u0, (0.0, 1.0), p=1.0)
    ref = solve(spring, np.ascontiguousarray(u0), (0.0, 1.0), p=1.0)
    np.testing.assert_array_equal(sol.u, ref.u)


@pytest.mark.parametrize("method", [name for name, m in hawk.ode.METHODS.items()
                                    if not (m.adaptive or m.stochastic)])
def test_fixed_step_methods_report_a_blow_up_as_failed(method):
    """A state that overflowed to inf or NaN is status -1, as the adaptive methods report it;
    the others 1. Before: status 1 (done) for every sample."""
    rates = np.array([-1e300, -1.0, 1.0, -1e300, 0.5, 2.0])
    sol = solve(decay, np.ones(N), (0.0, 1.0), p=rates, method=method, dt=0.1)
    assert list(sol.status) == [-1, 1, 1, -1, 1, 1]
    assert not np.isfinite(sol.u[0])
    assert list(sol.done) == [False, True, True, False, True, True]


# -- refusals name the user's argument, before anything runs ------------------------------------

@pytest.mark.parametrize("name, kwargs, message", [
    ("complex u0", dict(u0=np.ones(N) + 1j), r"u0 must be real numbers.*complex"),
    ("complex p", dict(p=np.ones(N) + 0.5j), r"p must be real numbers.*complex"),
    ("complex number p", dict(p=1 + 2j), r"p must be real numbers.*complex"),
    ("string u0", dict(u0=np.array(["1.0"] * N)), r"u0 must be real numbers.*strings"),
    ("string t0", dict(t_span=(["0"] * N, 1.0)), r"t_span\[0\] must be real numbers.*strings"),
    ("complex rtol", dict(rtol=np.full(N, 1e-6 + 0j)), r"rtol must be real numbers"),
    ("complex table", dict(tables=(np.ones(3) + 1j,), f=drag),
     r"tables\[0\] must be real numbers"),
])
def test_complex_and_string_inputs_are_refused_by_name(name, kwargs, message):
    """Before: accepted, the imaginary parts dropped with only NumPy's ComplexWarning, and
    numeric strings parsed."""
    args = dict(f=decay, u0=np.ones(N), t_span=(0.0, 1.0), p=1.0)
    args.update(kwargs)
    if args["f"] is drag:
        args["tables"] = (*args["tables"], np.ones(3))
    f, u0, t_span = args.pop("f"), args.pop("u0"), args.pop("t_span")
    with pytest.raises(TypeError, match=message):
        solve(f, u0, t_span, **args)


@hawk.func
def constant_jacobian(u, t, p):
    return 1.0


@hawk.func
def widened(u, t, p):
    return hawk.vector(u[0], u[1], u[0])


@hawk.func
def bounce(u, t, p):
    return hawk.vector(-u[0], -u[1])


@pytest.mark.parametrize("name, call, error, message", [
    ("jac returns a number for 2 states",
     lambda: solve(spring, np.ones((2, N)), (0, 1), method="rodas5p", jac=constant_jacobian),
     ValueError, r"jac must return df/du: Matrix\[2, 2\].*returned float"),
    ("jac not a func",
     lambda: solve(spring, np.ones((2, N)), (0, 1), method="rosenbrock23", jac=np.eye(2)),
     TypeError, r"jac must be a @hawk.func"),
    ("f wider than u0",
     lambda: solve(widened, np.ones((2, N)), (0, 1)),
     ValueError, r"f must return du/dt shaped as u0: Vec2.*returned Vec3"),
    ("p wider than the scalar state",
     lambda: solve(decay, np.ones(N), (0, 1), p=np.ones((3, N))),
     ValueError, r"f must return du/dt shaped as u0: a number.*p as Vec3.*returned Vec3"),
    ("p wider, fixed step",
     lambda: solve(decay, np.ones(N), (0, 1), p=np.ones((3, N)), method="rk4", dt=0.1),
     ValueError, r"f must return du/dt shaped as u0"),
    ("event=[g0, g1] with a terminal of the wrong length",
     lambda: solve(spring, np.ones((2, N)), (0, 1), event=[height, speed],
                   terminal=(True, False, True)),
     ValueError, r"terminal has 3 entries but event returns 2 components"),
    ("event list of non-funcs",
     lambda: solve(spring, np.ones((2, N)), (0, 1), event=[height, 3.0]),
     TypeError, r"event\[1\] must be a @hawk.func"),
    ("record_events=True",
     lambda: solve(spring, np.ones((2, N)), (0, 1), event=height, record_events=True),
     ValueError, r"record_events must be an int >= 0.*got True"),
    ("record_events beyond memory",
     lambda: solve(spring, np.ones((2, N)), (0, 1), event=height, record_events=10**12),
     ValueError, r"record_events: an array of shape .* would need .*iB"),
    ("saveat beyond memory",
     lambda: solve(spring, np.ones((2, N)), (0, 1), saveat=(0.0, 1.0, 10**12)),
     ValueError, r"saveat: an array of shape .* would need .*iB"),
    ("saveat count True",
     lambda: solve(spring, np.ones((2, N)), (0, 1), saveat=(0.0, 1.0, True)),
     ValueError, r"saveat: count must be an int >= 1"),
    ("zero-stride table of 2**38",
     lambda: solve(drag, np.ones(N), (0, 1), p=1.0,
                   tables=(np.broadcast_to(np.float64(1.0), (2**38,)), np.ones(3))),
     ValueError, r"tables\[0\]: a table of shape \(274877906944,\).* would need 2.0 TiB"),
    ("threads=0",
     lambda: solve(decay, np.ones(N), (0, 1), threads=0),
     ValueError, r"threads must be an int from 1 to"),
    ("threads=True",
     lambda: solve(decay, np.ones(N), (0, 1), threads=True),
     ValueError, r"threads must be an int from 1 to"),
    ("max_steps=True",
     lambda: solve(decay, np.ones(N), (0, 1), max_steps=True),
     ValueError, r"max_steps must be an int >= 1"),
    ("on_event of the wrong shape",
     lambda: solve(spring, np.ones((2, N)), (0, 1), event=height, on_event=height),
     ValueError, r"on_event must return the new state shaped as u0: Vec2"),
])
def test_refusals_name_the_users_argument(name, call, error, message):
    """Before: an error from inside ``hawk/ode`` or about the kernels' own ``'k1'``, a
    MemoryError of tens of GiB or 2 TiB with no name, ``TypeError: an integer is required``,
    ``set_num_threads(k)`` named for ``threads``, or (jac as a number) silently accepted."""
    with pytest.raises(error, match=message):
        call()


def test_several_events_as_a_list_and_as_a_vector():
    """SciPy's ``events=[g0, g1]`` form (each func's ``.terminal``/``.direction`` read as SciPy
    reads them), and a vector-valued event with one ``terminal`` for every component. Before:
    ``TypeError: unhashable type: 'list'`` and "expected a scalar here, got Vec2"."""
    u0 = np.array([np.linspace(0.5, 1.0, N), np.zeros(N)])
    listed = solve(spring, u0, (0.0, 10.0), p=1.0, event=[height, speed])
    vector = solve(spring, u0, (0.0, 10.0), p=1.0, event=both)
    np.testing.assert_array_equal(listed.t, vector.t)
    np.testing.assert_allclose(listed.t, np.pi / 2, rtol=1e-6)  # x falls through 0 first

    speed.direction, speed.terminal = 1, True
    height.terminal = False
    try:
        marked = solve(spring, u0, (0.0, 10.0), p=1.0, event=[height, speed], record_events=4)
    finally:
        del speed.direction, speed.terminal, height.terminal
    np.testing.assert_allclose(marked.t, np.pi, rtol=1e-6)  # v rises through 0 at t = pi
    assert list(marked.which_events[:, 0]) == [0, 1, -1, -1]


# -- bindings, linear algebra, tables ---------------------------------------------------------

@hawk.kernel
def determinant(m: hawk.Matrix[2, 2], terminated: Terminated, y: Mutable[Scalar]):
    y = hawk.det(m)
    terminated = True


def test_a_bool_matrix_is_a_binding_error_naming_it():
    """Before: an internal ``IRError`` from the IR verifier (a cast of bool to float64)."""
    with pytest.raises(eagle.BindingTypeError, match=r"'m' \(Matrix\[2, 2\], bound as bool\)"):
        eagle.simulate(determinant, max_steps=1, m=np.ones((2, 2, N), dtype=bool),
                       y=np.zeros(N))


@pytest.mark.parametrize("i, j", [(i, j) for i in range(3) for j in range(3)])
def test_a_nan_makes_every_component_that_depends_on_it_nan(i, j):
    """Every component of ``solve``'s and ``inverse``'s result depends on every entry of a
    dense matrix: a NaN anywhere makes them all NaN, on the host and in a kernel. Before:
    ``[nan, 1, -0.5]`` with the NaN in the first pivot, ``[nan, nan, 1]`` at (2, 1)."""
    a = np.array([[1.0, 2, 3], [4, 5, 6], [7, 8, 10]])
    a[i, j] = np.nan
    assert np.isnan(hawk.solve(a, np.array([1.0, 2, 3]))).all()
    assert np.isnan(hawk.inverse(a)).all()
    assert np.isnan(hawk.det(a))


@hawk.func
def tabulated(x, xp, fp):
    return hawk.interp(x, xp, fp)


@hawk.kernel
def slope_of_table(x: Scalar, xp: Table, fp: Table, terminated: Terminated, dy: Out[Scalar]):
    dy = hawk.jacobian(tabulated, x, xp, fp)
    terminated = True


def test_the_derivative_of_interp_at_a_breakpoint_is_the_right_slope():
    """At an interior breakpoint ``hawk.interp``'s derivative is the slope of the interval to
    its right (0 from the last breakpoint on and below the first); its value stays NumPy's,
    bit for bit. Before: exactly 0 at every breakpoint."""
    xp = np.array([0.0, 1.0, 2.0, 4.0])
    fp = np.array([-0.0, 3.0, 1.0, 2.0])
    x = np.array([0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, -1.0])
    dy = np.full(x.size, np.nan)
    eagle.simulate(slope_of_table, max_steps=1, x=x, xp=xp, fp=fp, dy=dy)
    np.testing.assert_array_equal(dy, [3.0, 3.0, -2.0, 0.5, 0.5, 0.0, 0.0, 0.0])


@hawk.kernel
def interp_value(x: Scalar, xp: Table, fp: Table, terminated: Terminated, y: Out[Scalar]):
    y = hawk.interp(x, xp, fp)
    terminated = True


def test_interp_at_breakpoints_keeps_numpys_bits():
    xp = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    fp = np.array([-0.0, 0.0, np.inf, -0.0, np.nan])
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 0.5, 2.5])
    y = np.zeros(x.size)
    with np.errstate(all="ignore"):
        expected = np.interp(x, xp, fp)
    eagle.simulate(interp_value, max_steps=1, x=x, xp=xp, fp=fp, y=y)
    assert y.tobytes() == expected.tobytes() or np.array_equal(
        np.signbit(y), np.signbit(expected)) and np.array_equal(y, expected, equal_nan=True)
    assert math.copysign(1.0, y[0]) == -1.0  # -0.0 at the first breakpoint, as NumPy


def test_the_suite_checks_every_refusal_for_internal_names():
    """``conftest`` wraps ``pytest.raises``: a refusal quoting a kernel's own parameter fails
    the test that caught it (in both of ``pytest.raises``'s forms), others pass through."""
    with pytest.raises(AssertionError, match="internal parameter 'k1'"):
        with pytest.raises(ValueError):
            raise ValueError("'k1' (Mutable[Vec2]) is not contiguous")

    def refuse():
        raise eagle.BindingValueError("'save_first' must be a number")

    with pytest.raises(AssertionError, match="internal parameter 'save_first'"):
        pytest.raises(ValueError, refuse)
    with pytest.raises(ValueError, match="u0 must"):
        raise ValueError("u0 must be real numbers")


def test_a_list_of_events_matches_scipys_events_list():
    """SciPy's form ``events=[g0, g1]`` (non-terminal, directions as attributes) against
    ``solve_ivp(events=[...])``: the same crossings, at the same times to the tolerance, in the
    same order, each with the index of the function that fired (issue 43)."""
    from scipy.integrate import solve_ivp

    u0 = np.array([[1.0, 0.6], [0.0, 0.3]])
    height.terminal, height.direction = False, -1
    speed.terminal, speed.direction = False, 1
    try:
        sol = solve(spring, u0, (0.0, 12.0), p=np.array([1.0, 2.0]), event=[height, speed],
                    record_events=8, rtol=1e-10, atol=1e-12)
    finally:
        del height.terminal, height.direction, speed.terminal, speed.direction
    for i in range(2):
        rate = (1.0, 2.0)[i]

        def h(t, y):
            return y[0]

        def s(t, y):
            return y[1]

        h.direction, s.direction = -1, 1
        ref = solve_ivp(lambda t, y, rate=rate: [y[1], -rate * y[0]], (0.0, 12.0), u0[:, i],
                        events=[h, s], rtol=1e-10, atol=1e-12)
        expected = sorted([(t, 0) for t in ref.t_events[0]] + [(t, 1) for t in ref.t_events[1]])
        count = int((sol.which_events[:, i] >= 0).sum())
        assert count == len(expected) > 2
        np.testing.assert_allclose(sol.t_events[:count, i], [t for t, _ in expected],
                                   rtol=0, atol=1e-7)
        assert list(sol.which_events[:count, i]) == [k for _, k in expected]
