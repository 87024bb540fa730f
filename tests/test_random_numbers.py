"""Random numbers in kernels (issue 14): Philox4x32-10 against Random123's known answers, every
backend equal to the reference executor bit for bit, results that do not depend on how a run is
cut up (launch sizes, threads, interruptions, checkpoints, frozen samples), the seed's binding
rules, and statistics of the streams with fixed seeds and thresholds that broken generators
fail.

The statistics run on ``hawk.philox`` (the streams' definition, which the backends equal bit for
bit) with NumPy, plus one check of a kernel's own draws on the CPU.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import eagle
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import assert_bitwise_equal, eagle_run, reference_run
from hawk import Mutable, Out, Param, Scalar, Terminated, philox

N = 2500  # one full CPU block (2048 lanes) and a partial one
MAX_STEPS = 40
SEED = 20261203


@hawk.kernel
def draws(limit: Param, terminated: Terminated, count: Mutable[Scalar], acc: Mutable[Scalar],
          u: Out[Scalar], z: Out[Scalar], e: Out[Scalar], r: Out[Scalar], w: Out[Scalar],
          where: Out[Scalar]):
    """Every draw and counter; a sample stops after ``limit`` steps or when ``e > 3`` (5% per
    step), so blocks thin out and the CPU's packed (sparse) lanes run too."""
    u = hawk.uniform()
    z = hawk.normal()
    e = hawk.exponential()
    r = hawk.randint(-3, 4)
    if u < 0.5:
        w = hawk.uniform(2.0, 5.0)
    else:
        w = hawk.normal(1.0, 0.5)
    where = hawk.sample_index() * 1000.0 + hawk.step()
    acc += u + z * 0.5 + e
    count += 1.0
    terminated = count >= limit or e > 3.0


@hawk.kernel
def no_draws(x: Mutable[Scalar]):
    x += 1.0


def bindings(dtype=np.float64, n=N) -> dict:
    out = {name: np.zeros(n, dtype) for name in ("count", "acc", "u", "z", "e", "r", "w",
                                                  "where")}
    out["where"] = np.zeros(n, np.float64)
    return {**out, "limit": 30.0}


# -- the generator -------------------------------------------------------------------------------

# Random123 1.14, tests/kat_vectors, the "philox4x32 10" lines: counter, key, expected output.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter, key, expected", KNOWN_ANSWERS)
def test_philox_matches_random123_known_answers(counter, key, expected):
    assert tuple(int(w) for w in philox.philox4x32(counter, key)) == expected


@pytest.mark.parametrize("counter, key, expected", KNOWN_ANSWERS)
def test_generated_cuda_philox_matches_random123_known_answers(counter, key, expected, tmp_path):
    """The CUDA helper, compiled for the host: the counter words are set through
    ``(sample, step, position)`` as the stream layout maps them."""
    from host_cuda import PRELUDE, compiler

    if compiler() is None:
        pytest.skip("no host C++ compiler")
    import ctypes
    import subprocess

    from eagle.cuda.emit import _HELPERS, _RANDOM_HELPERS

    c0, c1, c2, c3 = counter
    source = PRELUDE + _HELPERS + _RANDOM_HELPERS + """
extern "C" void kat(unsigned long long seed, long long sample, long long step, unsigned int d,
                    unsigned int* out) {
    EaglePhilox w = eagle_philox(seed, sample, step, d);
    out[0] = w.w0; out[1] = w.w1; out[2] = w.w2; out[3] = w.w3;
}
"""
    path = tmp_path / "kat.cpp"
    path.write_text(source)
    library = tmp_path / "kat.so"
    subprocess.run([compiler(), "-std=c++17", "-shared", "-fPIC", "-w", str(path), "-o",
                    str(library)], check=True)
    kat = ctypes.CDLL(str(library)).kat
    # counter word 2 holds step bits 32..47 and sample bits 32..47 (16 each)
    sample = (c3 | ((c2 >> 16) << 32))
    step = (c1 | ((c2 & 0xFFFF) << 32))
    out = (ctypes.c_uint * 4)()
    kat(ctypes.c_ulonglong(key[0] | key[1] << 32), ctypes.c_longlong(sample),
        ctypes.c_longlong(step), ctypes.c_uint(c0), out)
    assert tuple(out) == expected


def test_the_stream_layout_keeps_samples_steps_and_positions_apart():
    words = philox.counter_words(np.array([1, 2**40 + 1]), np.array([3, 2**40 + 3]), 5)
    assert [[int(w[k]) for w in words] for k in (0, 1)] == [
        [5, 3, 0, 1], [5, 3, (1 << 8) | (1 << 24), 1]]
    assert philox.key_words(2**40 + 7) == (7, 2**8)


# -- every backend equals the reference ----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_every_backend_equals_the_reference_bit_for_bit(target, dtype):  # noqa: F811
    """Uniform draws bit for bit everywhere; normal and exponential draws too where the math
    library is the C library's (the CPU, the emulated GPU)."""
    expected, expected_steps = reference_run(draws, bindings(dtype), MAX_STEPS, seed=SEED)
    assert 0 < np.count_nonzero(expected["count"] < 30) < N  # some stopped early: sparse lanes
    arrays = target.put(bindings(dtype))
    runner = eagle.until_done(eagle.deploy(draws, target.target.device), max_steps=MAX_STEPS,
                              steps_per_launch=7, seed=SEED, **arrays)
    report = runner.run()
    actual = target.get(arrays)
    assert report.steps == expected_steps
    exact = {"count", "u", "r", "where"} if not target.target.exact_math else set(expected)
    assert_bitwise_equal({k: actual[k] for k in exact if k in actual},
                         {k: expected[k] for k in exact if k in actual})
    assert np.array_equal(actual["where"] % 1000, actual["count"] - 1)  # step number, per sample
    assert np.array_equal(actual["where"] // 1000, np.arange(N))


def test_generated_cuda_on_the_host_equals_the_reference(tmp_path):
    from eagle.bindings import bind
    from host_cuda import HostKernel, compiler

    if compiler() is None:
        pytest.skip("no host C++ compiler")
    expected, steps = reference_run(draws, bindings(), MAX_STEPS, seed=SEED)
    bound = bind(draws, bindings(), "cpu", seed=SEED)
    program = draws.specialize(bound.dtypes)
    HostKernel(program, tmp_path).run(bound.arrays, bound.uniforms, bound.flags, MAX_STEPS, 6,
                                      seed=SEED)
    assert_bitwise_equal({**bound.arrays, **bound.uniforms}, expected)


def test_nvrtc_compiles_a_drawing_kernel():
    nvrtc = pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.emit import emit_cuda

    for dtype in ("float64", "float32"):
        program = draws.specialize({k: dtype for k in ("count", "acc", "u", "z", "e", "r", "w")})
        for arch in ("sm_80", "sm_90"):
            assert nvrtc.compile_source(emit_cuda(program), arch)[:4] == b"\x7fELF"


# -- the same seed gives the same bits, however the run is cut up --------------------------------


def _cpu_run(steps_per_launch=None, seed=SEED, flags=None) -> dict:
    arrays = bindings()
    if flags is not None:
        arrays["terminated"] = flags
    runner = eagle.until_done(eagle.deploy(draws, "cpu"), max_steps=MAX_STEPS,
                              steps_per_launch=steps_per_launch, seed=seed, **arrays)
    runner.run()
    return arrays


def test_launch_sizes_and_threads_do_not_change_a_bit():
    baseline = _cpu_run(1)
    for steps_per_launch in (3, 64, None):
        assert_bitwise_equal(_cpu_run(steps_per_launch), baseline)
    threads = eagle.get_num_threads()
    try:
        eagle.set_num_threads(1)
        one_thread = _cpu_run(5)
    finally:
        eagle.set_num_threads(threads)
    assert_bitwise_equal(one_thread, baseline)
    other = _cpu_run(5, seed=SEED + 1)
    assert not np.array_equal(other["u"], baseline["u"])


def test_an_interrupted_run_and_a_restored_checkpoint_continue_the_same_streams(tmp_path):
    baseline = _cpu_run(4)
    arrays = bindings()
    plan = eagle.deploy(draws, "cpu")
    runner = eagle.until_done(plan, max_steps=9, steps_per_launch=4, seed=SEED, **arrays)
    with pytest.warns(eagle.TruncationWarning):
        runner.run()  # stops at step 9 with samples running: "interrupted"
    runner.max_steps = 17
    with pytest.warns(eagle.TruncationWarning):
        runner.run()  # and run() again
    runner.checkpoint(tmp_path / "draws.npz")
    restored = eagle.Runner.restore(tmp_path / "draws.npz", plan)
    restored.max_steps = MAX_STEPS
    restored.run()
    shared = [k for k in baseline if k in restored.arrays]
    assert len(shared) == 8
    assert_bitwise_equal({k: restored.arrays[k] for k in shared},
                         {k: baseline[k] for k in shared})


def test_frozen_samples_draw_nothing_and_do_not_shift_the_others():
    baseline = _cpu_run(8)
    frozen = np.zeros(N, bool)
    frozen[::3] = True  # a third of the samples are done before the run
    partial = _cpu_run(8, flags=frozen.copy())
    for name in ("count", "acc", "u", "z", "e", "r", "w", "where"):
        assert np.array_equal(partial[name][~frozen], baseline[name][~frozen]), name
        assert not partial[name][frozen].any(), name  # frozen: never stepped


# -- binding the seed ----------------------------------------------------------------------------


def test_a_kernel_that_draws_needs_a_seed():
    with pytest.raises(eagle.BindingTypeError, match=r"draws random numbers \(hawk.uniform\(\) "
                       r"at .*test_random_numbers.py:\d+\).*seed="):
        eagle.until_done(draws, max_steps=3, **bindings())


@pytest.mark.parametrize("seed, error, match", [
    (-1, ValueError, r"seed must be an int in \[0, 2\*\*64\), got -1"),
    (2**64, ValueError, r"seed must be an int in \[0, 2\*\*64\)"),
    (1.5, TypeError, r"seed must be an int .* got float 1.5"),
    (True, TypeError, r"seed must be an int .* got bool"),
])
def test_a_bad_seed_is_refused_naming_it(seed, error, match):
    arrays = bindings()
    with pytest.raises(error, match=match):
        eagle.until_done(draws, max_steps=3, seed=seed, **arrays)
    assert not arrays["u"].any()


def test_the_largest_seed_works_and_a_kernel_that_does_not_draw_ignores_a_seed():
    x = np.zeros(4)
    eagle.simulate(no_draws, max_steps=2, seed=5, x=x)
    assert x.tolist() == [2.0] * 4
    expected, _ = reference_run(draws, bindings(n=64), 3, seed=2**64 - 1)
    actual, _ = eagle_run(draws, bindings(n=64), 3, seed=2**64 - 1)
    assert_bitwise_equal(actual, expected)


def test_calling_a_draw_outside_a_kernel_says_where_it_belongs():
    with pytest.raises(TypeError, match=r"hawk.normal\(\) is understood inside a @hawk.kernel"):
        hawk.normal()


# -- statistics ----------------------------------------------------------------------------------

STAT_N = 200_000
KS_LIMIT = 1.95  # sqrt(n) * D above this: p < 0.001 under the null hypothesis
CORRELATION_LIMIT = 5.0  # sqrt(n) * |r| above this: more than 5 standard errors from 0
CHI2_BINS = 16  # per axis, in the 2-d test of independence


def _uniforms(block, seed, samples, step, position) -> np.ndarray:
    return philox.uniform(block(seed, samples, step, position), np.float64)


def _ks(values: np.ndarray, cdf) -> float:
    """sqrt(n) times the Kolmogorov-Smirnov distance between ``values`` and ``cdf``."""
    x = np.sort(values)
    n = len(x)
    f = cdf(x)
    d = max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))
    return math.sqrt(n) * d


def _normal_cdf(x):
    return 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _independence(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(sqrt(n) |correlation|, chi-square per degree of freedom of the 2-d histogram of
    uniform pairs): 0 and 1 on average for independent uniforms."""
    with np.errstate(invalid="ignore"):  # a constant stream: nan, and the chi-square fails
        r = np.corrcoef(a, b)[0, 1]
    counts, _, _ = np.histogram2d(a, b, bins=CHI2_BINS, range=[[0, 1], [0, 1]])
    expected = len(a) / CHI2_BINS**2
    chi2 = ((counts - expected) ** 2 / expected).sum() / (CHI2_BINS**2 - 1)
    return math.sqrt(len(a)) * abs(r), chi2


def stream_failures(block, seed: int = 99) -> list[str]:
    """The statistical checks ``block`` (a ``philox.block``-like function) fails."""
    failures = []
    samples = np.arange(STAT_N, dtype=np.int64) + 10**6
    u = _uniforms(block, seed, samples, 7, 0)
    if abs(u.mean() - 0.5) * math.sqrt(12 * STAT_N) > 5 or abs(u.var() - 1 / 12) > 0.002:
        failures.append("uniform moments")
    if _ks(u, lambda x: x) > KS_LIMIT:
        failures.append("uniform KS")
    pairs = {
        "neighbouring samples": (u[:-1], u[1:]),
        "consecutive steps": (u, _uniforms(block, seed, samples, 8, 0)),
        "consecutive draws": (u, _uniforms(block, seed, samples, 7, 1)),
        "neighbouring seeds": (u, _uniforms(block, seed + 1, samples, 7, 0)),
    }
    for what, (a, b) in pairs.items():
        correlation, chi2 = _independence(a, b)
        if not correlation <= CORRELATION_LIMIT or not 0.8 < chi2 < 1.2:
            failures.append(what)
    return failures


def test_the_streams_pass_the_statistical_checks():
    assert stream_failures(philox.block) == []


BROKEN = {  # a generator broken on purpose -> a check it fails
    "three rounds": (lambda seed, sample, step, position: philox.block(
        seed, sample, step, position, rounds=3), "neighbouring samples"),
    "five rounds": (lambda seed, sample, step, position: philox.block(
        seed, sample, step, position, rounds=5), "consecutive draws"),
    "step left out of the counter": (lambda seed, sample, step, position: philox.block(
        seed, sample, 0, position), "consecutive steps"),
    "seed left out of the key": (lambda seed, sample, step, position: philox.block(
        0, sample, step, position), "neighbouring seeds"),
}


@pytest.mark.parametrize("broken", list(BROKEN))
def test_a_broken_generator_fails_the_statistical_checks(broken):
    """Fewer rounds than ten leave neighbouring counters correlated (Philox needs about seven
    to pass BigCrush); a counter or key that leaves out one of the stream's coordinates repeats
    numbers along it. (A Philox whose key is never bumped between rounds passes these checks:
    they test the streams' layout and mixing, not every weakness a generator can have.)"""
    block, fails = BROKEN[broken]
    assert fails in stream_failures(block)


def test_normal_exponential_and_randint_follow_their_laws():
    samples = np.arange(STAT_N, dtype=np.int64)
    words = philox.block(12345, samples, 3, 0)
    z = philox.normal(words, np.float64)
    assert abs(z.mean()) * math.sqrt(STAT_N) < 5
    assert abs(z.var() - 1.0) < 0.02 and abs(np.mean(z**4) - 3.0) < 0.1
    assert _ks(z, _normal_cdf) < KS_LIMIT
    e = philox.exponential(words, np.float64)
    assert e.min() >= 0 and abs(e.mean() - 1.0) * math.sqrt(STAT_N) < 5
    assert _ks(e, lambda x: 1.0 - np.exp(-x)) < KS_LIMIT
    k = philox.randint(words, np.full(STAT_N, -3), np.full(STAT_N, 4))
    counts = np.bincount(k + 3, minlength=7)
    assert k.min() == -3 and k.max() == 3
    chi2 = ((counts - STAT_N / 7) ** 2 / (STAT_N / 7)).sum()
    assert chi2 < 22.5  # chi-square with 6 degrees of freedom: p = 0.001
    f32 = philox.uniform(words, np.float32)
    assert f32.dtype == np.float32 and 0 <= f32.min() and f32.max() < 1
    assert np.array_equal(f32 * 2**24, np.floor(f32 * 2**24))  # 24 bits, exactly


def test_uniform_uses_the_full_mantissa():
    samples = np.arange(4096, dtype=np.int64)
    u = philox.uniform(philox.block(1, samples, 0, 0), np.float64)
    scaled = u * 2.0**53
    assert np.array_equal(scaled, np.floor(scaled))  # multiples of 2**-53
    assert np.count_nonzero(scaled % 2 == 1) > 1500  # the last bit is used


def test_randint_edges():
    words = philox.block(3, np.arange(1000), 0, 0)
    assert np.all(philox.randint(words, np.full(1000, 5), np.full(1000, 5)) == 5)  # hi <= lo
    big = philox.randint(words, np.full(1000, -(2**63)), np.full(1000, 2**63 - 1))
    assert big.min() >= -(2**63) and big.max() < -(2**63) + 2**32  # width cut to 2**32


def test_a_kernels_own_draws_follow_their_laws():
    n = 20000
    arrays = bindings(n=n)
    eagle.simulate(draws, max_steps=1, seed=4, **arrays)  # one step: one draw of each per sample
    assert _ks(arrays["u"], lambda x: x) < KS_LIMIT
    assert _ks(arrays["z"], _normal_cdf) < KS_LIMIT
    assert _ks(arrays["e"], lambda x: 1.0 - np.exp(-x)) < KS_LIMIT
    assert set(np.unique(arrays["r"])) == set(range(-3, 4))
    correlation, chi2 = _independence(arrays["u"][:-1], arrays["u"][1:])
    assert correlation < CORRELATION_LIMIT and 0.8 < chi2 < 1.2


def test_an_artifact_of_a_drawing_kernel_is_refused_with_the_reason(tmp_path):
    from eagle.cuda.artifact import write_artifact

    with pytest.raises(ValueError, match="draws random numbers .* not supported yet"):
        write_artifact(draws.program, "cuda", tmp_path / "draws.cu")
    assert not list(tmp_path.iterdir())


def test_the_normal_draws_log_and_cos_are_within_a_few_ulp():
    """``log53`` and ``cos53`` (``+ - * /`` only, so every backend computes the same bits) against
    the C library's ``log`` and a long-double ``cos``: ``log`` within 2 ulp everywhere, ``cos``
    within 3 ulp where ``|cos| > 1e-3`` and 2e-16 absolute near its zeros."""
    rng = np.random.default_rng(0)
    k = np.concatenate([rng.integers(1, 2**53 + 1, 100_000), np.arange(1, 2000),
                        2**53 - np.arange(2000), 2 ** np.arange(54)])
    got = philox.log53(k)
    exact = np.array([math.log(int(v) * 2.0**-53) for v in k])
    nonzero = exact != 0
    assert np.all(got[~nonzero] == 0.0)
    assert (np.abs(got - exact)[nonzero] / np.spacing(np.abs(exact[nonzero]))).max() <= 2
    k = np.concatenate([rng.integers(0, 2**53, 100_000), np.arange(2000),
                        2**53 - 1 - np.arange(2000), (np.arange(1, 8) << 50) + 1,
                        (np.arange(1, 8) << 50) - 1])
    got = philox.cos53(k).astype(np.longdouble)
    pi = np.longdouble("3.14159265358979323846264338327950288")
    exact = np.cos(2 * pi * k.astype(np.longdouble) / np.longdouble(2.0**53))
    error = np.abs(got - exact)
    assert error.max() < 2e-16
    far = np.abs(exact) > 1e-3
    assert (error[far] / np.spacing(np.abs(exact[far]).astype(np.float64))).max() <= 3
    assert philox.cos53(np.array([0, 1 << 51, 1 << 52]))[[0, 2]].tolist() == [1.0, -1.0]
