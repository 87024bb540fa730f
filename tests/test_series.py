"""``Series``: per-sample rows written at a row the step computes (``s[row] = value``).

What a write means (``hawk.reference`` is the definition): at the end of a live sample's step
its writes are done in program order; one whose path was not taken, or whose row is outside
``[0, T)``, is not done; a later write to a row wins; a frozen sample writes nothing. The
hand-computed cases below pin that down; the differential ones hold every backend to the
reference, bit for bit, through divergent step counts, launch sizes, threads, and (on the CPU)
blocks small enough to reach compaction, the pool and the redo of an unrolled visit.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import eagle
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import assert_bitwise_equal, reference_run
from hawk import Mutable, Out, Param, Scalar, Series, Terminated, Vec2, Vec3
from hawk.ir import Role, RowStore, slots
from hawk.passes import IRError, check, eliminate_dead_code

NAN = np.nan


# -- the brief's example, by hand ----------------------------------------------------------------


@hawk.kernel
def record(dt: Param, every: Param, terminated: Terminated, x: Mutable[Scalar],
           k: Mutable[Scalar], xs: Series[Scalar], ps: Series[Vec3]):
    x = x + dt
    row = hawk.step() // 4  # any integer-typed expression
    if hawk.step() % 4 == 0:  # a write inside an `if` happens only on that path
        xs[row] = x  # a scalar row of xs, shape (T, n)
        ps[row] = hawk.vec3(x, 2 * x, 3 * x)  # a vector row, array shape (T, 3, n)
    terminated = x > 1.0


def record_bindings():
    return dict(dt=0.125, every=4.0, x=np.array([0.0, 0.5, 0.95]), k=np.zeros(3),
                xs=np.full((4, 3), NAN), ps=np.full((4, 3, 3), NAN))


# sample 0: x = 0.125 (s + 1), writes at steps 0, 4, 8, stops after step 8 (x = 1.125);
# sample 1: x = 0.5 + 0.125 (s + 1), writes at steps 0 and 4, stops after step 4;
# sample 2: x = 1.075 after step 0: one write, and it stops.
RECORD_XS = np.array([[0.125, 0.625, 0.95 + 0.125],
                      [0.625, 1.125, NAN],
                      [1.125, NAN, NAN],
                      [NAN, NAN, NAN]])
RECORD_PS = np.stack([RECORD_XS, 2 * RECORD_XS, 3 * RECORD_XS], axis=1)


def test_the_example_by_hand_on_the_reference_and_the_cpu():
    expected, steps = reference_run(record, record_bindings(), 100)
    assert steps == 9
    np.testing.assert_array_equal(expected["xs"], RECORD_XS)
    np.testing.assert_array_equal(expected["ps"], RECORD_PS)
    bindings = record_bindings()
    report = eagle.simulate(record, max_steps=100, **bindings)
    assert report.steps == 9 and report.done == 3
    np.testing.assert_array_equal(bindings["xs"], RECORD_XS)
    np.testing.assert_array_equal(bindings["ps"], RECORD_PS)


def test_no_rows_at_all():
    """T = 0: every write is out of range, so nothing is written and the state still steps."""
    bindings = dict(record_bindings(), xs=np.zeros((0, 3)), ps=np.zeros((0, 3, 3)))
    report = eagle.simulate(record, max_steps=100, **bindings)
    assert report.steps == 9
    np.testing.assert_array_equal(bindings["x"], [1.125, 1.125, 1.075])


# -- rows out of range, both branches, loops, last write wins, frozen samples, int dtype ---------


@hawk.kernel(dtypes={"k": "int64", "ints": "int64"})
def edges(limit: Scalar, terminated: Terminated, k: Mutable[Scalar], xs: Series[Scalar],
          ints: Series[Scalar], vs: Series[Vec2]):
    xs[k - 1] = 10.0 * k  # row -1 at k = 0: dropped
    if k % 2 == 0:
        xs[k] = 1.0 * k
    else:
        xs[k + 5] = -1.0 * k  # beyond T = 6 for every k >= 1: dropped
    for j in range(2):  # unrolled: each iteration its own write
        ints[2 * k + j] = 100 * k + j
    vs[1] = hawk.vec2(1.0, 1.0)
    vs[1] = hawk.vec2(k, 2 * k)  # the same row in the same step: this write wins
    vs[0] = hawk.vec2(k, -k)  # a row written every step: the last step's value stays
    k += 1
    terminated = k >= limit


def edges_bindings():
    return dict(limit=np.array([3.0, 1.0, 3.0, 2.0]), k=np.zeros(4, np.int64),
                terminated=np.array([False, False, True, False]),  # sample 2 is frozen
                xs=np.full((6, 4), NAN), ints=np.full((5, 4), -7, np.int64),
                vs=np.full((2, 2, 4), NAN))


def edges_expected():
    xs = np.full((6, 4), NAN)
    xs[:3, 0] = [10.0, 20.0, 2.0]  # k=0: row 0 <- 0; k=1: row 0 <- 10; k=2: rows 1, 2
    xs[0, 1] = 0.0
    xs[:2, 3] = [10.0, NAN]  # k=0: row 0 <- 0; k=1: row 0 <- 10 (row 6 dropped)
    ints = np.full((5, 4), -7, np.int64)
    ints[:, 0] = [0, 1, 100, 101, 200]  # k=2's second row, 5, is past T = 5
    ints[:2, 1] = [0, 1]
    ints[:4, 3] = [0, 1, 100, 101]
    vs = np.full((2, 2, 4), NAN)
    vs[:, :, 0] = [[2.0, -2.0], [2.0, 4.0]]
    vs[:, :, 1] = [[0.0, 0.0], [0.0, 0.0]]
    vs[:, :, 3] = [[1.0, -1.0], [1.0, 2.0]]
    return dict(xs=xs, ints=ints, vs=vs, k=np.array([3, 1, 0, 2]))


@pytest.mark.parametrize("runner", ["reference", "cpu"])
def test_edge_cases_by_hand(runner):
    if runner == "reference":
        actual, steps = reference_run(edges, edges_bindings(), 50)
    else:
        actual = edges_bindings()
        steps = eagle.simulate(edges, max_steps=50, **actual).steps
    assert steps == 3
    for name, want in edges_expected().items():
        assert actual[name].dtype == want.dtype, name
        np.testing.assert_array_equal(actual[name], want, err_msg=name)


def test_a_step_past_max_steps_writes_nothing():
    actual = edges_bindings()
    with pytest.warns(Warning, match="max_steps=2"):
        report = eagle.simulate(edges, max_steps=2, **actual)
    assert report.truncated and report.steps == 2
    np.testing.assert_array_equal(actual["xs"][:, 0], [10.0, NAN, NAN, NAN, NAN, NAN])
    np.testing.assert_array_equal(actual["ints"][:, 0], [0, 1, 100, 101, -7])


@hawk.kernel(accumulate=True)
def summed(dt: Param, terminated: Terminated, t: Mutable[Scalar], total: Out[Scalar],
           xs: Series[Scalar]):
    total = 2.0 * t
    xs[0] = t  # accumulate=True adds into Out buffers; Series rows are still overwritten
    t += dt
    terminated = t >= 1.0


def test_accumulate_does_not_apply_to_series():
    bindings = dict(dt=0.25, t=np.zeros(2), total=np.zeros(2), xs=np.full((1, 2), 5.0))
    eagle.simulate(summed, max_steps=10, **bindings)
    np.testing.assert_array_equal(bindings["total"], [3.0, 3.0])  # 2 (0 + .25 + .5 + .75)
    np.testing.assert_array_equal(bindings["xs"], [[0.75, 0.75]])  # the last step's t


# -- the IR --------------------------------------------------------------------------------------


def test_the_ir_lists_the_writes_in_order_and_prints_them():
    program = edges.specialize({})
    xs = [r for r in program.row_stores if r.param == "xs"]
    assert len(xs) == 3 and xs[0].guard is None
    assert xs[1].guard is not None and xs[2].guard is not None and xs[1].guard != xs[2].guard
    assert [r.component for r in program.row_stores if r.param == "vs"] == [0, 1, 0, 1, 0, 1]
    text = str(program)
    assert "row xs[%" in text and "row vs[1][%" in text
    assert "vs: Series[Vec2] float64" in text and "ints: Series[Scalar] int64" in text


def test_row_stores_are_part_of_the_digest_and_roots_of_dead_code():
    program = edges.specialize({})
    fewer = type(program)(program.name, program.params, program.ops, program.stores,
                          program.terminated, program.options, program.row_stores[:-1])
    assert fewer.digest() != program.digest()
    assert eliminate_dead_code(program) == program  # nothing a write reads is dead
    bare = type(program)(program.name, program.params, program.ops, program.stores,
                         program.terminated, program.options, ())
    assert len(eliminate_dead_code(bare).ops) < len(program.ops)


def test_the_checker_refuses_a_bad_row_store():
    program = edges.specialize({})
    value = program.row_stores[0].value
    for bad, words in [(RowStore("k", None, 0, value), "not a Series"),
                       (RowStore("xs", None, value, value), "row must be an int64"),
                       (RowStore("vs", 2, 0, value), "component"),
                       (RowStore("xs", None, 0, 10_000), "does not refer to an op")]:
        broken = type(program)(program.name, program.params, program.ops, program.stores,
                               program.terminated, program.options, (bad,))
        with pytest.raises(IRError, match=words):
            check(broken)


def test_a_series_has_its_component_arrays_then_its_row_count_and_stride():
    program = edges.specialize({})
    names = [s.name for s in slots(program.params) if s.param.role is Role.SERIES]
    assert names == ["p_xs", "rows_xs", "row_stride_xs", "p_ints", "rows_ints",
                     "row_stride_ints", "p_vs_0", "p_vs_1", "rows_vs", "row_stride_vs"]
    assert program.param("vs").shape(10, 4) == (4, 2, 10)
    assert program.param("xs").shape(10, 0) == (0, 10)


# -- compile errors ------------------------------------------------------------------------------


@hawk.func
def doubled(x):
    return 2.0 * x


def compile_error(source: str, tmp_path, dtypes: str = "") -> str:
    """The message of the CompileError a kernel with ``source`` as its body raises."""
    from hawk.source import import_file

    header = ("import hawk\nfrom hawk import Mutable, Param, Scalar, Series, Vec3\n"
              "from test_series import doubled\n\n\n"
              f"@hawk.kernel({dtypes})\n"
              "def bad(x: Mutable[Scalar], k: Mutable[Scalar], xs: Series[Scalar], "
              "ps: Series[Vec3]):\n")
    path = tmp_path / f"bad_{abs(hash(source))}.py"
    path.write_text(header + "".join(f"    {line}\n" for line in source.split("\n")))
    with pytest.raises(hawk.CompileError) as error:
        import_file(path, path.stem)
    return error.value.message


INTS = 'dtypes={"k": "int64"}'
ERRORS = [
    ("xs[x] = 1.0", "", "the row written of 'xs' (Series[Scalar]) must be an integer"),
    ("xs[x > 0] = 1.0", INTS, "must be an integer .*not bool"),
    ("xs[0.5] = 1.0", INTS, "must be an integer .*not float"),
    ("x = xs[0]", INTS, "'xs' is a Series[Scalar], which the step writes and never reads"),
    ("y = xs\nx = 1.0", INTS, "never reads: write a row with `xs[row] = value`"),
    ("xs[k] += 1.0", INTS, "never reads"),
    ("x = doubled(xs)", INTS, "cannot be passed to the hawk func 'doubled'.*return the value "
     "from 'doubled' and write it in the kernel"),
    ("xs = 1.0", INTS, "cannot assign to 'xs': it is a Series[Scalar], written a row at a time"),
    ("ps[k] = 1.0", INTS, "'ps' is Series[Vec3] and must be assigned a Vec3"),
    ("xs[k] = hawk.vec3(1.0, 2.0, 3.0)", INTS, "'xs' is Series[Scalar] and must be assigned "
     "a scalar"),
    ("xs[k] = x > 0", INTS, "cannot store bool into 'xs'"),
    ("xs[k:2] = 1.0", INTS, "at one integer index, `xs[row] = value`"),
    ("xs[k, 0] = 1.0", INTS, "at one integer index"),
    ("ps.x = 1.0", INTS, "write a whole row, `ps[row] = value`"),
]


@pytest.mark.parametrize(("body", "dtypes", "words"), ERRORS)
def test_compile_errors_say_what_to_write(tmp_path, body, dtypes, words):
    import re

    message = compile_error(body, tmp_path, dtypes)
    assert re.search(".*".join(map(re.escape, words.split(".*"))), message), message


def test_an_int_series_refuses_a_float_value(tmp_path):
    message = compile_error("xs[k] = 0.5", tmp_path, 'dtypes={"k": "int64", "xs": "int64"}')
    assert "cannot store float into 'xs' (int64)" in message


def test_a_func_cannot_write_a_series(tmp_path):
    from hawk.source import import_file

    path = tmp_path / "func_writes.py"
    path.write_text(
        "import hawk\nfrom hawk import Mutable, Scalar, Series\n\n\n"
        "@hawk.func\ndef keep(value):\n    xs[0] = value\n    return value\n\n\n"
        "@hawk.kernel\n"
        "def bad(x: Mutable[Scalar], xs: Series[Scalar]):\n    x = keep(x)\n")
    with pytest.raises(hawk.CompileError) as error:
        import_file(path, path.stem)
    message = error.value.message
    assert "the hawk func 'keep' cannot write `xs[0]`" in message
    assert "return the value and write it in the kernel (`xs[row] = keep(...)`)" in message


# -- bindings ------------------------------------------------------------------------------------


def test_a_slice_along_the_sample_axis_is_written_in_place():
    """A Dask chunk's view: the sample axis contiguous, the rows strided."""
    whole = record_bindings()
    xs, ps = np.full((4, 7), NAN), np.full((4, 3, 7), NAN)
    bindings = dict(whole, xs=xs[:, 2:5], ps=ps[:, :, 2:5])
    eagle.simulate(record, max_steps=100, **bindings)
    np.testing.assert_array_equal(xs[:, 2:5], RECORD_XS)
    np.testing.assert_array_equal(ps[:, :, 2:5], RECORD_PS)
    assert np.isnan(xs[:, [0, 1, 5, 6]]).all() and np.isnan(ps[:, :, [0, 1, 5, 6]]).all()


# -- every backend against the reference ---------------------------------------------------------


@hawk.kernel(dtypes={"k": "int64"})
def trajectory(dt: Param, t_end: Scalar, terminated: Terminated, x: Mutable[Scalar],
               v: Mutable[Scalar], k: Mutable[Scalar], xs: Series[Scalar], ps: Series[Vec2]):
    x0, v0 = x, v
    x = x0 + dt * v0
    v = v0 - dt * x0
    if k % 3 == 0:
        xs[k // 3] = x
    else:
        ps[k // 3 - 1] = hawk.vec2(x, v)
    xs[k // 3 + 7] = v  # rows other steps write too: the last write in step order wins
    k += 1
    terminated = dt * k >= t_end


def trajectory_bindings(n: int, seed: int = 0, frozen: bool = True):
    rng = np.random.default_rng(seed)
    stops = rng.integers(1, 60, n)
    stops[rng.random(n) < 0.05] = 150  # a few long samples, scattered
    dt = 1.0 / 64
    flags = (rng.random(n) < 0.03) if frozen else np.zeros(n, bool)
    return dict(dt=dt, t_end=dt * stops - dt / 4, terminated=flags,
                x=rng.normal(size=n), v=rng.normal(size=n), k=np.zeros(n, np.int64),
                xs=np.full((40, n), NAN), ps=np.full((30, 2, n), NAN))


@hawk.kernel
def walk(terminated: Terminated, x: Mutable[Scalar], xs: Series[Scalar], hs: Series[Vec3]):
    x += hawk.normal()
    if hawk.step() % 2 == 1:
        xs[hawk.step() // 2] = x
    hs[hawk.randint(0, 6)] = hawk.vec3(x, hawk.step(), hawk.sample_index())
    terminated = abs(x) > 3.0


def walk_bindings(n: int):
    return dict(x=np.zeros(n), xs=np.full((12, n), NAN), hs=np.full((5, 3, n), NAN))


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("steps_per_launch", [1, 5, None])
def test_every_backend_writes_what_the_reference_writes(target, steps_per_launch,  # noqa: F811
                                                        threads):
    if threads > 1 and target.target.name != "cpu":
        pytest.skip("threads are the CPU's")
    previous = eagle.get_num_threads()
    eagle.set_num_threads(min(threads, eagle.threads._cpus()))
    try:
        for kernel, bindings, seed in [(trajectory, trajectory_bindings(1500), None),
                                       (walk, walk_bindings(700), 11)]:
            expected, expected_steps = reference_run(kernel, bindings, 200, seed=seed)
            arrays = target.put(bindings)
            report = eagle.until_done(eagle.deploy(kernel, target.target.device),
                                      max_steps=200, steps_per_launch=steps_per_launch,
                                      seed=seed, **arrays).run()
            actual = target.get(arrays)
            assert report.steps == expected_steps
            assert_bitwise_equal({k: actual[k] for k in expected if k in actual},
                                 {k: expected[k] for k in expected if k in actual})
            assert np.isfinite(actual["xs"]).any()  # rows were written at all
    finally:
        eagle.set_num_threads(previous)


@pytest.mark.slow
def test_cpu_lanes_compaction_pool_and_redo():
    """Tiny blocks and unrolled visits, launch by launch: a lane that finishes inside an
    unrolled visit writes nothing after its last step, and the visit's redo writes the same."""
    from test_cpu_lanes import SHAPES, run_launches

    bindings = trajectory_bindings(40 * SHAPES[0].block, seed=3)
    for shape in SHAPES:
        for threads in (1, 3):
            actual, steps = run_launches(trajectory, bindings, shape, [7, 1, 3, 64, 200],
                                         threads)
            expected, expected_steps = reference_run(trajectory, bindings, steps)
            assert steps == expected_steps == 150
            assert_bitwise_equal(actual, expected)


def test_a_cpu_launch_takes_row_strides_from_the_arrays_it_is_given():
    """The launch's first size is measured on copies of a few samples (``cpu.backend._probe``),
    whose rows are closer together than the user's; every call takes a Series' row stride
    from the array it is given, never from the one the arguments were made for."""
    from eagle.bindings import bind
    from eagle.cpu.backend import compile_program, launch_arguments

    bindings = trajectory_bindings(300, seed=9, frozen=False)
    expected, steps = reference_run(trajectory, bindings, 200)
    bound = bind(trajectory, copy.deepcopy(bindings), "cpu")
    program = trajectory.specialize(bound.dtypes)
    arguments = list(launch_arguments(program, bound))
    wide = np.full((40, 2 * 300), NAN)  # xs again, its rows 600 elements apart
    (at,) = [i for i, a in enumerate(arguments) if a is bound.arrays["xs"]]
    arguments[at] = wide[:, :300]
    live, taken = compile_program(program).launch(200, 2, tuple(arguments))
    assert (live, taken) == (0, steps)
    assert_bitwise_equal({"xs": wide[:, :300]}, {"xs": expected["xs"]})
    assert np.isnan(wide[:, 300:]).all()


def test_a_probed_cpu_run_with_strided_series_matches_the_reference(monkeypatch):
    """Enough sample-steps that the runner sizes its first launch by a probe, Series whose
    rows and components are strided: the reference's rows, bit for bit."""
    from eagle.cpu import backend

    monkeypatch.setattr(backend, "_rates", {})  # probed, whatever ran before in this process
    n = 4100
    bindings = trajectory_bindings(n, seed=4)
    bindings["xs"] = np.full((40, n + 37), NAN)[:, :n]
    bindings["ps"] = np.full((30, 3, n + 5), NAN)[:, 1:, 5:]
    expected, steps = reference_run(trajectory, bindings, 40_000)
    actual = {k: (v.copy() if isinstance(v, np.ndarray) and k not in ("xs", "ps") else v)
              for k, v in bindings.items()}
    report = eagle.until_done(eagle.deploy(trajectory, "cpu"), max_steps=40_000,
                              **actual).run()
    assert report.steps == steps
    assert_bitwise_equal({k: actual[k] for k in ("x", "v", "k", "xs", "ps")},
                         {k: expected[k] for k in ("x", "v", "k", "xs", "ps")})


def test_the_cuda_source_compiles_with_nvrtc():
    pytest.importorskip("elftools.elf.elffile")
    from test_cuda_codegen import ARCHS, assert_compiles

    for kernel in (record, edges, trajectory, walk):
        for arch in ARCHS:
            assert_compiles(kernel.specialize({}), arch)


def test_host_compiled_cuda_writes_the_reference_rows(tmp_path):
    from host_cuda import HostKernel, compiler

    if compiler() is None:
        pytest.skip("no host C++ compiler")
    bindings = trajectory_bindings(300, seed=5)
    expected, _ = reference_run(trajectory, bindings, 200)
    arrays = copy.deepcopy(bindings)
    program = trajectory.specialize({"k": "int64"})
    kernel = HostKernel(program, tmp_path)
    kernel.run({k: v for k, v in arrays.items() if isinstance(v, np.ndarray)},
               {"dt": np.float64(arrays["dt"])}, arrays["terminated"], 200, 9)
    assert_bitwise_equal({k: arrays[k] for k in ("x", "v", "k", "xs", "ps")},
                         {k: expected[k] for k in ("x", "v", "k", "xs", "ps")})


# -- checkpoints and clusters --------------------------------------------------------------------


def test_a_checkpoint_saves_and_restores_the_rows(tmp_path):
    bindings = trajectory_bindings(500, seed=7)
    expected, _ = reference_run(trajectory, bindings, 200)
    arrays = copy.deepcopy(bindings)
    runner = eagle.until_done(eagle.deploy(trajectory), max_steps=25, **arrays)
    with pytest.warns(Warning, match="max_steps=25"):
        runner.run()
    path = runner.checkpoint(tmp_path / "rows.npz")
    restored = eagle.Runner.restore(path, eagle.deploy(trajectory))
    np.testing.assert_array_equal(restored.bound.arrays["xs"], arrays["xs"])
    restored.max_steps = 200
    restored.run()
    final = restored.bound.arrays
    assert_bitwise_equal({k: final[k] for k in ("x", "xs", "ps")},
                         {k: expected[k] for k in ("x", "xs", "ps")})


def test_run_on_cluster_splits_the_rows_along_the_sample_axis():
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    ed = pytest.importorskip("eagle.distributed")
    bindings = trajectory_bindings(900, seed=9, frozen=False)
    expected, _ = reference_run(trajectory, bindings, 200)
    del bindings["terminated"]
    bindings["ps"] = da.from_array(bindings["ps"], chunks=(30, 2, 300))  # made on the workers
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        result = ed.run_on_cluster(trajectory, client, chunks=3, max_steps=200, **bindings)
        final = result.gather()
    assert final["xs"].shape == (40, 900) and final["ps"].shape == (30, 2, 900)
    assert_bitwise_equal({k: final[k] for k in ("x", "xs", "ps")},
                         {k: expected[k] for k in ("x", "xs", "ps")})


def test_an_artifact_describes_a_series_and_a_kernel_travels_with_its_writes(tmp_path):
    import pickle

    from hawk.kernel import ProgramKernel

    program = trajectory.specialize({"k": "int64"})
    travelled = pickle.loads(pickle.dumps(ProgramKernel(program)))
    assert travelled.program.row_stores == program.row_stores
    pytest.importorskip("cuda.bindings.nvrtc")
    from eagle.cuda.artifact import read_artifact, write_artifact

    path, _ = write_artifact(program, "ptx", tmp_path / "trajectory.ptx", "sm_80")
    loaded = read_artifact(path)
    assert loaded.params == program.params
    meta = loaded.meta
    layouts = {p["name"]: p["layout"] for p in meta["parameters"]}
    assert layouts["xs"] == "(T, n) rows, the sample axis contiguous"
    assert layouts["ps"] == "(T, 2, n) rows, the sample axis contiguous"
    fields = [(a["name"], a.get("field"), a["ctype"]) for a in meta["arguments"]
              if a.get("parameter") == "ps"]
    assert fields == [("p_ps_0", None, "double* __restrict__"),
                      ("p_ps_1", None, "double* __restrict__"),
                      ("rows_ps", "rows", "long long"),
                      ("row_stride_ps", "row_stride", "long long")]
