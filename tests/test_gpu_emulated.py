"""eagle's GPU runner end to end on an emulated GPU (``emulated_gpu``): the real control
blocks, graphs, WHILE loops, counters and reports, around the generated kernels run on the
host. Results must equal the reference executor bit for bit. Each test runs through both
doors: the Python GPU layer over the emulated ``cuda.bindings`` driver, and
``EAGLE_CUDA_NATIVE=1``, the native layer (``libeagle_cuda``) over the stand-in libcuda running
host builds of the same kernels (``native_door``; the slow tier, as it builds ``native/``).
Skipped where a real GPU is present (tests/test_gpu.py runs there) or no host C++ compiler is."""

from __future__ import annotations

import copy
import os
import threading

import numpy as np
import pytest

import eagle
from differential import reference_run
from eagle.backend import backend_for
from kernels import oscillator, spread_oscillator
from test_cpu_backend import (
    oscillator_bindings,
    spread_bindings,
)

pytest.importorskip("cuda.bindings.driver")
from eagle.cuda import driver as driver_module  # noqa: E402
from host_cuda import compiler  # noqa: E402

if driver_module.is_available():
    pytest.skip("a real GPU is present: tests/test_gpu.py runs instead", allow_module_level=True)
if compiler() is None:
    pytest.skip("no host C++ compiler to emulate the GPU with", allow_module_level=True)

from emulated_gpu import EmulatedDriver  # noqa: E402
from native_door import DOORS, NativeDevice, device_array, door_opened  # noqa: E402


def _source_as_image(source, arch="sm_90", target="cubin", **options):
    return source.encode() + b"\0"


@pytest.fixture(params=DOORS)
def gpu(request, tmp_path_factory):
    """The emulated GPU registered as the backend serving ``cuda`` devices: its driver runs
    kernels on the host, and its compiler hands the CUDA source itself to that driver; or,
    through the native door, the stand-in libcuda running host builds of the kernels."""
    folder = tmp_path_factory.mktemp("emulated")
    with door_opened(request.param, folder, EmulatedDriver(folder),
                     compiler=_source_as_image) as driver:
        yield driver


def python_layer_only(gpu):
    """``eagle.cuda.Module`` and ``eagle.cuda.Launcher`` are the Python layer's (NVRTC's
    images through ``cuda.bindings``); the native door has no Python face for them: a kernel
    reaches the C++ ``Launcher`` through ``LoadedVector`` or the runner, and test_native's spec
    cell checks ``GraphPipeline`` and ``repeat_while`` over ``LoadedVector`` there."""
    if isinstance(gpu, NativeDevice):
        pytest.skip("eagle.cuda.Module/Launcher are the cuda.bindings door's (see "
                    "python_layer_only)")


def ctypes_copy(destination, source, nbytes):
    import ctypes

    ctypes.memmove(destination, source, nbytes)


def to_gpu(driver, bindings):
    return {k: device_array(driver, v) if isinstance(v, np.ndarray) else v
            for k, v in copy.deepcopy(bindings).items()}


def back(arrays):
    return {k: v.get() if hasattr(v, "__cuda_array_interface__") else v
            for k, v in arrays.items()}


def test_spec_loop_contract_on_the_emulated_gpu(gpu):
    bindings = oscillator_bindings(2000)
    arrays = to_gpu(gpu, bindings)
    runner = eagle.until_done(eagle.deploy(oscillator), max_steps=10_000, **arrays)
    first = runner.run()
    # The adaptive schedule: 2000 samples are fewer than one block per SM of the stand-in's
    # 132, so every launch doubles: 16 + 32 + 64 + 128 + 256 + 512 >= 1000 steps.
    assert first.launches == 6 and first.steps == 1000 and first.build_s > 0
    again = runner.run()
    assert again.launches == 0 and again.build_s == 0 and again.steps == 0
    final = back(arrays)["x"]
    for key, value in to_gpu(gpu, bindings).items():  # re-initialise the user's arrays
        if hasattr(value, "__cuda_array_interface__"):
            ctypes_copy(arrays[key].address, value.address, value.get().nbytes)
    runner.reset()
    third = runner.run()
    assert third.launches == 6 and np.array_equal(back(arrays)["x"], final)


def test_max_steps_exact_and_truncation_then_continue(gpu):
    bindings = spread_bindings(1000)
    expected_333, _ = reference_run(spread_oscillator, bindings, 333)
    expected_all, steps_all = reference_run(spread_oscillator, bindings, 5000)
    arrays = to_gpu(gpu, bindings)
    runner = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=333,
                              steps_per_launch=50, **arrays)
    report = runner.run()
    assert report.truncated and report.steps == 333 and report.launches == 7
    assert np.array_equal(back(arrays)["x"], expected_333["x"])
    runner.max_steps = 340  # a run that starts 7 steps short of its limit takes exactly 7
    expected_340, _ = reference_run(spread_oscillator, bindings, 340)
    assert runner.run().steps == 7 and runner.steps == 340
    assert np.array_equal(back(arrays)["x"], expected_340["x"])
    runner.max_steps = 5000
    rest = runner.run()
    assert not rest.truncated and runner.steps == steps_all
    assert np.array_equal(back(arrays)["x"], expected_all["x"])


def test_eager_loop_gives_the_same_bits(gpu):
    bindings = spread_bindings(800)
    expected, steps = reference_run(spread_oscillator, bindings, 2000)
    arrays = to_gpu(gpu, bindings)
    report = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=2000,
                              steps_per_launch=1, eager=True, **arrays).run()
    assert report.mode == "host-loop" and report.launches == steps and gpu.graph_launches == 0
    assert np.array_equal(back(arrays)["x"], expected["x"])


def test_graph_pipeline_replays_a_launch(gpu):
    python_layer_only(gpu)
    from eagle.cuda import Launcher, Module

    compile_source = backend_for("cuda").compiler  # the emulated GPU's
    from eagle.pipeline import GraphPipeline

    source = ('extern "C" __global__ void add_one(double* x, long long n) {\n'
              '    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n'
              '    if (i < n) x[i] += 1.0;\n}\n')
    add_one = Launcher(Module(compile_source(source)).function("add_one"),
                       ["double*", "long long"], block=128)
    x = device_array(gpu, np.zeros(1000))
    GraphPipeline().add(lambda: add_one.launch(8, x, 1000)).build().launch(n=5)
    assert np.all(x.get() == 5.0)


def test_repeat_while_loops_on_the_emulated_device(gpu):
    python_layer_only(gpu)
    from eagle.cuda import Launcher, Module

    compile_source = backend_for("cuda").compiler  # the emulated GPU's

    source = ('extern "C" __global__ void countdown(long long* left, double* total) {\n'
              '    total[0] += 1.0; left[0] -= 1;\n}\n')
    countdown = Launcher(Module(compile_source(source)).function("countdown"),
                         ["long long*", "double*"], block=1)
    left, total = device_array(gpu, np.array([5])), device_array(gpu, np.zeros(1))
    assert eagle.repeat_while(left, lambda: countdown.launch(1, left, total)) == 5
    assert total.get()[0] == 5.0 and left.get()[0] == 0
    ctypes_copy(left.address, np.array([10]).ctypes.data, 8)
    assert eagle.repeat_while(left, lambda: countdown.launch(1, left, total),
                              max_iterations=3) == 3
    assert left.get()[0] == 7


def test_graph_composer_of_two_runners_equals_running_them_alone(gpu):
    from eagle.compose import GraphComposer

    a, b = spread_bindings(700), spread_bindings(900, k=500)
    expected_a, steps_a = reference_run(spread_oscillator, a, 3000)
    expected_b, steps_b = reference_run(spread_oscillator, b, 3000)
    arrays = [to_gpu(gpu, a), to_gpu(gpu, b)]
    runners = [eagle.until_done(eagle.deploy(spread_oscillator), max_steps=3000, **s)
               for s in arrays]
    composer = GraphComposer()
    for runner in runners:
        composer.add(runner)
    composer.build().launch(1)
    for runner, s, expected, steps in zip(runners, arrays, (expected_a, expected_b),
                                          (steps_a, steps_b), strict=True):
        runner.sync_from_device()
        assert runner.steps == steps and runner.live == 0
        assert np.array_equal(back(s)["x"], expected["x"])


def test_spec_gravity_cell_on_the_emulated_gpu(gpu, monkeypatch):
    """The spec's LoadedVector cells: the artifact's PTX cannot run on the host, so the module
    loaded is the CUDA source the same hawk kernel generates (its sidecar's ``source_sha256``
    is checked to match); everything else is the artifact path: the sidecar's argument list,
    the bindings, the pipeline's capture and replays, accumulate."""
    import hashlib
    import importlib.util
    import json
    from pathlib import Path

    import eagle.loaded
    from eagle.cuda.emit import emit_cuda
    from eagle.pipeline import GraphPipeline

    fixtures = Path(__file__).resolve().parent.parent / "docs" / "guide" / "_fixtures"
    spec = importlib.util.spec_from_file_location("gravity_source", fixtures / "gravity.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    source = emit_cuda(module.gravity.specialize({}))
    sidecar = json.loads((fixtures / "gravity.json").read_text())
    assert hashlib.sha256(source.encode()).hexdigest() == sidecar["source_sha256"]
    import eagle.cuda.nvrtc as nvrtc

    if isinstance(gpu, NativeDevice):  # the C++ LoadedVector loads the PTX through the
        import shutil  # stand-in's JIT, which runs the host build it finds by the PTX's digest

        from eagle.cuda.hostbuild import write_host_build

        for suffix in (".ptx", ".json"):
            shutil.copy(fixtures / f"gravity{suffix}", gpu.folder / f"gravity{suffix}")
        write_host_build(module.gravity.specialize({}), gpu.folder / "gravity.ptx")
        force = eagle.loaded.LoadedVector(gpu.folder / "gravity.ptx")
    else:
        monkeypatch.setattr(nvrtc, "ptx_to_cubin", lambda ptx, arch: source.encode() + b"\0")
        force = eagle.loaded.LoadedVector(fixtures / "gravity.ptx")

    MU = 3.986004418e5
    N = 1024
    rng = np.random.default_rng(2)
    host_position = rng.uniform(7.0e3, 4.2e4, size=(3, N))
    position = device_array(gpu, host_position)
    out = device_array(gpu, np.zeros((3, N)))
    terminated = device_array(gpu, np.zeros(N, dtype=bool))
    pipe = GraphPipeline()
    pipe.add(lambda: force.launch(out=out, position=position, mu=MU, terminated=terminated))
    pipe.build()
    replays = 5
    pipe.launch(n=replays)
    r = np.sqrt((host_position ** 2).sum(axis=0))
    expected_once = -MU * host_position / r**3
    rel_err = np.max(np.abs(out.get() - replays * expected_once)
                     / np.abs(replays * expected_once))
    assert rel_err < 1e-14, rel_err


def test_progress_on_the_emulated_gpu_reads_the_device_count(gpu, capsys):
    bindings = spread_bindings(1000)
    expected, _ = reference_run(spread_oscillator, bindings, 2000)
    arrays = to_gpu(gpu, bindings)
    runner = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=2000, **arrays)
    report = runner.run(progress=True)
    assert report.done == 1000 and "1000/1000" in capsys.readouterr().err
    assert runner.graph_loop().live_now() == 0  # what the decide kernel wrote to host memory
    assert np.array_equal(back(arrays)["x"], expected["x"])


@pytest.mark.slow
def test_a_native_run_stays_native_while_threads_set_eagle_cuda_native(tmp_path_factory):
    """The door is chosen once, never read from ``os.environ`` at each call: a runner and an
    array made through the native door run, clear and copy back through it while
    ``EAGLE_CUDA_NATIVE`` is set to ``0``, unset and set again under them: once before they are
    made, then from another thread, which also adds and removes other variables all along (a
    ``setenv`` moves the C environment while the stand-in and the native layer run). Read at
    each call, the door changed mid-operation: the Python layer was asked to compile, fill and
    copy for memory and runs the native layer had made."""
    from native_door import opened

    bindings = spread_bindings(600)
    expected, steps = reference_run(spread_oscillator, bindings, 4000)
    with opened(tmp_path_factory.mktemp("door")) as device, pytest.MonkeyPatch.context() as env:
        env.setenv("EAGLE_CUDA_NATIVE", "0")  # as another thread may, at any moment
        arrays = to_gpu(device, bindings)
        runner = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=4000,
                                  steps_per_launch=40, **arrays)
        backend = backend_for("cuda:0")
        filled = backend.full((600,), 2.5, np.float64, "cuda:0")
        stop, flips = threading.Event(), [0]

        def churn():
            while not stop.is_set() or flips[0] < 200:
                names = [f"EAGLE_DOOR_STRESS_{flips[0]}_{k}" for k in range(16)]
                for name in names:
                    os.environ[name] = "x" * 64
                os.environ["EAGLE_CUDA_NATIVE"] = ("0", "1")[flips[0] % 2]
                for name in names:
                    del os.environ[name]
                os.environ.pop("EAGLE_CUDA_NATIVE", None)
                flips[0] += 1

        thread = threading.Thread(target=churn)
        thread.start()
        try:
            runner.max_steps = steps // 2
            with pytest.warns(eagle.TruncationWarning):
                runner.run()
            runner.max_steps = 4000
            report = runner.run()
            results = back(arrays)
            backend.clear(filled)
            cleared = backend.to_host(filled)
        finally:
            stop.set()
            thread.join()
    assert not report.truncated and runner.steps == steps
    assert device.graph_launches >= 2  # both runs were the stand-in's
    assert np.array_equal(results["x"], expected["x"]) and not cleared.any()
