"""Shared read-only tables (``hawk.Table``, ``Table[2]``, ``Table[3]``), ``hawk.interp`` and
``hawk.interp_grid``: the language, the argument layout, the reference's meaning (an index out
of range is clamped to the nearest edge), every backend against the reference bit for bit
(the CPU, the emulated GPU, NVRTC to sm_90), NumPy's and SciPy's interpolation, the bindings'
errors, and runs with checkpoints."""

from __future__ import annotations

import copy
import textwrap
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eagle
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import assert_bitwise_equal, reference_run
from eagle.bindings import bind
from hawk.ir import TABLE_FIELDS, DType, Op, OpKind, Role, slots
from table_kernels import READERS, falling, grid1, grid2, grid3, interp1, lookup, lookup_bindings

N = 300


# -- the language ----------------------------------------------------------------------------


def test_table_annotations():
    assert hawk.Table[1] is hawk.Table and repr(hawk.Table) == "Table"
    assert repr(hawk.Table[2]) == "Table[2]" and repr(hawk.Table[3]) == "Table[3]"
    assert hawk.Table[3].role is Role.TABLE and hawk.Table[3].ndim == 3
    for bad in (0, 4, True, 1.0, "2"):
        with pytest.raises(TypeError, match=r"Table\[d\] takes an int d from 1 to 3"):
            hawk.Table[bad]
    for wrapper in (hawk.Mutable, hawk.Out, hawk.Series):
        with pytest.raises(TypeError, match=r"a table is read-only and shared"):
            wrapper[hawk.Table[2]]


def test_a_table_is_a_pointer_and_its_sizes_in_the_layout():
    params = READERS[2].params
    layout = slots(params)
    table = [s for s in layout if s.param.name == "tab"]
    assert [(s.name, s.field, s.is_table, s.is_uniform, s.dtype) for s in table] == [
        ("p_tab", None, True, False, DType.FLOAT64),
        ("size0_tab", "size0", False, True, DType.INT64),
        ("size1_tab", "size1", False, True, DType.INT64)]
    assert str(READERS[3].param("tab")) == "tab: Table[3] float64"
    assert not any(s.is_table for s in slots(falling.params) if s.param.name in ("k", "v"))


def test_a_read_clamps_each_index_and_reads_the_flat_index():
    program = READERS[2].program
    reads = [op for op in program.ops if op.kind is OpKind.TABLE_READ]
    assert len(reads) == 1 and reads[0].attr == "tab" and reads[0].dtype is DType.FLOAT64
    kinds = [op.kind for op in program.ops]
    assert kinds.count(OpKind.MAX) == 2 and kinds.count(OpKind.MIN) == 2  # clamp per index
    loads = {op.attr for op in program.ops if op.kind is OpKind.LOAD}
    assert {("tab", "size0"), ("tab", "size1")} <= loads
    flat = program.ops[reads[0].args[0]]
    assert flat.kind is OpKind.ADD and flat.dtype is DType.INT64


def test_the_checker_refuses_a_bad_table_read():
    program = READERS[1].program
    read = next(i for i, op in enumerate(program.ops) if op.kind is OpKind.TABLE_READ)
    floating = next(i for i, op in enumerate(program.ops) if op.dtype is DType.FLOAT64)
    assert floating < read
    bad = [(program.ops[read].args, "i"),  # a Scalar, not a table
           ((floating,), "tab")]  # a float64 index
    for args, attr in bad:
        ops = list(program.ops)
        ops[read] = Op(OpKind.TABLE_READ, DType.FLOAT64, args, attr)
        with pytest.raises(hawk.IRError, match="table read"):
            hawk.passes.check(replace(program, ops=tuple(ops)))


def _kernel(tmp_path, body: str, params: str = "i: Scalar, tab: Table[2], y: Out[Scalar]",
            dtypes: str = "{'i': 'int64'}"):
    source = (f"import hawk\nfrom hawk import *\n\n\n@hawk.kernel(dtypes={dtypes})\n"
              f"def k({params}):\n{textwrap.indent(body, '    ')}\n")
    path = tmp_path / f"k{abs(hash(source))}.py"
    path.write_text(source)
    from hawk.source import import_file

    return import_file(path, path.stem, keep=False).k


@pytest.mark.parametrize("body, message", [
    ("y = tab[i]", r"'tab' is a Table\[2\] and takes 2 indices, got 1"),
    ("y = tab[i, i, i]", r"'tab' is a Table\[2\] and takes 2 indices, got 3"),
    ("y = tab[i, 0.5]", r"index 1 of 'tab' \(Table\[2\]\) must be an integer, not float"),
    ("y = tab[i * 1.0, 0]", r"index 0 of 'tab' \(Table\[2\]\) must be an integer, not float64"),
    ("y = tab[i > 0, 0]", r"index 0 of 'tab' .* must be an integer, not bool"),
    ("y = tab[0:2, 1]", r"slicing 'tab' \(Table\[2\]\) is not supported"),
    ("y = tab + 1.0", r"'tab' is a Table\[2\], a read-only table .* `tab\[i, j\]`"),
    ("y = tab", r"cannot store the Table\[2\] 'tab' into 'y'"),
    ("tab[0, 0] = 1.0\ny = 0.0", r"cannot assign to an element of 'tab': it is the Table\[2\]"),
    ("tab = 1.0\ny = 0.0", r"cannot assign to read-only parameter 'tab' \(Table\)"),
    ("y = hawk.interp(1.0, tab, tab)", r"xp \(the breakpoints\) must be a 1-D Table; 'tab' is"),
    ("y = hawk.interp(tab, tab, tab)", r"hawk.interp\(\) takes a number here, not the Table"),
    ("y = hawk.interp_grid(tab, 0.5, 0.0, 1.0)", r"takes point as a vector of 2 coordinates"),
    ("y = hawk.interp_grid(i, 0.5, 0.0, 1.0)", r"first argument \(the table\) must be a Table"),
    ("y = hawk.interp(1.0, tab)", r"hawk.interp\(\) takes 3 arguments, got 2"),
])
def test_misuse_of_a_table_is_a_compile_error_naming_it(tmp_path, body, message):
    with pytest.raises(hawk.CompileError, match=message):
        _kernel(tmp_path, body)


def test_a_func_takes_a_table_and_a_table_cannot_differ_per_path(tmp_path):
    assert any(op.kind is OpKind.TABLE_READ for op in falling.program.ops)
    with pytest.raises(hawk.CompileError, match="a table cannot be chosen per sample"):
        _kernel(tmp_path, "t = tab if i > 0 else other\ny = t[0, 0]",
                params="i: Scalar, tab: Table[2], other: Table[2], y: Out[Scalar]")


# -- the reference: the rule for an index out of range ---------------------------------------


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_the_reference_clamps_every_index_to_its_axis(ndim):
    rng = np.random.default_rng(ndim)
    shape = (4, 3, 5)[:ndim]
    tab = rng.normal(size=shape)
    b = _reader_bindings(ndim, tab, rng)
    arrays = {**copy.deepcopy(b), "terminated": np.zeros(N, bool)}
    steps = hawk.reference.run(READERS[ndim].specialize({n: "int64" for n in "ijk"[:ndim]}),
                               arrays, 10)
    assert steps == 4
    assert np.array_equal(arrays["acc"], _expected_sum(ndim, b, tab, 4))


def _reader_bindings(ndim, tab, rng, index_dtype=np.int64, n=N):
    b = {name: rng.integers(-12, 12, n).astype(index_dtype) for name in "ijk"[:ndim]}
    return {**b, "tab": tab, "acc": np.zeros(n)}


def _expected_sum(ndim, b, tab, steps):
    """What the reader kernels add up, written with NumPy's clip: the rule, independently."""
    total = np.zeros(len(b["acc"]))
    for s in range(steps):
        i = b["i"].astype(np.int64)
        if ndim == 1:
            index = (i + 3 * s - 4,)
        elif ndim == 2:
            index = (i - 2 * s, b["j"].astype(np.int64) + s * 5)
        else:
            index = (i + s, b["j"].astype(np.int64) - 3 * s, b["k"].astype(np.int64) * (s + 1))
        index = tuple(np.clip(x, 0, size - 1) for x, size in zip(index, tab.shape, strict=True))
        total = total + tab[index]
    return total


# -- every backend against the reference -----------------------------------------------------


def _lookup_bindings(n=N):
    return lookup_bindings(n)


def test_tables_on_every_device_equal_the_reference(target):  # noqa: F811
    bindings = _lookup_bindings()
    expected, steps = reference_run(lookup, bindings, 100)
    arrays = target.put(bindings)
    report = eagle.until_done(eagle.deploy(lookup, target.target.device), max_steps=100,
                              **arrays).run()
    actual = target.get(arrays)
    assert report.steps == steps == 4
    assert_bitwise_equal({k: actual[k] for k in "tyzw"}, {k: expected[k] for k in "tyzw"})
    assert np.isnan(actual["y"][-1]) and np.isfinite(actual["y"][:-1]).all()
    assert np.array_equal(actual["w"], np.full(N, bindings["grid"][0, 0]
                                                + bindings["grid"][0, -1]))


def test_a_host_table_is_copied_to_the_gpu_once_per_binding(target):  # noqa: F811
    """NumPy tables with device arrays: the GPU reads a copy made at binding (the emulated GPU
    runs the generated CUDA), and the user's table is not changed."""
    bindings = _lookup_bindings()
    expected, _ = reference_run(lookup, bindings, 100)
    arrays = target.put({k: v for k, v in bindings.items() if k not in ("xp", "grid")})
    xp, grid = bindings["xp"].copy(), bindings["grid"].copy()
    runner = eagle.until_done(eagle.deploy(lookup, target.target.device), max_steps=100,
                              xp=xp, grid=grid, **arrays)
    runner.run()
    actual = target.get(arrays)
    assert_bitwise_equal({k: actual[k] for k in "yz"}, {k: expected[k] for k in "yz"})
    assert np.array_equal(xp, bindings["xp"]) and np.array_equal(grid, bindings["grid"])


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_random_tables_and_indices_equal_the_reference(target, data):  # noqa: F811
    """Random table shapes (1 to 3 dimensions, sizes 1 to 9), element and index dtypes, and
    computed indices far out of range on both sides, on every device."""
    ndim = data.draw(st.integers(1, 3), label="ndim")
    shape = tuple(data.draw(st.lists(st.integers(1, 9), min_size=ndim, max_size=ndim),
                            label="shape"))
    dtype = data.draw(st.sampled_from([np.float64, np.float32, np.int64, np.int32]),
                      label="dtype")
    index_dtype = data.draw(st.sampled_from([np.int64, np.int32]), label="index dtype")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    tab = (rng.normal(size=shape) * 100).astype(dtype)
    bindings = _reader_bindings(ndim, tab, rng, index_dtype, n=97)
    expected, steps = reference_run(READERS[ndim], bindings, 10)
    assert np.array_equal(expected["acc"], _expected_sum(ndim, bindings, tab.astype(
        np.float64), steps))
    arrays = target.put(bindings)
    report = eagle.until_done(eagle.deploy(READERS[ndim], target.target.device), max_steps=10,
                              **arrays).run()
    assert report.steps == steps
    assert_bitwise_equal({"acc": target.get(arrays)["acc"]}, {"acc": expected["acc"]})


def test_an_unsigned_index_beyond_int64_reads_the_last_element(tmp_path):
    k = _kernel(tmp_path, "y = tab[i, i]", dtypes="{'i': 'uint64'}")
    tab = np.arange(6.0).reshape(2, 3)
    i = np.array([0, 1, 2**63 + 5, 2**64 - 1], dtype=np.uint64)
    expected, _ = reference_run(k, dict(i=i, tab=tab, y=np.zeros(4)), 1)
    assert expected["y"].tolist() == [0.0, 4.0, 5.0, 5.0]
    runner = eagle.until_done(eagle.deploy(k, "cpu"), max_steps=1, i=i, tab=tab, y=np.zeros(4))
    runner.run()
    assert runner.arrays["y"].tolist() == [0.0, 4.0, 5.0, 5.0]


def test_tables_compile_to_a_cubin_for_sm_90():
    nvrtc = pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.emit import STEP_KERNEL, emit_cuda

    for kernel in (lookup, READERS[3], falling):
        source = emit_cuda(kernel.program)
        assert "const double* __restrict__ p_" in source
        cubin = nvrtc.compile_source(source, "sm_90")
        assert cubin[:4] == b"\x7fELF" and STEP_KERNEL.encode() in cubin
    program = lookup.specialize({name: "float32" for name in ("xp", "fp", "grid", "cube")})
    assert "const float* __restrict__ p_grid" in emit_cuda(program)
    nvrtc.compile_source(emit_cuda(program), "sm_90")


# -- hawk.interp and hawk.interp_grid against NumPy and SciPy --------------------------------


def _breakpoints(rng, size):
    xp = np.unique(rng.uniform(-5.0, 5.0, size))
    fp = rng.normal(size=xp.size) * 10
    return xp, fp


@pytest.mark.parametrize("size", [1, 2, 3, 17, 1000])
def test_interp_equals_numpy_interp_bit_for_bit(size):
    """Points below, above, exactly on each breakpoint, between, infinite and NaN (which gives
    NaN, or fp[0] for one breakpoint, as NumPy's): the kernel (on the reference and the CPU)
    and hawk.interp on NumPy arrays give numpy.interp's bits."""
    rng = np.random.default_rng(size)
    xp, fp = _breakpoints(rng, size)
    x = np.concatenate([rng.uniform(-7.0, 7.0, 400), xp, [xp[0] - 1, xp[-1] + 1, np.nan,
                                                          -np.inf, np.inf]])
    expected = np.interp(x, xp, fp)
    bindings = dict(x=x, xp=xp, fp=fp, y=np.zeros(x.size))
    reference, _ = reference_run(interp1, bindings, 1)
    runner = eagle.until_done(eagle.deploy(interp1, "cpu"), max_steps=1,
                              **copy.deepcopy(bindings))
    runner.run()
    for got in (reference["y"], runner.arrays["y"], hawk.interp(x, xp, fp)):
        assert_bitwise_equal({"y": got}, {"y": expected})


def test_interp_on_numpy_arrays_matches_in_float32_and_for_a_number():
    xp = np.array([0.0, 1.0, 3.0], np.float32)
    fp = np.array([1.0, -1.0, 2.0], np.float32)
    got = hawk.interp(np.float32(2.0), xp, fp)
    assert got.dtype == np.float32 and got == np.float32(0.5)
    assert hawk.interp(0.5, xp.astype(np.float64), fp) == 0.0
    with pytest.raises(ValueError, match="1-D xp and fp"):
        hawk.interp(0.5, np.zeros((2, 2)), fp)


def _regular_grid_reference(tab, points, lo, hi):
    interpolate = pytest.importorskip("scipy.interpolate")
    axes = [np.linspace(lo[k], hi[k], tab.shape[k]) for k in range(tab.ndim)]
    clamped = np.stack([np.clip(p, lo[k], hi[k]) for k, p in enumerate(points)], axis=-1)
    return interpolate.RegularGridInterpolator(axes, tab, method="linear")(clamped)


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_interp_grid_agrees_with_scipy(ndim):
    """Against ``RegularGridInterpolator`` on the clamped points, to 1e-12 relative (the two
    sum the corners in a different order); the kernel on the CPU equals hawk.interp_grid on
    NumPy arrays bit for bit."""
    rng = np.random.default_rng(10 + ndim)
    shape = (7, 4, 3)[:ndim]
    tab = rng.normal(size=shape)
    lo, hi = [(-1.0, 0.5, 0.0)[:ndim], (1.0, 2.0, 1.0)[:ndim]]
    if ndim == 3:
        lo, hi = (0.0, -2.0, 1.0), (1.0, 2.0, 3.0)
    points = [rng.uniform(lo[k] - 0.5, hi[k] + 0.5, 500) for k in range(ndim)]
    points[0][:3] = [lo[0], hi[0], lo[0] + (hi[0] - lo[0]) / (shape[0] - 1)]  # on grid points
    expected = _regular_grid_reference(tab, points, lo, hi)
    names = "xyz"[:ndim]
    out = "y" if ndim == 1 else "out"
    kernel = {1: grid1, 2: grid2, 3: grid3}[ndim]
    bindings = {**dict(zip(names, points, strict=True)), "tab": tab, out: np.zeros(500)}
    if ndim == 1:
        bindings.update(lo=lo[0], hi=hi[0])
    runner = eagle.until_done(eagle.deploy(kernel, "cpu"), max_steps=1, **bindings)
    runner.run()
    got = runner.arrays[out]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    point = points[0] if ndim == 1 else np.stack(points)
    assert_bitwise_equal({out: hawk.interp_grid(tab, point, lo[0] if ndim == 1 else lo,
                                                hi[0] if ndim == 1 else hi)}, {out: got})


def test_interp_grid_of_one_point_and_of_nan():
    tab = np.array([[2.0, 4.0]])  # one point along the first axis
    assert hawk.interp_grid(tab, [5.0, 0.5], [0.0, 0.0], [1.0, 1.0]) == 3.0
    assert np.isnan(hawk.interp_grid(tab, [np.nan, 0.5], [0.0, 0.0], [1.0, 1.0]))
    assert hawk.interp_grid(np.array([1.0, 3.0]), -10.0, 0.0, 1.0) == 1.0


# -- bindings --------------------------------------------------------------------------------


@pytest.mark.parametrize("table, error, message", [
    (np.zeros(5), eagle.BindingValueError, r"'tab' \(Table\[2\]\) must be an array of 2 "
                                           r"dimensions, each of size >= 1.*got shape \(5,\)"),
    (np.zeros((0, 3)), eagle.BindingValueError, r"'tab' \(Table\[2\]\) is empty"),
    (np.zeros((2, 2), bool), eagle.BindingTypeError, r"'tab' \(Table\[2\]\) has dtype bool"),
    (np.zeros((2, 2), complex), eagle.BindingTypeError, r"'tab' .* has dtype complex128"),
    (np.zeros((2, 2), np.float16), eagle.BindingTypeError, r"'tab' .* has dtype float16"),
    (1.5, eagle.BindingTypeError, r"'tab' \(Table\[2\]\) must be an array of 2 dimensions"),
    ([[1.0, 2.0]], eagle.BindingTypeError, r"'tab' \(Table\[2\]\) must be an array"),
])
def test_a_bad_table_is_refused_naming_it(table, error, message):
    y = np.zeros(3)
    with pytest.raises(error, match=message):
        eagle.until_done(eagle.deploy(READERS[2], "cpu"), max_steps=1, i=np.zeros(3, np.int64),
                         j=np.zeros(3, np.int64), tab=table, acc=y)
    assert not y.any()


def test_a_table_does_not_count_samples(tmp_path):
    k = _kernel(tmp_path, "terminated = tab[i, 0] > 0.0",
                params="i: Scalar, tab: Table[2], terminated: Terminated")
    with pytest.raises(eagle.BindingValueError, match="cannot tell the number of samples"):
        bind(k, dict(i=3, tab=np.zeros((4, 5))), "cpu")
    bound = bind(READERS[2], dict(i=np.zeros(7, np.int64), j=np.zeros(7, np.int64),
                                  tab=np.zeros((7, 2)), acc=np.zeros(7)), "cpu")
    assert bound.n == 7 and bound.arrays["tab"].shape == (7, 2)


def test_a_table_sharing_memory_with_state_is_refused():
    acc = np.zeros(6)
    with pytest.raises(eagle.BindingValueError, match="'acc' and 'tab' share memory"):
        eagle.until_done(eagle.deploy(READERS[1], "cpu"), max_steps=1,
                         i=np.zeros(6, np.int64), tab=acc, acc=acc)


def test_a_non_contiguous_table_is_read_as_its_values():
    rng = np.random.default_rng(3)
    big = rng.normal(size=(9, 8))
    view = big[::2, 1::3].T  # strided and transposed: shape (3, 5)
    bindings = _reader_bindings(2, np.ascontiguousarray(view), rng)
    expected, _ = reference_run(READERS[2], bindings, 10)
    before = big.copy()
    runner = eagle.until_done(eagle.deploy(READERS[2], "cpu"), max_steps=10,
                              **{**copy.deepcopy(bindings), "tab": view})
    runner.run()
    assert_bitwise_equal({"acc": runner.arrays["acc"]}, {"acc": expected["acc"]})
    assert np.array_equal(big, before)
    assert runner.bound.arrays["tab"].flags.c_contiguous


def test_the_table_dtype_is_part_of_the_signature():
    base = dict(i=np.zeros(4, np.int64), acc=np.zeros(4))
    for dtype in (np.float32, np.int32, np.int64, np.uint64):
        bound = bind(READERS[1], {**base, "tab": np.arange(3).astype(dtype)}, "cpu")
        assert bound.dtypes["tab"] is DType.from_numpy(dtype)
        program = READERS[1].specialize(bound.dtypes)
        read = next(op for op in program.ops if op.kind is OpKind.TABLE_READ)
        assert read.dtype is DType.from_numpy(dtype)


# -- runs, checkpoints, simulate -------------------------------------------------------------


def _falling_bindings(n=200):
    mach = np.linspace(0.0, 3.0, 13)
    return dict(dt=0.01, g=9.81, k=np.linspace(1e-4, 1e-3, n), mach_points=mach,
                cd_points=0.3 + 0.2 * np.exp(-(mach - 1.0) ** 2 * 4),
                v=np.linspace(0.0, 400.0, n), t=np.zeros(n))


def test_a_run_with_tables_resumes_from_a_checkpoint(tmp_path):
    """A checkpoint holds the tables with the arrays; ``Runner.restore`` continues with them
    (nothing to bind again, the user's tables may be gone) and ends bit-identical to an
    uninterrupted run."""
    plan = eagle.deploy(falling, "cpu")
    whole = eagle.until_done(plan, max_steps=1000, steps_per_launch=10,
                             **copy.deepcopy(_falling_bindings()))
    assert whole.run().steps == 100
    b = copy.deepcopy(_falling_bindings())
    first = eagle.until_done(plan, max_steps=40, steps_per_launch=10, **b)
    assert first.run().truncated
    path = first.checkpoint(tmp_path / "falling.npz")
    b["cd_points"][:] = np.nan  # the user's table is gone; only the checkpoint remains
    with np.load(path) as data:
        assert np.array_equal(data["array:cd_points"], _falling_bindings()["cd_points"])
    resumed = eagle.Runner.restore(path, plan)
    assert resumed.steps == 40
    resumed.max_steps = 1000
    resumed.run()
    assert_bitwise_equal({k: resumed.arrays[k] for k in ("v", "t")},
                         {k: whole.arrays[k] for k in ("v", "t")})


def test_a_checkpoint_that_lost_its_table_is_refused(tmp_path):
    plan = eagle.deploy(falling, "cpu")
    runner = eagle.until_done(plan, max_steps=5, **copy.deepcopy(_falling_bindings()))
    runner.run()
    path = runner.checkpoint(tmp_path / "c.npz")
    with np.load(path) as data:
        items = dict(data)
    items["array:cd_points"] = np.zeros((2, 0))
    np.savez(tmp_path / "bad.npz", **items)
    with pytest.raises(eagle.CheckpointError, match="table 'cd_points' has shape"):
        eagle.Runner.restore(tmp_path / "bad.npz", plan)


def test_simulate_with_tables_equals_the_reference():
    bindings = _falling_bindings()
    expected, steps = reference_run(falling, bindings, 500)
    arrays = copy.deepcopy(bindings)
    report = eagle.simulate(falling, max_steps=500, device="cpu", **arrays)
    assert report.steps == steps == 100
    assert_bitwise_equal({"v": arrays["v"]}, {"v": expected["v"]})


def test_table_fields_are_the_tables_sizes():
    bound = bind(READERS[3], dict(i=np.zeros(2, np.int64), j=np.zeros(2, np.int64),
                                  k=np.zeros(2, np.int64), tab=np.zeros((2, 3, 4)),
                                  acc=np.zeros(2)), "cpu")
    from eagle.cpu.backend import launch_arguments
    from hawk.ir import series_field

    program = READERS[3].specialize(bound.dtypes)
    fields = [int(series_field(s, bound.arrays["tab"])) for s in program.slots
              if s.field in TABLE_FIELDS]
    assert fields == [2, 3, 4]
    values = launch_arguments(program, bound)
    assert values[1 + [s.name for s in program.slots].index("p_tab")] is bound.arrays["tab"]


def test_an_artifact_sidecar_describes_a_table(tmp_path):
    pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.artifact import read_artifact, write_artifact

    path, meta_path = write_artifact(grid2.program, "ptx", tmp_path / "grid2.ptx")
    artifact = read_artifact(path)
    assert artifact.param("tab") == grid2.param("tab")
    table = [a for a in artifact.meta["arguments"] if a.get("parameter") == "tab"]
    assert table[0]["kind"] == "table" and table[0]["fields"] == ["size0", "size1"]
    assert table[0]["ctype"] == "const double* __restrict__"
    assert [a.get("field") for a in table[1:]] == ["size0", "size1"]
    entry = next(p for p in artifact.meta["parameters"] if p["name"] == "tab")
    assert entry["role"] == "Table" and entry["ndim"] == 2


def test_loaded_vector_refuses_a_host_table():
    from eagle.loaded import _check_tables

    class Artifact:
        params = READERS[2].params

    with pytest.raises(eagle.BindingTypeError, match=r"'tab' \(Table\[2\]\) is a host array"):
        _check_tables(Artifact(), dict(tab=np.zeros((2, 2))))


def test_the_cpu_probe_passes_tables_whole(monkeypatch):
    """The CPU's first-launch probe runs the kernel on copies of a few samples: a table as long
    as the ensemble is neither cut to those samples (its sizes would then point past it) nor
    copied."""
    from eagle.cpu import backend as cpu

    n = 5 * cpu.PROBE_SAMPLES
    bound = bind(READERS[1], dict(i=np.arange(n), tab=np.arange(float(n)), acc=np.zeros(n)),
                 "cpu")
    program = READERS[1].specialize(bound.dtypes)
    kernel = cpu.compile_program(program)
    arguments = cpu.launch_arguments(program, bound)
    at = 1 + [s.name for s in program.slots].index("p_tab")
    seen = []
    launch = kernel.launch

    def recording(nsteps, nthreads, args, first_step=0):
        seen.append(args[at])
        return launch(nsteps, nthreads, args, first_step)

    monkeypatch.setattr(kernel, "launch", recording)
    cpu._probe(kernel, arguments, n, 100, 0)
    assert seen and all(table is arguments[at] for table in seen)
