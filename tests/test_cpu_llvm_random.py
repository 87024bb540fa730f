"""The draws as LLVM IR text (``eagle.cpu.llvm_random``) give ``hawk.philox``'s bits exactly.

The text is compiled as a backend compiles it: llvmlite parses it with wrappers that loop over
arrays (a draw inlined into a loop over lanes, which LLVM's loop vectoriser runs several lanes
at a time), optimises it with the new pass manager at speed level 2 for this CPU, and MCJIT
links it; the wrappers are called through ctypes on NumPy arrays and every result is compared
bit for bit with ``hawk.philox``'s: edge counters (seeds, samples and steps at the word
boundaries and int64's limits), thousands of random ones, and ``randint``'s edge ranges.
"""

from __future__ import annotations

import ctypes
import platform

import llvmlite.binding as ll
import numpy as np
import pytest

from eagle.cpu import llvm_random
from hawk import philox

# -- wrappers: void @wrap_<draw>(i64 n, i64 seed, ptr samples, ptr steps, i64 position,
#    [ptr lo, ptr hi,] ptr out) stores draw i of lane i; void @wrap_<log53|cos53>(n, ks, out)

def _loop(name: str, parameters: list[str], loads: list[tuple[str, str]], call: str,
          kind: str) -> str:
    """``define void @name(i64 %n, parameters..., ptr %out)``: for i in [0, n), loads each
    ``(value, array)`` of ``loads`` at ``i``, then ``out[i] = call`` (its result of ``kind``)."""
    body = [f"  %{value}.at = getelementptr inbounds i64, ptr %{array}, i64 %i\n"
            f"  %{value} = load i64, ptr %{value}.at" for value, array in loads]
    return "\n".join([
        f"define void @{name}(i64 %n, {', '.join(parameters)}, ptr noalias %out) {{",
        "entry:",
        "  %empty = icmp sle i64 %n, 0",
        "  br i1 %empty, label %done, label %loop",
        "loop:",
        "  %i = phi i64 [0, %entry], [%next, %loop]",
        *body,
        f"  %r = {call}",
        f"  %out.at = getelementptr inbounds {kind}, ptr %out, i64 %i",
        f"  store {kind} %r, ptr %out.at",
        "  %next = add i64 %i, 1",
        "  %more = icmp slt i64 %next, %n",
        "  br i1 %more, label %loop, label %done",
        "done:",
        "  ret void",
        "}",
        "",
    ])


def _draw_wrapper(short: str) -> str:
    symbol, kind, parameters = llvm_random.DRAWS[short]
    bounds = len(parameters) == 6
    arguments = ["i64 %seed", "i64 %sample", "i64 %step", "i64 %position"]
    loads = [("sample", "samples"), ("step", "steps")]
    if bounds:
        arguments += ["i64 %lo", "i64 %hi"]
        loads += [("lo", "los"), ("hi", "his")]
    wrapper_parameters = ["i64 %seed", "ptr noalias %samples", "ptr noalias %steps",
                          "i64 %position"]
    if bounds:
        wrapper_parameters += ["ptr noalias %los", "ptr noalias %his"]
    call = f"call {kind} @{symbol}({', '.join(arguments)})"
    return _loop(f"wrap_{short}", wrapper_parameters, loads, call, kind)


def _helper_wrapper(helper: str) -> str:
    return _loop(f"wrap_{helper}", ["ptr noalias %ks"], [("k", "ks")],
                 f"call double @eagle_{helper}(i64 %k)", "double")


def _module_text(names=tuple(llvm_random.DRAWS)) -> str:
    return "\n".join([llvm_random.random_ir(set(names), declare=True),
                      *(_draw_wrapper(short) for short in names),
                      *(_helper_wrapper(h) for h in ("log53", "cos53") if "normal64" in names)])


def _machine(cpu: str | None = None, triple: str | None = None):
    ll.initialize_native_target()
    ll.initialize_native_asmprinter()
    target = ll.Target.from_triple(triple) if triple else ll.Target.from_default_triple()
    if cpu is None:
        cpu, features = ll.get_host_cpu_name(), ll.get_host_cpu_features().flatten()
    else:
        features = ""
    return target.create_target_machine(cpu=cpu, features=features, opt=2,
                                        codemodel="jitdefault")


def _optimised(text: str, machine):
    """``text`` parsed, verified and optimised (new pass manager, speed level 2, vectorisers
    on) for ``machine``."""
    module = ll.parse_assembly(text)
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    module.verify()
    options = ll.create_pipeline_tuning_options(speed_level=2)
    options.loop_vectorization = True
    options.slp_vectorization = True
    builder = ll.create_pass_builder(machine, options)
    builder.getModulePassManager().run(module, builder)
    module.verify()
    return module


class _Compiled:
    """The wrappers of ``text`` compiled for this CPU and linked by MCJIT, called on arrays."""

    def __init__(self, text: str):
        machine = _machine()
        self.module = _optimised(text, machine)
        self.optimised = str(self.module)
        self.engine = ll.create_mcjit_compiler(self.module, machine)
        self.engine.finalize_object()

    def _function(self, name: str, count: int):
        address = self.engine.get_function_address(name)
        assert address, name
        return ctypes.CFUNCTYPE(None, *[ctypes.c_uint64] * count)(address)

    def draw(self, short: str, seed: int, samples, steps, position: int, lo=None, hi=None):
        samples = np.ascontiguousarray(samples, dtype=np.int64)
        steps = np.ascontiguousarray(np.broadcast_to(steps, samples.shape), dtype=np.int64)
        kind = llvm_random.DRAWS[short][1]
        out = np.empty(samples.shape, {"double": np.float64, "float": np.float32,
                                       "i64": np.int64}[kind])
        arrays = [samples, steps]
        if lo is not None:
            arrays += [np.ascontiguousarray(np.broadcast_to(x, samples.shape), dtype=np.int64)
                       for x in (lo, hi)]
        pointers = [a.ctypes.data for a in arrays]
        arguments = [len(samples), seed, *pointers[:2], position, *pointers[2:], out.ctypes.data]
        self._function(f"wrap_{short}", len(arguments))(*arguments)
        return out

    def helper(self, name: str, ks) -> np.ndarray:
        ks = np.ascontiguousarray(ks, dtype=np.int64)
        out = np.empty(ks.shape, np.float64)
        self._function(f"wrap_{name}", 3)(len(ks), ks.ctypes.data, out.ctypes.data)
        return out


@pytest.fixture(scope="module")
def compiled() -> _Compiled:
    return _Compiled(_module_text())


# -- the counters -------------------------------------------------------------------------------

SEEDS = [0, 1, 0xDEADBEEF, 2**32 - 1, 2**32, 2**63, 2**63 + 12345, 2**64 - 1]
EDGES = [0, 1, 2, 2**16, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**47, 2**48 - 1,
         2**48, 2**48 + 5, 2**62 + 7, 2**63 - 1, -1, -2, -2**32, -2**63]
POSITIONS = [0, 1, 2, 3, 4, 5, 17, 2**31, 2**32 - 1, 2**32 + 3]


def _counters() -> tuple[np.ndarray, np.ndarray]:
    """(samples, steps): every pair of ``EDGES``, then random ones, small and large."""
    rng = np.random.default_rng(20261204)
    edge_samples, edge_steps = (a.ravel() for a in np.meshgrid(EDGES, EDGES))
    return (np.concatenate([edge_samples, rng.integers(0, 10**6, 2000),
                            rng.integers(-2**63, 2**63 - 1, 2000, endpoint=True)]),
            np.concatenate([edge_steps, rng.integers(0, 1000, 2000),
                            rng.integers(-2**63, 2**63 - 1, 2000, endpoint=True)]))


SAMPLES, STEPS = _counters()


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view({8: np.uint64, 4: np.uint32}[x.dtype.itemsize])


def _assert_bits_equal(got: np.ndarray, want: np.ndarray, what: str, inputs=None) -> None:
    """``got`` and ``want`` are the same bits; else the first that differs (and ``inputs``'s
    element there: a lane's sample and step by default) is reported."""
    assert got.dtype == want.dtype, what
    same = _bits(got) == _bits(want)
    if not same.all():
        i = int(np.argmin(same))
        where = f"sample {SAMPLES[i]}, step {STEPS[i]}" if inputs is None else inputs[i]
        pytest.fail(f"{what}: {int((~same).sum())} of {same.size} differ, first at {i} "
                    f"({where}): {got[i]!r} != {want[i]!r}")


_REFERENCE = {
    "uniform64": lambda words: philox.uniform(words, np.float64),
    "uniform32": lambda words: philox.uniform(words, np.float32),
    "normal64": lambda words: philox.normal(words, np.float64),
    "exponential64": lambda words: philox.exponential(words, np.float64),
}


# -- the draws ------------------------------------------------------------------------------------

@pytest.mark.parametrize("short", sorted(_REFERENCE))
def test_each_draw_gives_the_reference_bits(compiled, short):
    for seed in SEEDS:
        for position in POSITIONS:
            want = _REFERENCE[short](philox.block(seed, SAMPLES, STEPS, position))
            got = compiled.draw(short, seed, SAMPLES, STEPS, position)
            _assert_bits_equal(got, want, f"{short}, seed {seed}, position {position}")


def test_random_seeds_and_a_step_shared_by_the_lanes(compiled):
    rng = np.random.default_rng(7)
    for seed in rng.integers(0, 2**64 - 1, 6, dtype=np.uint64, endpoint=True):
        for step in (0, 1, 2**32 + 3, -5):
            words = philox.block(int(seed), SAMPLES, step, 2)
            for short, reference in _REFERENCE.items():
                _assert_bits_equal(compiled.draw(short, int(seed), SAMPLES, step, 2),
                                   reference(words), f"{short}, seed {seed}, step {step}")


#: (lo, hi): hi <= lo, spans 1, 7, 2**32 - 1, 2**32, above 2**32 (cut to 2**32), int64's ends
BOUNDS = [(0, 0), (5, 5), (5, 4), (3, -3), (2**62, -2**62), (2**63 - 1, -2**63),
          (0, 1), (-1, 0), (-2**63, -2**63 + 1), (0, 7), (-3, 4), (-10, -3), (2**63 - 8, 2**63 - 1),
          (0, 2**32 - 1), (0, 2**32), (-2**31, 2**31), (-5, 2**32 - 5), (0, 2**32 + 1),
          (-2**40, 2**40), (-2**63, 2**63 - 1), (-1, 2**63 - 1), (-2**63, 0), (7, 2**62)]


def test_randint_gives_the_reference_integers(compiled):
    for seed in (0, 12345, 2**64 - 1):
        for position in (0, 3):
            words = philox.block(seed, SAMPLES, STEPS, position)
            for lo, hi in BOUNDS:
                want = philox.randint(words, lo, hi)
                got = compiled.draw("randint", seed, SAMPLES, STEPS, position, lo, hi)
                _assert_bits_equal(got, want, f"randint({lo}, {hi}), seed {seed}")
                assert ((got >= lo) & ((got < hi) | (hi <= lo))).all()
                if hi <= lo:
                    assert (got == lo).all()


def test_randint_with_bounds_that_differ_by_lane(compiled):
    rng = np.random.default_rng(99)
    n = len(SAMPLES)
    lo = np.concatenate([rng.integers(-2**63, 2**63 - 1, n // 2, endpoint=True),
                         rng.integers(-100, 100, n - n // 2)])
    hi = lo + rng.choice([-1, 0, 1, 2, 7, 2**32 - 1, 2**32, 2**32 + 1, 2**45], n)  # wraps
    words = philox.block(2**64 - 2, SAMPLES, STEPS, 4)
    _assert_bits_equal(compiled.draw("randint", 2**64 - 2, SAMPLES, STEPS, 4, lo, hi),
                       philox.randint(words, lo, hi), "randint, bounds by lane")


def test_log53_and_cos53_at_their_edges(compiled):
    """The helpers of the normal and exponential draws on the arguments the draws seldom
    reach: every power of two and its neighbours, the octants' boundaries, the ends."""
    powers = np.array([1 << e for e in range(54)], dtype=np.int64)
    rng = np.random.default_rng(3)
    ks = np.unique(np.concatenate([powers, powers - 1, powers + 1, [2**53, 2**53 - 1],
                                   rng.integers(1, 2**53, 5000, endpoint=True)]))
    ks = ks[(ks >= 1) & (ks <= 2**53)]
    _assert_bits_equal(compiled.helper("log53", ks), philox.log53(ks), "log53", ks)
    octants = np.array([j << 50 for j in range(8)], dtype=np.int64)
    ks = np.unique(np.concatenate([octants, octants + 1, octants - 1, octants + (1 << 49),
                                   [2**53 - 1], rng.integers(0, 2**53, 5000)]))
    ks = ks[(ks >= 0) & (ks < 2**53)]
    _assert_bits_equal(compiled.helper("cos53", ks), philox.cos53(ks), "cos53", ks)


# -- the text -------------------------------------------------------------------------------------

def test_only_the_functions_asked_for_are_defined():
    assert llvm_random.random_ir(set()) == ""
    uniform = llvm_random.random_ir({"uniform32"})
    assert "@eagle_draw_uniform32(" in uniform and "@eagle_philox4x32_10(" in uniform
    for absent in ("eagle_integer53", "eagle_log53", "eagle_cos53", "uniform64", "llvm.sqrt"):
        assert absent not in uniform
    exponential = llvm_random.random_ir({"eagle_draw_exponential64"})
    assert "define internal double @eagle_log53(" in exponential
    assert "eagle_cos53" not in exponential and "llvm.sqrt" not in exponential
    normal = llvm_random.random_ir({"normal64"})
    assert "call double @llvm.sqrt.f64(" in normal and "declare" not in normal
    assert llvm_random.declarations({"normal64"}) == llvm_random.DECLARATIONS
    assert llvm_random.declarations({"uniform64", "randint"}) == {}
    assert llvm_random.random_ir({"normal64"}, declare=True).count("declare") == 1
    with pytest.raises(ValueError, match="no draw"):
        llvm_random.random_ir({"gamma"})


def test_the_text_is_straight_line_code_without_fast_math():
    text = llvm_random.random_ir(set(llvm_random.DRAWS))
    defines = [line for line in text.splitlines() if line.startswith("define")]
    assert len(defines) == 9
    assert all(line.startswith("define internal ") and
               line.endswith(") alwaysinline nounwind {") for line in defines)
    words = set(text.split())
    for forbidden in ("br", "phi", "fast", "contract", "reassoc", "nnan", "ninf", "nsz",
                      "arcp", "afn", "@llvm.fma.f64", "@llvm.fmuladd.f64"):
        assert forbidden not in words
    calls = {line.split("@")[1].split("(")[0] for line in text.splitlines() if " call " in line}
    assert calls == {"eagle_philox4x32_10", "eagle_integer53", "eagle_log53", "eagle_cos53",
                     "llvm.sqrt.f64"}


def test_the_text_joins_a_module_that_declares_sqrt_itself():
    """A module of its own that declares ``llvm.sqrt.f64`` and calls a draw links with the
    text (``declare=False``), and the draw inlined there gives the reference."""
    caller = "\n".join([
        "declare double @llvm.sqrt.f64(double)",
        "define double @root_of_normal(i64 %seed, i64 %sample) {",
        "  %x = call double @eagle_draw_normal64(i64 %seed, i64 %sample, i64 0, i64 1)",
        "  %a = call double @llvm.fabs.f64(double %x)",
        "  %r = call double @llvm.sqrt.f64(double %a)",
        "  ret double %r",
        "}",
        "declare double @llvm.fabs.f64(double)",
        ""])
    machine = _machine()
    module = _optimised(caller + llvm_random.random_ir({"normal64"}), machine)
    assert "eagle_draw_normal64" not in str(module)  # inlined, then dropped
    engine = ll.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    function = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_uint64, ctypes.c_int64)(
        engine.get_function_address("root_of_normal"))
    x = philox.normal(philox.block(2**64 - 3, np.array([9, 2**40]), 0, 1), np.float64)
    got = np.array([function(2**64 - 3, 9), function(2**64 - 3, 2**40)])
    _assert_bits_equal(got, np.sqrt(np.abs(x)), "normal inlined in another module",
                       [9, 2**40])


# -- the lane loop vectorises ---------------------------------------------------------------------

def _x86_machine():
    try:
        return _machine(cpu="x86-64-v3", triple="x86_64-unknown-linux-gnu")
    except RuntimeError:
        return None


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="checked for x86-64 (AVX2)")
@pytest.mark.parametrize("short", sorted(llvm_random.DRAWS))
def test_the_lane_loop_of_each_draw_vectorises_for_avx2(short):
    """Optimised for an AVX2 x86-64 (whatever this CPU is), each wrapper's loop over lanes
    runs on vectors: straight-line draws, inlined, vectorise."""
    machine = _x86_machine()
    if machine is None:
        pytest.skip("no x86 target in this LLVM")
    module = _optimised(_module_text((short,)), machine)
    wrapper = str(module.get_function(f"wrap_{short}"))
    assert "x i32>" in wrapper or "x i64>" in wrapper, wrapper[:2000]
    if short != "randint":
        assert "x double>" in wrapper or "x float>" in wrapper


def test_the_reference_is_compared_bit_for_bit(compiled, monkeypatch):
    """The comparison sees one changed constant: a text with one Horner coefficient one ulp
    off (or one Philox multiplier changed) gives other bits."""
    perturbed = list(philox.LOG_SERIES)
    perturbed[0] = np.nextafter(perturbed[0], 1.0)
    monkeypatch.setattr(llvm_random, "LOG_SERIES", tuple(perturbed))
    off = _Compiled(_module_text(("exponential64",)))
    want = philox.exponential(philox.block(1, SAMPLES, STEPS, 0), np.float64)
    assert not np.array_equal(_bits(off.draw("exponential64", 1, SAMPLES, STEPS, 0)),
                              _bits(want))
    monkeypatch.setattr(llvm_random, "M1", philox.M1 ^ 4)
    off = _Compiled(_module_text(("uniform32",)))
    want = philox.uniform(philox.block(1, SAMPLES, STEPS, 0), np.float32)
    assert not np.array_equal(_bits(off.draw("uniform32", 1, SAMPLES, STEPS, 0)), _bits(want))
