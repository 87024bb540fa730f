"""The GPU backend on a real device (skipped without one): against the NumPy reference, the
spec's loop semantics, GraphPipeline and its capture rules, and interoperability."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eagle
import random_kernels
from differential import assert_bitwise_equal, reference_run
from eagle.cuda import is_available as gpu_available
from kernels import oscillator, spread_oscillator, transcendental
from test_cpu_backend import (
    oscillator_bindings,
    spread_bindings,
    transcendental_bindings,
)

pytestmark = pytest.mark.gpu

torch = None
if gpu_available():  # before any kernel is compiled: see test_pytorch_tensors_are_used_in_place
    try:
        import torch
    except ImportError:
        pass


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


def gpu_run(cp, kernel, bindings, max_steps, steps_per_launch=None):
    """Run on the GPU with CuPy copies of the arrays; return host arrays and the report."""
    on_gpu = {k: cp.asarray(v) if isinstance(v, np.ndarray) else v
              for k, v in copy.deepcopy(bindings).items()}
    runner = eagle.until_done(eagle.deploy(kernel, "gpu"), max_steps=max_steps,
                              steps_per_launch=steps_per_launch, **on_gpu)
    report = runner.run()
    arrays = {k: cp.asnumpy(v) if hasattr(v, "__cuda_array_interface__") else v
              for k, v in on_gpu.items()}
    return arrays, report, runner


def test_math_functions_agree_to_a_few_ulp(cp):
    """libdevice and the C library differ by a few ulp per call; that can move a sample across
    its stop threshold by one step, so a handful of samples may differ by a step's worth."""
    bindings = transcendental_bindings()
    expected, _ = reference_run(transcendental, bindings, 400)
    actual, _, _ = gpu_run(cp, transcendental, bindings, 400)
    close = np.ones(len(bindings["u"]), dtype=bool)
    for name in ("u", "w", "peak"):
        close &= np.isclose(actual[name], expected[name], rtol=1e-9, atol=1e-12)
    assert np.count_nonzero(~close) <= 3, np.flatnonzero(~close)[:10]


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(source=random_kernels.kernel_sources(exact=True), seed=st.integers(0, 2**16),
       steps_per_launch=st.sampled_from([1, 3, None]))
def test_random_exact_kernels_equal_reference(cp, tmp_path, source, seed, steps_per_launch):
    kernel = random_kernels.load(source, tmp_path)
    bindings = random_kernels.bindings(3000, seed)
    expected, expected_steps = reference_run(kernel, bindings, 60)
    actual, report, _ = gpu_run(cp, kernel, bindings, 60, steps_per_launch)
    assert_bitwise_equal({k: actual[k] for k in ("s0", "s1", "count", "q")},
                         {k: expected[k] for k in ("s0", "s1", "count", "q")})
    assert report.steps == expected_steps


def test_spec_loop_semantics(cp):
    n = 1_000_000
    x, v, t = cp.ones(n), cp.zeros(n), cp.zeros(n)
    runner = eagle.until_done(eagle.deploy(oscillator), max_steps=10_000, x=x, v=v, t=t,
                              omega=cp.linspace(1.0, 3.0, n), t_end=1.0, dt=1e-3)
    first = runner.run()
    assert first.device == "cuda:0" and first.done == n and first.steps == 1000
    assert 0 < first.launches < 100 and first.build_s > 0
    again = runner.run()
    assert again.launches == 0 and again.build_s == 0
    final = cp.asnumpy(x)
    x[...] = 1.0
    v[...] = 0.0
    t[...] = 0.0
    runner.reset()
    third = runner.run()
    assert third.build_s == 0 and third.launches == first.launches
    assert np.array_equal(cp.asnumpy(x), final)


def test_max_steps_is_exact_and_truncation_reported(cp):
    bindings = oscillator_bindings()
    expected, _ = reference_run(oscillator, bindings, 333)
    actual, report, runner = gpu_run(cp, oscillator, bindings, 333, 64)
    assert report.truncated and report.steps == 333
    assert_bitwise_equal({"x": actual["x"]}, {"x": expected["x"]})


def _add_one_launcher(cp):
    from eagle.cuda import Launcher, Module, device_info
    from eagle.cuda.nvrtc import compile_source

    source = ('extern "C" __global__ void add_one(double* x, long long n) {\n'
              '    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n'
              '    if (i < n) x[i] += 1.0;\n}\n')
    module = Module(compile_source(source, device_info(0).arch))
    return Launcher(module.function("add_one"), ["double*", "long long"], block=128)


def test_graph_pipeline_replays_its_launches(cp):
    from eagle.pipeline import GraphPipeline

    add_one = _add_one_launcher(cp)
    x = cp.zeros(1000)
    pipe = GraphPipeline()
    pipe.add(lambda: add_one.launch(8, x, 1000)).add(lambda: add_one.launch(8, x, 1000))
    assert pipe.build() is pipe
    pipe.launch(n=5)
    cp.cuda.runtime.deviceSynchronize()
    assert float(x.min()) == 10.0 and float(x.max()) == 10.0


def test_capture_errors_name_the_step_and_leave_the_stream_usable(cp):
    from eagle.cuda import DeviceBuffer
    from eagle.pipeline import GraphPipeline

    add_one = _add_one_launcher(cp)
    x = cp.zeros(1000)
    allocating = GraphPipeline().add(lambda: add_one.launch(8, x, 1000))
    allocating.add(lambda: DeviceBuffer(1 << 20))
    with pytest.raises(eagle.CaptureError, match="step 1 .*allocate"):
        allocating.build()
    syncing = GraphPipeline().add(lambda: cp.cuda.runtime.deviceSynchronize())
    with pytest.raises(eagle.CaptureError, match="step 0"):
        syncing.build()
    twice = GraphPipeline().add(lambda: (add_one.launch(8, x, 1000), add_one.launch(8, x, 1000)))
    with pytest.raises(eagle.CaptureError, match="issued 2 operations"):
        twice.build()
    good = GraphPipeline().add(lambda: add_one.launch(8, x, 1000)).build()
    good.launch(n=3)
    cp.cuda.runtime.deviceSynchronize()
    assert float(x.max()) == 3.0


def test_pytorch_tensors_are_used_in_place():
    """PyTorch is imported when this module is: on the H200 machine (PyTorch 2.11.0+cu130,
    NVRTC 13.0.88), `import torch` after eagle's NVRTC had compiled a kernel in the same
    process failed inside PyTorch's own schema parser ("annotate(strtag)"); before it, fine."""
    if torch is None:
        pytest.skip("PyTorch is not installed")
    n = 4096
    x = torch.ones(n, dtype=torch.float64, device="cuda")
    v = torch.zeros(n, dtype=torch.float64, device="cuda")
    t = torch.zeros(n, dtype=torch.float64, device="cuda")
    omega = torch.from_numpy(np.linspace(1.0, 3.0, n)).to("cuda")
    report = eagle.simulate(oscillator, max_steps=5000, x=x, v=v, t=t, omega=omega, t_end=1.0,
                            dt=1e-3)
    expected, _ = reference_run(oscillator, dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n),
                                                 omega=np.linspace(1.0, 3.0, n), t_end=1.0,
                                                 dt=1e-3), 5000)
    assert report.done == n
    assert np.array_equal(x.cpu().numpy(), expected["x"])


def test_float32_on_the_gpu_equals_reference(cp):
    n = 5000
    bindings = dict(x=np.ones(n, np.float32), v=np.zeros(n, np.float32),
                    t=np.zeros(n, np.float32), omega=np.linspace(1, 3, n, dtype=np.float32),
                    t_end=np.float32(1.0), dt=np.float32(1e-3))
    expected, steps = reference_run(oscillator, bindings, 3000)
    actual, report, _ = gpu_run(cp, oscillator, bindings, 3000)
    assert_bitwise_equal({"x": actual["x"], "v": actual["v"]},
                         {"x": expected["x"], "v": expected["v"]})
    assert report.steps == steps


def test_repeat_while_loops_on_the_device(cp):
    from eagle.cuda import Launcher, Module, device_info
    from eagle.cuda.nvrtc import compile_source

    source = ('extern "C" __global__ void countdown(long long* left, double* total) {\n'
              '    total[0] += 1.0; left[0] -= 1;\n}\n')
    countdown = Launcher(Module(compile_source(source, device_info(0).arch)).function(
        "countdown"), ["long long*", "double*"], block=1)
    left, total = cp.array([5], dtype=cp.int64), cp.zeros(1)
    iterations = eagle.repeat_while(left, lambda: countdown.launch(1, left, total))
    assert iterations == 5 and float(total[0]) == 5.0 and int(left[0]) == 0
    left[0] = 10
    assert eagle.repeat_while(left, lambda: countdown.launch(1, left, total),
                              max_iterations=3) == 3
    assert int(left[0]) == 7


def test_spec_gravity_cell_replays_accumulate(cp):
    """The spec's low-level cells, unchanged but for the fixtures' path."""
    import pathlib

    from eagle.loaded import LoadedVector
    from eagle.pipeline import GraphPipeline

    FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "docs" / "guide" / "_fixtures"
    force = LoadedVector(FIXTURES / "gravity.ptx")
    MU = 3.986004418e5
    N = 1024
    rng = np.random.default_rng(2)
    position = cp.asarray(rng.uniform(7.0e3, 4.2e4, size=(3, N)))
    out = cp.zeros((3, N), dtype=cp.float64)
    terminated = cp.zeros(N, dtype=cp.bool_)
    pipe = GraphPipeline()
    pipe.add(lambda: force.launch(out=out, position=position, mu=MU, terminated=terminated))
    pipe.build()
    replays = 5
    out.fill(0.0)
    pipe.launch(n=replays)
    cp.cuda.runtime.deviceSynchronize()
    r = cp.linalg.norm(position, axis=0)
    expected_once = -MU * position / r**3
    diff = cp.abs(out - replays * expected_once)
    rel_err = cp.max(diff / cp.abs(replays * expected_once))
    assert float(rel_err) < 1e-13


def gravity_artifact(folder):
    """The spec's gravity kernel written from its hawk source by this machine's NVRTC (the
    checked-in fixture is for the spec's own cell)."""
    import importlib.util
    import pathlib

    from eagle.cuda.artifact import write_artifact

    source = pathlib.Path(__file__).resolve().parent.parent / "docs" / "guide" / "_fixtures"
    spec = importlib.util.spec_from_file_location("gravity_source", source / "gravity.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path, _ = write_artifact(module.gravity.specialize({}), "ptx", folder / "gravity.ptx",
                             "sm_80")
    return path


def test_loaded_vector_checks_bindings_like_until_done(cp, tmp_path):
    from eagle.loaded import LoadedVector

    force = LoadedVector(gravity_artifact(tmp_path))
    position = cp.ones((3, 10))
    with pytest.raises(eagle.BindingTypeError, match="missing a binding for 'mu'"):
        force.launch(out=cp.zeros((3, 10)), position=position)
    with pytest.raises(eagle.BindingValueError, match="'out' .* shape"):
        force.launch(out=cp.zeros((10, 3)), position=position, mu=1.0)


def test_graph_composer_overlaps_two_runners_with_the_same_results(cp):
    from eagle.compose import GraphComposer

    def arrays(n):
        b = spread_bindings(n)
        return {k: cp.asarray(v) if isinstance(v, np.ndarray) else v for k, v in b.items()}

    n = 1_000_000
    alone = [arrays(n), arrays(n)]
    for a in alone:
        eagle.until_done(eagle.deploy(spread_oscillator, "gpu"), max_steps=2000, **a).run()
    together = [arrays(n), arrays(n)]
    runners = [eagle.until_done(eagle.deploy(spread_oscillator, "gpu"), max_steps=2000, **a)
               for a in together]
    composer = GraphComposer()
    for runner in runners:
        composer.add(runner)
    composer.build().launch(1)
    composer.synchronize()
    for runner, a, b in zip(runners, together, alone, strict=True):
        runner.sync_from_device()
        assert runner.live == 0 and runner.steps == 1000
        for key in ("x", "v", "t"):
            assert np.array_equal(cp.asnumpy(a[key]), cp.asnumpy(b[key]))


def test_graph_composer_overlaps_pipelines(cp):
    """Two one-block, compute-bound launches: composed, they run side by side on two SMs."""
    import time

    from eagle.compose import GraphComposer
    from eagle.cuda import Launcher, Module, device_info
    from eagle.cuda.nvrtc import compile_source
    from eagle.pipeline import GraphPipeline

    source = ('extern "C" __global__ void busy(double* x, long long rounds) {\n'
              '    double v = x[threadIdx.x];\n'
              '    for (long long k = 0; k < rounds; ++k) v = v * 0.999999 + 1e-6;\n'
              '    x[threadIdx.x] = v;\n}\n')
    busy = Launcher(Module(compile_source(source, device_info(0).arch)).function("busy"),
                    ["double*", "long long"], block=32)
    xs = [cp.ones(32), cp.ones(32)]
    pipes = [GraphPipeline().add(lambda x=x: busy.launch(1, x, 200_000)) for x in xs]
    for pipe in pipes:
        pipe.build()

    def timed(function, repeats=10):
        function()
        cp.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        for _ in range(repeats):
            function()
        cp.cuda.runtime.deviceSynchronize()
        return (time.perf_counter() - t0) / repeats

    def one_after_other():
        for pipe in pipes:
            pipe.launch(1)
            pipe.synchronize()

    alone = timed(one_after_other)
    composer = GraphComposer().add(pipes[0]).add(pipes[1]).build()
    together = timed(lambda: composer.launch(1))
    assert together < 0.8 * alone, (together, alone)


def test_a_runner_built_on_one_thread_runs_on_another(cp):
    """A thread pool's worker has no current CUDA context of its own (issue 15, defect 4)."""
    from concurrent.futures import ThreadPoolExecutor

    bindings = oscillator_bindings(20_000)
    expected, _ = reference_run(oscillator, bindings, 2000)
    on_gpu = {k: cp.asarray(v) if isinstance(v, np.ndarray) else v for k, v in bindings.items()}
    runner = eagle.until_done(eagle.deploy(oscillator, "gpu"), max_steps=2000, **on_gpu)
    with ThreadPoolExecutor(1) as pool:
        report = pool.submit(runner.run).result()
        pool.submit(runner.sync_from_device).result()
    assert report.done == 20_000
    assert np.array_equal(cp.asnumpy(on_gpu["x"]), expected["x"])


def test_arrays_written_on_a_side_stream_are_waited_for(cp):
    """CuPy exports the stream it wrote on (CAI v3); the run must follow that work."""
    from eagle.cuda.memory import as_device_array

    n = 1_000_000
    side = cp.cuda.Stream(non_blocking=True)
    with side:
        x = cp.ones(n)
        for _ in range(50):  # keep the side stream busy past the moment run() starts
            x = x * 1.0
        v, t, omega = cp.zeros(n), cp.zeros(n), cp.linspace(1.0, 3.0, n)
        assert as_device_array(x, "cuda:0").stream == side.ptr
        runner = eagle.until_done(eagle.deploy(oscillator, "gpu"), max_steps=2000, x=x, v=v,
                                  t=t, omega=omega, t_end=1.0, dt=1e-3)
        report = runner.run()
    # The reference starts from the device's own omega: CuPy's linspace is not NumPy's to the
    # last bit (its kernel fuses a multiply-add), which the first run on an H200 showed. It
    # runs every 1,000th sample (the samples are independent): all 10^6 took 85 s on the H200.
    every = slice(None, None, 1000)
    m = len(range(n)[every])
    expected, _ = reference_run(oscillator, dict(x=np.ones(m), v=np.zeros(m), t=np.zeros(m),
                                                 omega=cp.asnumpy(omega[every]), t_end=1.0,
                                                 dt=1e-3), 2000)
    assert report.done == n and np.array_equal(cp.asnumpy(x[every]), expected["x"])


def test_captures_survive_another_threads_default_stream_work(cp):
    """Captures run on non-blocking streams (issue 15, defect 3)."""
    import threading

    from eagle.pipeline import GraphPipeline

    add_one = _add_one_launcher(cp)
    x = cp.zeros(1000)
    stop = threading.Event()

    def busy():
        y = cp.ones(1 << 16)
        while not stop.is_set():
            y += 1.0  # the legacy default stream, from another thread
            cp.cuda.Stream.null.synchronize()

    thread = threading.Thread(target=busy)
    thread.start()
    try:
        for _ in range(50):
            GraphPipeline().add(lambda: add_one.launch(8, x, 1000)).build().launch(1)
    finally:
        stop.set()
        thread.join()
    cp.cuda.runtime.deviceSynchronize()
    assert float(x.min()) == 50.0


def test_progress_and_fmad_on_the_gpu(cp):
    bindings = spread_bindings(100_000)
    expected, steps = reference_run(spread_oscillator, bindings, 2000)
    actual, report, runner = gpu_run(cp, spread_oscillator, bindings, 2000)
    assert report.steps == steps and report.launches < 2000 // 16
    on_gpu = {k: cp.asarray(v) if isinstance(v, np.ndarray) else v
              for k, v in copy.deepcopy(bindings).items()}
    fast = eagle.until_done(eagle.deploy(spread_oscillator, "gpu", fmad=True), max_steps=2000,
                            **on_gpu).run(progress=True)
    assert fast.done == report.done
    assert np.allclose(cp.asnumpy(on_gpu["x"]), expected["x"], rtol=1e-12, atol=1e-12)
