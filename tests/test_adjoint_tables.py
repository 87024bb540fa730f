"""Gradients in the tables' values (issue 44): ``hawk.table_values`` in ``hawk.grad``/``vjp``
(each read's cotangent to the element it read) and ``solve(..., adjoint=True,
table_gradients=True)``, whose ``Solution.vjp`` gives ``Gradients.tables``.

Checked: ``interp``'s and ``interp_grid``'s cotangents in the values are the interpolation
weights; the solve's against central differences of the same accepted steps replayed (linear in
the values, so their differences are exact to rounding; the breakpoints' err by ``eps**2``: 1e-7
relative), for a forcing curve ``u' = -k u + interp(t, xs, fs)`` (both tables: values and
breakpoints) and a 2-D and a 3-D table read through ``interp_grid``, explicit and Rosenbrock;
a terminal event, ``args=`` and a solve backward in time against central differences of the
whole solve with its steps held by ``max_step``; the sum over samples the same bits whatever
the threads, and the left-to-right sum of the samples' own; the backward kernel equal to the
reference executor on every backend; bad input refused by name before anything runs."""

# No `from __future__ import annotations`: the replay kernel's annotations name its factory's
# arguments, which hawk resolves from the function's closure.
import numpy as np
import pytest

import eagle
import eagle.ode
import eagle.ode.solver
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import assert_matches_reference, load_kernel, reference_run
from hawk import Mutable, Scalar, Table, Terminated
from hawk.ode.adjoint import MAX_TABLE_GRADIENT_ELEMENTS, backward_kernel, step_map
from hawk.ode.kernels import _table_types, _with_tables


@hawk.func
def forced(u, t, k, xs, fs):
    return -k * u + hawk.interp(t, xs, fs)


@hawk.func
def surface(u, t, k, grid):
    return -k * u + hawk.interp_grid(grid, hawk.vec2(t, u), hawk.vec2(0.0, -1.0),
                                     hawk.vec2(2.0, 2.0))


@hawk.func
def volume(u, t, k, grid):
    return -k * u + hawk.interp_grid(grid, hawk.vec3(t, u, k), hawk.vec3(0.0, -1.0, 0.0),
                                     hawk.vec3(2.0, 2.0, 3.0))


XS = np.array([-0.1, 0.3, 0.7, 1.2, 1.6, 2.1])  # no breakpoint at a step's time
FS = np.array([1.0, 0.5, -0.3, 0.8, 1.2, 0.1])
GRID = np.array([[0.2, -0.4, 0.9], [1.1, 0.3, -0.6], [0.5, 0.8, 0.0], [-0.7, 0.4, 1.3]])
CUBE = np.random.default_rng(1).normal(size=(3, 2, 4))


def _replay(f, method: str, dims: tuple):
    """A kernel that takes the recorded steps again from ``u`` (its own tables): the computed
    solution's step map with the steps held fixed, for finite differences."""
    in_u = step_map(method)
    model = _with_tables(f, len(dims))
    T0, T1, T2 = _table_types(dims)

    def replay(p: Scalar, steps_t: Table[2], steps_h: Table[2], count: Scalar,
               terminated: Terminated, u: Mutable[Scalar], row: Mutable[Scalar],
               table0: T0, table1: T1, table2: T2):
        if row < count:
            s = hawk.sample_index()
            u = in_u(u, p, steps_t[row, s], steps_h[row, s], model, (table0, table1, table2))
            row += 1
        terminated = row >= count

    return hawk.kernel(replay, dtypes={"row": "int64", "count": "int64"})


@pytest.mark.parametrize("method", ["dopri5", "rodas5p"])
@pytest.mark.parametrize("f, tables", [(forced, (XS, FS)), (surface, (GRID,)),
                                      (volume, (CUBE,))],
                         ids=["interp", "interp_grid-2d", "interp_grid-3d"])
def test_table_gradients_match_central_differences_of_the_same_steps(method, f, tables):
    n = 4
    u0, k = np.linspace(0.5, 1.5, n), np.linspace(0.5, 2.0, n)
    sol = eagle.ode.solve(f, u0, (0.0, 2.0), k, method=method, tables=tables, rtol=1e-6,
                          atol=1e-6, adjoint=True, table_gradients=True)
    du = np.array([0.7, -1.2, 0.4, 1.1])
    g = sol.vjp(du)
    assert len(g.tables) == len(tables)
    kernel = _replay(f, method, tuple(t.ndim for t in tables))
    a = sol.arrays

    def loss(given):
        u = u0.copy()
        bound = {f"table{i}": table for i, table in enumerate(given)}
        eagle.until_done(kernel, max_steps=10_000, p=k, steps_t=a["steps_t"],
                         steps_h=a["steps_h"], count=a["accepted"].copy(), u=u,
                         row=np.zeros(n, dtype=np.int64), **bound).run()
        return u

    np.testing.assert_array_equal(loss(tables), sol.u)  # the replay is the solve's map
    for i, table in enumerate(tables):
        assert g.tables[i].shape == table.shape
        expected = np.zeros(table.shape)
        for index in np.ndindex(*table.shape):
            step = np.zeros(table.shape)
            step[index] = 1e-6
            plus = [t + step if j == i else t for j, t in enumerate(tables)]
            minus = [t - step if j == i else t for j, t in enumerate(tables)]
            expected[index] = du @ (loss(plus) - loss(minus)) / 2e-6
        np.testing.assert_allclose(g.tables[i], expected, rtol=1e-7, atol=1e-9)


def test_saved_states_cotangents_reach_the_tables_too():
    """``dsaved`` of one saved state at the end is ``du``: the same table gradient (to
    rounding; the saved state is the step's end, the same number)."""
    u0, k = np.linspace(0.5, 1.5, 3), np.linspace(0.5, 2.0, 3)
    options = dict(tables=(XS, FS), rtol=1e-8, atol=1e-8, adjoint=True, table_gradients=True)
    du = np.array([0.7, -1.2, 0.4])
    end = eagle.ode.solve(forced, u0, (0.0, 2.0), k, **options).vjp(du)
    saved = eagle.ode.solve(forced, u0, (0.0, 2.0), k, saveat=(0.0, 2.0, 5), **options)
    dsaved = np.zeros(saved.saved.shape)
    dsaved[-1] = du
    g = saved.vjp(dsaved=dsaved)
    assert np.abs(g.tables[1]).max() > 0.05
    for mine, theirs in zip(g.tables, end.tables, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-6, atol=1e-9)


@hawk.func
def level(u, t, k, xs, fs):
    return u - 0.5 * hawk.interp(t, xs, fs) - 0.4


@hawk.func
def forced_args(u, t, k, c, xs, fs):
    return -k * u + c * hawk.interp(t, xs, fs)


@pytest.mark.parametrize("f, span, options", [
    (forced, (0.0, 2.0), dict(event=level)),
    (forced_args, (0.0, 2.0), dict(args=(np.linspace(0.5, 2.0, 3), 2.0))),
    (forced, (2.0, 0.0), {}),
], ids=["terminal-event", "args", "backward-in-time"])
def test_events_args_and_backward_solves_against_central_differences(f, span, options):
    """Steps held to ``max_step`` (every one the same, whatever the tables), central
    differences of the whole solve: a terminal event whose level reads the curve (its time
    moves with the values), ``args=``, and a solve backward in time."""
    u0, du = np.linspace(1.5, 2.5, 3), np.array([0.7, -1.2, 0.4])
    p = None if "args" in options else np.linspace(0.5, 2.0, 3)
    fixed = dict(rtol=1e-10, atol=1e-10, max_step=1e-3, **options)

    def loss(fs, **more):
        return du @ eagle.ode.solve(f, u0, span, p, tables=(XS, fs), **fixed, **more).u

    sol = eagle.ode.solve(f, u0, span, p, tables=(XS, FS), adjoint=True, adjoint_steps=2100,
                          table_gradients=True, **fixed)
    if "event" in options:
        assert (sol.status == 2).sum() == 2  # two of the three end at the event
    got = sol.vjp(du).tables[1]
    expected = [(loss(FS + 1e-6 * e) - loss(FS - 1e-6 * e)) / 2e-6 for e in np.eye(6)]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_the_sum_over_samples_is_the_same_bits_whatever_the_threads():
    """Each sample's cotangent of the tables is its own (the samples' solves apart give the
    same bits), and the sum is theirs left to right, for one thread or two."""
    n = 6
    u0, k = np.linspace(0.5, 1.5, n), np.linspace(0.5, 2.0, n)
    du = np.linspace(-1.0, 1.0, n) + 0.3
    options = dict(tables=(XS, FS), rtol=1e-7, atol=1e-7, adjoint=True, table_gradients=True)
    runs = [eagle.ode.solve(forced, u0, (0.0, 2.0), k, threads=threads, **options).vjp(du)
            for threads in (1, 2)]
    for a, b in zip(runs[0].tables, runs[1].tables, strict=True):
        np.testing.assert_array_equal(a, b)
    alone = [eagle.ode.solve(forced, u0[i:i + 1], (0.0, 2.0), k[i:i + 1], **options)
             .vjp(du[i:i + 1]).tables for i in range(n)]
    for i in range(2):
        by_sample = np.stack([tables[i] for tables in alone], axis=-1)
        np.testing.assert_array_equal(runs[0].tables[i], np.cumsum(by_sample, axis=-1)[..., -1])


def test_the_backward_kernel_with_table_gradients_equals_the_reference_on_every_backend(
        target):  # noqa: F811
    n = 12
    u0, k = np.linspace(0.5, 1.5, n), np.linspace(0.5, 2.0, n)
    sol = eagle.ode.solve(forced, u0, (0.0, 2.0), k, tables=(XS, FS), rtol=1e-6, atol=1e-6,
                          adjoint=True, table_gradients=True)
    a, record = sol.arrays, sol.adjoint
    backward = backward_kernel(record.f, record.state, record.params, tables=(1, 1),
                               table_sizes=(6, 6))
    bindings = dict(p=k, steps_u=a["steps_u"], steps_t=a["steps_t"], steps_h=a["steps_h"],
                    dsaved=np.zeros((1, n)), save_first=0.0, save_every=0.0,
                    first_save=np.zeros(n, dtype=np.int64), row=a["accepted"].copy(),
                    lam=np.ones(n), mu=np.zeros(n), t_next=a["t"].copy(),
                    saves=np.zeros(n, dtype=np.int64), status=a["status"],
                    accepted=a["accepted"], theta_end=a["theta_end"], table0=XS, table1=FS,
                    mu_tables=np.zeros((12, n)))
    expected, _ = reference_run(backward, bindings, 1000)
    g = sol.vjp(np.ones(n))
    np.testing.assert_array_equal(np.cumsum(expected["mu_tables"], axis=-1)[:, -1],
                                  np.concatenate(g.tables))  # vjp runs this very kernel
    arrays = target.put(bindings)
    eagle.until_done(eagle.deploy(backward, target.target.device), max_steps=1000,
                     **arrays).run()
    actual = target.get(arrays)
    names = ("lam", "mu", "mu_tables", "row")
    assert_matches_reference({k: actual[k] for k in names}, {k: expected[k] for k in names},
                             target.target.exact_math, rtol=1e-12)


@pytest.mark.parametrize("options, message", [
    (dict(table_gradients=True), r"table_gradients=True needs adjoint=True"),
    (dict(adjoint=True, table_gradients=True, tables=()), r"table_gradients=True needs "
                                                           r"tables="),
    (dict(adjoint=True, table_gradients=1), r"table_gradients must be True or False"),
    (dict(adjoint=True, table_gradients=True,
          tables=(XS, np.linspace(0.0, 1.0, MAX_TABLE_GRADIENT_ELEMENTS - 4))),
     rf"at most {MAX_TABLE_GRADIENT_ELEMENTS} elements together .* these hold "
     rf"{MAX_TABLE_GRADIENT_ELEMENTS + 2} \(tables\[0\]: 6, tables\[1\]: "
     rf"{MAX_TABLE_GRADIENT_ELEMENTS - 4}\)"),
    (dict(adjoint=True, table_gradients=True, tables=(XS, FS.astype(np.float32))),
     r"tables\[1\] is float32"),
])
def test_bad_table_gradients_are_refused_by_name_before_anything_runs(monkeypatch, options,
                                                                      message):
    def no_run(*args, **kwargs):
        raise AssertionError("the solve ran")

    monkeypatch.setattr(eagle.ode.solver, "deploy", no_run)
    monkeypatch.setattr(eagle.ode.solver, "simulate", no_run)
    tables = options.pop("tables", (XS, FS))
    f = forced if tables else decay
    with pytest.raises(ValueError, match=message):
        eagle.ode.solve(f, np.ones(2), (0.0, 1.0), 0.5, tables=tables, **options)


@hawk.func
def decay(u, t, k):
    return -k * u


def test_a_solve_without_table_gradients_has_none():
    sol = eagle.ode.solve(forced, np.ones(2), (0.0, 1.0), 0.5, tables=(XS, FS), adjoint=True)
    assert sol.vjp(np.ones(2)).tables is None


def test_the_backward_kernel_refuses_table_sizes_it_cannot_take():
    assert MAX_TABLE_GRADIENT_ELEMENTS == hawk.ir.MAX_WIDTH
    with pytest.raises(ValueError, match="table_sizes must be one int >= 0 per table"):
        backward_kernel(forced, Scalar, Scalar, tables=(1, 1), table_sizes=(6,))
    most = MAX_TABLE_GRADIENT_ELEMENTS
    with pytest.raises(ValueError, match=f"hold {most + 1} elements together, more than {most}"):
        backward_kernel(forced, Scalar, Scalar, tables=(1, 1), table_sizes=(5, most - 4))


# -- hawk.table_values in a kernel ----------------------------------------------------------------

KERNEL = """\
import hawk
from hawk import Mutable, Scalar, Table, Terminated, Vector


@hawk.func
def twice(x, tab):
    return hawk.interp(x[0], tab[0], tab[1]) * 2.0


@hawk.func
def corner(x, tab):
    return hawk.interp_grid(tab[1], hawk.vec2(x[0], x[0] * 0.5), hawk.vec2(0.0, 0.0),
                            hawk.vec2(4.0, 2.0))


@hawk.kernel
def k(x: Scalar, xs: Table, fs: Table, grid: Table[2], terminated: Terminated,
      g: Mutable[Vector[5]], x_bar: Mutable[Scalar], h: Mutable[Vector[6]],
      g3: Mutable[Vector[5]]):
    x_bar, g = hawk.grad(twice, (x, hawk.table_values(fs, 5)), (xs, fs))
    g3 = hawk.vjp(twice, (x, hawk.table_values(fs, 5)), 3.0, (xs, fs))[1][1]
    h = hawk.grad(corner, (x, hawk.table_values(grid, 6)), (xs, grid))[1]
    terminated = True
"""


def test_interps_cotangents_in_the_values_are_the_interpolation_weights(tmp_path):
    kernel = load_kernel(KERNEL, tmp_path, "k")
    xs, fs = np.arange(5.0), np.array([1.0, 3.0, 2.0, 5.0, 4.0])
    grid = np.arange(6.0).reshape(3, 2)
    x = np.array([0.5, 2.25, 3.0, -1.0, 7.0])
    out = dict(g=np.zeros((5, 5)), x_bar=np.zeros(5), h=np.zeros((6, 5)), g3=np.zeros((5, 5)))
    eagle.simulate(kernel, max_steps=1, x=x, xs=xs, fs=fs, grid=grid, **out)
    expected = 2.0 * np.array([[0.5, 0.5, 0, 0, 0], [0, 0, 0.75, 0.25, 0], [0, 0, 0, 1, 0],
                               [1, 0, 0, 0, 0], [0, 0, 0, 0, 1]])
    np.testing.assert_array_equal(out["g"].T, expected)
    np.testing.assert_array_equal(out["g3"], 3.0 * out["g"])  # hawk.vjp, a cotangent of 3
    np.testing.assert_array_equal(out["x_bar"], 2.0 * np.array([2.0, 3.0, -1.0, 0.0, 0.0]))
    for j, point in enumerate(x):  # bilinear weights of the 2**2 corners, row-major
        a = np.clip(point / 4.0 * 2.0, 0.0, 2.0)
        b = np.clip(point * 0.5 / 2.0, 0.0, 1.0)
        i = min(int(a), 1)
        weights = np.zeros((3, 2))
        weights[i, 0] += (1 - (a - i)) * (1 - b)
        weights[i, 1] += (1 - (a - i)) * b
        weights[i + 1, 0] += (a - i) * (1 - b)
        weights[i + 1, 1] += (a - i) * b
        np.testing.assert_allclose(out["h"][:, j], weights.ravel(), rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("body, message", [
    ("out = hawk.grad(f, hawk.table_values(fs, 3), fs)", r"is an item of a tuple x"),
    (f"out = hawk.grad(f, (x, hawk.table_values(fs, {hawk.ir.MAX_WIDTH + 1})), fs)[0]",
     rf"size must be an int literal from 1 to {hawk.ir.MAX_WIDTH}"),
    ("out = hawk.grad(f, (x, hawk.table_values(fs, x)), fs)[0]", r"size must be an int"),
    ("out = hawk.grad(f, (x, hawk.table_values(x, 3)), fs)[0]",
     r"first argument must be a Table parameter"),
    ("out = hawk.grad(f, (x, hawk.table_values(ns, 3)), fs)[0]",
     r"'ns' holds int64; derivatives are taken in float tables only"),
])
def test_table_values_it_cannot_take_are_compile_errors(tmp_path, body, message):
    source = f"""\
import hawk
from hawk import Out, Scalar, Table


@hawk.func
def f(x, fs):
    return x[0] * fs[1]


@hawk.kernel(dtypes={{"ns": "int64"}})
def k(x: Scalar, fs: Table, ns: Table, out: Out[Scalar]):
    {body}
"""
    with pytest.raises(hawk.CompileError, match=message):
        load_kernel(source, tmp_path, "k")


def test_outside_a_kernel_table_values_says_where_it_works():
    with pytest.raises(TypeError, match="an item of hawk.grad's or hawk.vjp's x"):
        hawk.table_values(None, 3)
