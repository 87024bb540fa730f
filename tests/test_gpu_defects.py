"""Issue 15's defects of the GPU path, each shown without a GPU: with real NVRTC/nvJitLink
(PTX ISA), the stand-in driver (``fake_driver``: streams, contexts, pinned memory), the host
run of the generated CUDA (``host_cuda``: atomics, launch sizes) and pyproject (the extras).
The cases on the stand-in driver run through both doors (``native_door``): the Python GPU
layer over ``fake_driver``, and ``EAGLE_CUDA_NATIVE=1``, the native layer over the stand-in
libcuda (the slow tier); a case that cannot apply to the native door says why.
Skipped where a real GPU is present (tests/test_gpu.py and scripts/gpu-check run there)."""

from __future__ import annotations

import gc
import hashlib
import json
import re
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import numpy as np
import pytest

import eagle
from differential import assert_bitwise_equal, reference_run
from kernels import accumulate_force, oscillator, spread_oscillator

pytest.importorskip("cuda.bindings.nvjitlink")
from eagle.cuda import driver as driver_module  # noqa: E402
from eagle.cuda import nvrtc  # noqa: E402
from eagle.cuda.artifact import ArtifactError, read_artifact, write_artifact  # noqa: E402

if driver_module.is_available():
    pytest.skip("a real GPU is present: tests/test_gpu.py runs instead", allow_module_level=True)

from fake_driver import FakeDriver, GpuArray  # noqa: E402
from native_door import (  # noqa: E402
    DOORS,
    NativeDevice,
    bindings_door_only,
    control_of,
    device_array,
    door_opened,
    forget,
    loop_stream,
    progress_address,
    user_stream,
)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "docs" / "guide" / "_fixtures"
NON_BLOCKING = 1  # CU_STREAM_NON_BLOCKING


@pytest.fixture(params=DOORS)
def fake(request, tmp_path_factory):
    """The stand-in driver behind the door the test runs through (``native_door``)."""
    with door_opened(request.param, tmp_path_factory.mktemp("door"), FakeDriver()) as driver:
        yield driver


#: why the Python layer's own objects cannot be checked through the native door
PYTHON_LAYER = ("eagle.cuda.Module, Launcher and DeviceBuffer are the cuda.bindings door's; "
                "the native door's are checked by test_native (GraphPipeline, GraphComposer and "
                "repeat_while over LoadedVector) and test_native_threads (releases from other "
                "threads)")


def spec_bindings(driver, n=1000, stream=None):
    arrays = dict(x=device_array(driver, np.ones(n)), v=device_array(driver, np.zeros(n)),
                  t=device_array(driver, np.zeros(n)),
                  omega=device_array(driver, np.full(n, 2.0)))
    if stream is not None:
        arrays["x"].__cuda_array_interface__["stream"] = stream
    return dict(arrays, t_end=1.0, dt=1e-3)


def redeclare(path: Path, isa: str) -> None:
    """Make ``path`` a consistent artifact declaring PTX ISA ``isa`` (what another NVRTC
    would have written): the ``.version`` line, the sidecar's ``ptx_isa`` and its SHA-256."""
    data = re.sub(rb"^\.version \S+", b".version " + isa.encode(), path.read_bytes(), flags=re.M)
    path.write_bytes(data)
    sidecar = path.with_suffix(".json")
    meta = json.loads(sidecar.read_text())
    meta.update(ptx_isa=isa, sha256=hashlib.sha256(data).hexdigest())
    sidecar.write_text(json.dumps(meta))


# 1. PTX ISA: artifacts for the oldest supported nvJitLink, refused with advice otherwise

def test_an_artifact_newer_than_the_local_nvjitlink_is_refused_with_what_to_do(tmp_path):
    from eagle.loaded import LoadedVector

    path, _ = write_artifact(accumulate_force.specialize({}), "ptx", tmp_path / "force.ptx",
                             "sm_80")
    redeclare(path, "9.9")  # a PTX ISA no nvJitLink here knows
    read_artifact(path)  # a well-formed artifact ...
    with pytest.raises(ArtifactError) as refused:  # ... that this toolchain cannot link
        LoadedVector(path)
    message = str(refused.value)
    for words in ("PTX ISA 9.9", "nvJitLink", "--ptx-isa", "cubin", "older toolchains"):
        assert words in message, message


def test_the_isa_check_follows_the_local_nvjitlink(tmp_path, monkeypatch):
    from eagle.loaded import LoadedVector

    path, _ = write_artifact(accumulate_force.specialize({}), "ptx", tmp_path / "force.ptx",
                             "sm_80")
    monkeypatch.setattr(nvrtc, "nvjitlink_version", lambda: (13, 0))  # the H200 machine's
    redeclare(path, "9.5")  # what NVRTC 13.5 writes
    with pytest.raises(ArtifactError, match="PTX ISA 9.5 .*nvJitLink 13.0 reads PTX ISA 9.0 at "
                                            "most.*--ptx-isa 9.0"):
        LoadedVector(path)
    redeclare(path, "9.0")  # readable there: refused next only for want of a GPU
    with pytest.raises(eagle.BackendUnavailable):
        LoadedVector(path)
    monkeypatch.setattr(nvrtc, "nvjitlink_version", lambda: (13, 5))
    redeclare(path, "9.5")
    with pytest.raises(eagle.BackendUnavailable):
        LoadedVector(path)


def test_a_sidecar_that_misstates_the_isa_is_refused(tmp_path):
    from eagle.loaded import LoadedVector

    path, _ = write_artifact(accumulate_force.specialize({}), "ptx", tmp_path / "force.ptx",
                             "sm_80")
    sidecar = path.with_suffix(".json")
    meta = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps(dict(meta, ptx_isa="7.0")))
    with pytest.raises(ArtifactError, match="declares PTX ISA .* sidecar says 7.0"):
        LoadedVector(path)


def test_artifacts_are_written_at_the_oldest_supported_isa_by_default(tmp_path):
    path, meta_path = write_artifact(accumulate_force.specialize({}), "ptx",
                                     tmp_path / "force.ptx", "sm_80")
    meta = json.loads(meta_path.read_text())
    assert nvrtc.ptx_isa_of(path.read_bytes()) == meta["ptx_isa"] == nvrtc.OLDEST_PTX_ISA
    assert nvrtc.readable_ptx_isa(meta["ptx_isa"], (13, 0))
    native, _ = write_artifact(accumulate_force.specialize({}), "ptx", tmp_path / "n.ptx",
                               "sm_80", ptx_isa="native")
    assert nvrtc.ptx_isa_of(native.read_bytes()) == meta["ptx_isa_native"]


def test_a_lower_isa_is_proven_by_linking_it_here(tmp_path):
    program = accumulate_force.specialize({})
    path, meta_path = write_artifact(program, "ptx", tmp_path / "f.ptx", "sm_80", ptx_isa="8.0")
    assert nvrtc.ptx_isa_of(path.read_bytes()) == "8.0"
    assert json.loads(meta_path.read_text())["ptx_isa"] == "8.0"
    assert nvrtc.ptx_to_cubin(path.read_bytes(), "sm_80")  # links
    with pytest.raises(eagle.CompileFailed, match="(?s)cannot be declared as ISA 6.0.*--ptx-isa"):
        write_artifact(program, "ptx", tmp_path / "g.ptx", "sm_80", ptx_isa="6.0")  # < sm_80's
    with pytest.raises(ValueError, match="newer than the PTX ISA"):
        write_artifact(program, "ptx", tmp_path / "h.ptx", "sm_80", ptx_isa="99.0")
    with pytest.raises(ValueError, match="look like '9.0'"):
        write_artifact(program, "ptx", tmp_path / "i.ptx", "sm_80", ptx_isa="nine")
    with pytest.raises(ValueError, match="--target ptx only"):
        write_artifact(program, "cubin", tmp_path / "j.cubin", "sm_80", ptx_isa="8.0")


def test_compile_command_takes_a_ptx_isa(tmp_path):
    out = tmp_path / "gravity.ptx"
    done = subprocess.run([sys.executable, "-m", "eagle", "compile",
                           f"{FIXTURES / 'gravity.py'}:gravity", "--target", "ptx", "--arch",
                           "sm_80", "--ptx-isa", "7.8", "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert nvrtc.ptx_isa_of(out.read_bytes()) == "7.8"
    bad = subprocess.run([sys.executable, "-m", "eagle", "compile",
                          f"{FIXTURES / 'gravity.py'}:gravity", "--target", "cubin",
                          "--ptx-isa", "7.8", "-o", str(tmp_path / "g.cubin")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--target ptx only" in bad.stderr


def test_the_spec_fixture_links_with_the_oldest_supported_nvjitlink():
    """The spec's cell loads ../_fixtures/gravity.ptx on the device machine (nvJitLink 13.0)."""
    isa = nvrtc.ptx_isa_of((FIXTURES / "gravity.ptx").read_bytes())
    assert nvrtc.readable_ptx_isa(isa, (13, 0)), isa
    assert not nvrtc.readable_ptx_isa("9.5", (13, 0))  # the ISA the old fixture had


# 2. producers' streams

def test_a_cai_v3_producer_stream_is_waited_on_before_the_run(fake):
    producer = user_stream(fake, 0xBEEF)
    runner = eagle.until_done(eagle.deploy(oscillator), max_steps=100,
                              **spec_bindings(fake, stream=producer))
    forget(fake)
    runner.run()
    assert (loop_stream(runner), producer) in fake.waits  # an event on the producer's, a wait
    eager = eagle.until_done(eagle.deploy(oscillator), max_steps=100, eager=True,
                             **spec_bindings(fake, stream=2))  # the per-thread default stream
    forget(fake)
    eager.run()
    assert (loop_stream(eager), 2) in fake.waits


def test_arrays_without_a_stream_add_no_wait(fake):
    runner = eagle.until_done(eagle.deploy(oscillator), max_steps=100, **spec_bindings(fake))
    forget(fake)
    runner.run()
    assert fake.waits == []


def gravity_artifact(driver):
    """The spec's gravity artifact for ``LoadedVector``: the fixture (nvJitLink links it for
    the fake driver), or, through the native door, a copy beside the host build the stand-in
    runs for it."""
    if not isinstance(driver, NativeDevice):
        return FIXTURES / "gravity.ptx"
    import importlib.util
    import shutil

    from eagle.cuda.hostbuild import write_host_build

    for suffix in (".ptx", ".json"):
        shutil.copy(FIXTURES / f"gravity{suffix}", driver.folder / f"gravity{suffix}")
    spec = importlib.util.spec_from_file_location("gravity_source", FIXTURES / "gravity.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    write_host_build(module.gravity.specialize({}), driver.folder / "gravity.ptx")
    return driver.folder / "gravity.ptx"


def test_a_loaded_vector_waits_on_a_producer_stream_except_inside_a_capture(fake):
    from eagle.loaded import LoadedVector
    from eagle.pipeline import GraphPipeline

    if isinstance(fake, NativeDevice):
        from eagle.cuda._native import current_stream
    else:
        from eagle.cuda import current_stream
    force = LoadedVector(gravity_artifact(fake))
    producer, n = user_stream(fake, 0xBEEF), 64
    position = device_array(fake, np.ones((3, n)))
    position.__cuda_array_interface__["stream"] = producer
    out, terminated = device_array(fake, np.zeros((3, n))), device_array(fake, np.zeros(n, bool))

    def step():
        force.launch(out=out, position=position, mu=2.0, terminated=terminated)

    forget(fake)
    step()
    assert fake.waits == [(int(current_stream().handle), producer)]
    forget(fake)
    GraphPipeline().add(step).build()  # a capture cannot wait on outside work
    assert fake.waits == []


def test_a_cai_stream_of_zero_is_refused_at_bind_time(fake):
    with pytest.raises(TypeError, match="stream 0; CAI v3 allows None, 1, 2"):
        eagle.until_done(eagle.deploy(oscillator), max_steps=10,
                         **spec_bindings(fake, stream=0))


def test_dlpack_producers_are_asked_for_the_legacy_stream():
    from eagle.cuda.memory import DLPACK_STREAM, _OnLegacyStream

    class Producer:
        asked = None

        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, stream=None, **keywords):
            Producer.asked = (stream, keywords)
            return "capsule"

    wrapped = _OnLegacyStream(Producer())
    assert wrapped.__dlpack__(stream=12345, max_version=(1, 0)) == "capsule"
    assert Producer.asked == (DLPACK_STREAM, {"max_version": (1, 0)}) and DLPACK_STREAM == 1
    assert wrapped.__dlpack_device__() == (2, 0)


# 3. captures on non-blocking streams, replays on blocking ones

def test_pipelines_composers_and_repeat_while_capture_on_non_blocking_streams(fake):
    bindings_door_only(fake, PYTHON_LAYER)
    from eagle.compose import GraphComposer
    from eagle.cuda import Launcher, Module
    from eagle.pipeline import GraphPipeline

    add_one = Launcher(Module(b"\0" * 8).function("add_one"), ["double*", "long long"])
    x = GpuArray(fake, np.zeros(10))
    pipe = GraphPipeline().add(lambda: add_one.launch(1, x, 10)).build()
    runner = eagle.until_done(eagle.deploy(oscillator), max_steps=100, **spec_bindings(fake))
    GraphComposer().add(pipe).add(runner).build().launch(1)
    left = GpuArray(fake, np.array([3]))
    eagle.repeat_while(left, lambda: add_one.launch(1, x, 10), max_iterations=2)
    pipe.launch(1)
    assert len(fake.captured_streams) == 3
    assert all(fake.stream_flags[s] == NON_BLOCKING for s in fake.captured_streams)
    assert len(fake.graph_launch_streams) == 3
    assert all(fake.stream_flags[s] == 0 for s in fake.graph_launch_streams)
    forked = [s for s, flags in fake.stream_flags.items() if flags == NON_BLOCKING]
    assert len(forked) == 3 + 2  # three captures' own streams, the composer's two pieces


# 4. the context made current by every operation, on every thread

def on_another_thread(function):
    failure = []

    def body():
        try:
            function()
        except BaseException as exc:  # re-raised on the test's thread
            failure.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


def test_a_runner_built_on_one_thread_runs_on_another(fake):
    runner = eagle.until_done(eagle.deploy(oscillator), max_steps=100, **spec_bindings(fake))
    eager = eagle.until_done(eagle.deploy(oscillator), max_steps=100, eager=True,
                             **spec_bindings(fake))
    reports = []
    on_another_thread(lambda: reports.append(runner.run()))
    on_another_thread(lambda: reports.append(eager.run()))
    on_another_thread(runner.sync_from_device)
    assert fake.context_errors == [] and len(reports) == 2 and fake.graph_launches == 1


def test_pipelines_and_composers_launch_from_another_thread(fake):
    bindings_door_only(fake, PYTHON_LAYER)
    from eagle.compose import GraphComposer
    from eagle.cuda import Launcher, Module
    from eagle.pipeline import GraphPipeline

    add_one = Launcher(Module(b"\0" * 8).function("add_one"), ["double*", "long long"])
    x = GpuArray(fake, np.zeros(10))
    pipe = GraphPipeline().add(lambda: add_one.launch(1, x, 10)).build()
    composer = GraphComposer().add(pipe).build()
    on_another_thread(lambda: (pipe.launch(2), pipe.synchronize()))
    on_another_thread(lambda: (composer.launch(1), composer.synchronize()))
    on_another_thread(lambda: add_one.launch(1, x, 10))
    assert fake.context_errors == [] and fake.graph_launches == 3


def test_a_finaliser_on_another_thread_frees_and_leaves_that_thread_as_it_was(fake):
    bindings_door_only(fake, PYTHON_LAYER)
    from eagle.cuda import DeviceBuffer

    buffers = [DeviceBuffer(64) for _ in range(3)]
    pointers = [b.ptr for b in buffers]
    stacks = []

    def drop():
        buffers.clear()
        gc.collect()
        stacks.append(list(fake._stack()))

    on_another_thread(drop)
    assert fake.context_errors == []
    assert not any(p in fake.memory for p in pointers)  # freed, none leaked
    assert stacks == [[]]  # the context was pushed for the call and popped again


# 5. progress only when asked

def test_no_pinned_memory_and_no_progress_writes_without_progress(fake):
    from eagle.cuda.emit import CONTROL_FIELDS

    runner = eagle.until_done(eagle.deploy(oscillator), max_steps=100, **spec_bindings(fake))
    runner.run()
    progress = CONTROL_FIELDS.index("progress")
    assert "cuMemHostAlloc" not in fake.calls
    assert control_of(runner)[progress] == 0
    runner.reset()
    runner.run(progress=True)
    assert fake.calls.count("cuMemHostAlloc") == 1
    assert control_of(runner)[progress] == progress_address(runner)
    runner.reset()
    runner.run()  # off again: the device is given no address to write to
    assert control_of(runner)[progress] == 0
    assert fake.calls.count("cuMemHostAlloc") == 1


# 6. same-address atomics, and 3. (speed) the launch schedule, on the host run of the CUDA

@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from host_cuda import compiler

    if compiler() is None:
        pytest.skip("no host C++ compiler to run the generated CUDA")
    return tmp_path_factory.mktemp("defects")


def host_kernel(kernel, bindings, folder):
    from eagle.bindings import bind
    from host_cuda import HostKernel

    bound = bind(kernel, bindings, "cpu")
    return HostKernel(kernel.specialize(bound.dtypes), folder), bound


def test_a_block_with_a_live_sample_issues_no_atomic_max(folder):
    """Blocks are one thread in the host run, so old code made one atomicMax per live sample
    per launch; now only a block whose samples all finished makes one."""
    from test_cpu_backend import oscillator_bindings

    n = 500
    kernel, bound = host_kernel(oscillator, oscillator_bindings(n), folder)
    adds0, maxes0 = kernel.atomics()
    control = kernel.run(bound.arrays, bound.uniforms, bound.flags, 10_000, 64)
    adds, maxes = kernel.atomics()
    launches = int(control[4])
    assert launches == 16 and control[3] == 1000  # 1000 steps in 16 launches of 64
    assert maxes - maxes0 == n  # each sample once: in the launch it finished in
    assert adds - adds0 == n * (launches - 1)  # the live count, per live block


def test_launch_sizes_double_while_the_device_is_full_and_hold_in_between(folder):
    """Sample i of spread-1000 needs about 1 + 999 i / 899 steps, so about 900 (1 - s / 1000)
    samples are live after s steps; the device here is full at 600 live samples."""
    from test_cpu_backend import spread_bindings

    bindings = spread_bindings(900, 1000)
    expected, expected_steps = reference_run(spread_oscillator, bindings, 5000)

    def run(**schedule):
        kernel, bound = host_kernel(spread_oscillator, spread_bindings(900, 1000), folder)
        control = kernel.run(bound.arrays, bound.uniforms, bound.flags, 5000, 16, **schedule)
        assert_bitwise_equal(dict(bound.arrays), {k: expected[k] for k in bound.arrays})
        assert control[3] == expected_steps == 1000  # the sizes never change the results
        return kernel.sizes

    # live after 16, 48, 112, 240 steps: ~886, ~857, ~800, ~684 >= 600 (full): doubling;
    # after 496: ~454, between spread (100) and full: held at 256 to the end
    assert run(grow_until=1024, full=600, spread=100) == [16, 32, 64, 128, 256, 256, 256]
    # with ~454 <= spread (500), nothing left to re-spread: doubling again
    assert run(grow_until=1024, full=600, spread=500) == [16, 32, 64, 128, 256, 512]
    assert run(grow_until=64, full=600, spread=500)[:6] == [16, 32, 64, 64, 64, 64]  # capped
    assert set(run()) == {16}  # grow_until 0: the size the user fixed


def test_the_gpu_runner_grows_from_sixteen_with_the_occupancy_it_was_given(fake):
    from eagle.cuda.backend import INITIAL_STEPS_PER_LAUNCH, MAX_STEPS_PER_LAUNCH
    from eagle.cuda.emit import CONTROL_FIELDS

    runner = eagle.until_done(eagle.deploy(oscillator), max_steps=100, **spec_bindings(fake))
    runner.run()
    control = control_of(runner)
    field = {name: control[k] for k, name in enumerate(CONTROL_FIELDS)}
    assert field["grow_until"] == MAX_STEPS_PER_LAUNCH and INITIAL_STEPS_PER_LAUNCH == 16
    assert field["full"] == 8 * 132 * 256 and field["spread"] == 132 * 256  # stand-in's SMs
    fixed = eagle.until_done(eagle.deploy(oscillator), max_steps=100, steps_per_launch=7,
                             **spec_bindings(fake))
    fixed.run()
    assert control_of(fixed)[CONTROL_FIELDS.index("grow_until")] == 0


# 7. install hints and the CuPy extra

def test_cupy_has_an_extra_and_hints_name_the_distribution():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert any(req.startswith("cupy-cuda13x") for req in extras["cupy"])
    wrong = [f"{path.relative_to(ROOT)}" for path in (ROOT / "src").rglob("*.py")
             if re.search(r"pip install '?eagle\[", path.read_text())]
    assert wrong == []
    from eagle.cuda.backend import CudaBackend

    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"eagle-hawk\[cupy\]"):
            CudaBackend().array_module()


def test_until_done_runs_on_the_users_stream(fake):
    torch_handle, core_handle = user_stream(fake, 0xCAFE), user_stream(fake, 0xF00D)

    class TorchLikeStream:  # what torch.cuda.Stream exposes
        cuda_stream = torch_handle

    class CudaCoreLikeStream:
        def __cuda_stream__(self):
            return (0, core_handle)

    for stream, handle in ((TorchLikeStream(), torch_handle), (CudaCoreLikeStream(), core_handle),
                           (2, 2)):
        forget(fake)
        runner = eagle.until_done(eagle.deploy(oscillator), max_steps=100, stream=stream,
                                  **spec_bindings(fake))
        runner.run()
        assert fake.graph_launch_streams == [handle]
    with pytest.raises(TypeError, match=r"until_done\(stream=...\) must be a CUDA stream"):
        eagle.until_done(eagle.deploy(oscillator), max_steps=10, stream="default",
                         **spec_bindings(fake))


def test_until_done_stream_on_the_cpu_is_refused():
    with pytest.raises(ValueError, match=r"stream=...\): the runner runs on cpu"):
        eagle.until_done(eagle.deploy(oscillator, "cpu"), max_steps=10, stream=1,
                         x=np.ones(4), v=np.zeros(4), t=np.zeros(4), omega=np.ones(4),
                         t_end=1.0, dt=1e-3)


# 8. the toolchain policy (issue 30): cubins for the device's own arch, the driver's major

def test_a_newer_minor_toolkit_loads_and_a_newer_major_is_refused_before_the_driver(fake):
    """NVRTC 13.5 (what CI installs) against a stand-in driver of CUDA 13.0 (the H200's):
    eagle compiles a cubin for the device's sm_XY and loads it; the same NVRTC against a
    CUDA 12.8 driver is refused by name, before the driver is handed a cubin it cannot load."""
    if isinstance(fake, NativeDevice):
        return newer_major_refused_by_the_native_door(fake)
    assert nvrtc.nvrtc_version()[0] == 13
    eagle.until_done(eagle.deploy(oscillator), max_steps=100, **spec_bindings(fake))
    assert fake.calls.count("cuModuleLoadData") == 1  # the 13.0 driver was given the cubin
    driver_module.device_info.cache_clear()
    fake._cuDriverGetVersion = lambda: (driver_module.driver().CUresult.CUDA_SUCCESS, 12080)
    loads = fake.calls.count("cuModuleLoadData")
    try:
        with pytest.raises(eagle.BackendUnavailable,
                           match=r"NVRTC 13\.\d+ writes cubins for CUDA 13 drivers, but this "
                                 r"machine's NVIDIA driver runs CUDA 12\.8: update the driver "
                                 r"\(CUDA 13 needs R580 or newer\)"):
            eagle.until_done(eagle.deploy(spread_oscillator), max_steps=100,
                             **spec_bindings(fake))
        assert fake.calls.count("cuModuleLoadData") == loads  # nothing reached the driver
    finally:
        driver_module.device_info.cache_clear()


def newer_major_refused_by_the_native_door(device):
    """Through the native door the kernels are host builds (a cubin cannot run on the
    stand-in), so only the refusal is checked there: with NVRTC as the compiler, an NVRTC of a
    newer major than the stand-in's CUDA 13.0 driver is refused by name, nothing loaded."""
    from unittest import mock

    from eagle.backend import registered
    from eagle.cuda.backend import CudaBackend

    with registered(CudaBackend()), mock.patch.object(nvrtc, "nvrtc_version", lambda: (14, 0)):
        forget(device)
        with pytest.raises(eagle.BackendUnavailable,
                           match=r"NVRTC 14\.0 writes cubins for CUDA 14 drivers, but this "
                                 r"machine's NVIDIA driver runs CUDA 13\.0: update the driver"):
            eagle.until_done(eagle.deploy(spread_oscillator), max_steps=100,
                             **spec_bindings(device))
        assert "cuModuleLoadDataEx" not in device.calls  # nothing reached the driver


def test_a_ptx_artifact_for_a_newer_major_nvjitlink_is_refused(fake, tmp_path, monkeypatch):
    bindings_door_only(fake, "the native door's LoadedVector hands PTX to the driver's JIT, "
                             "which refuses an ISA it cannot read itself (test_native); "
                             "nvJitLink is not used")
    from eagle.loaded import LoadedVector

    path, _ = write_artifact(accumulate_force.specialize({}), "ptx", tmp_path / "force.ptx",
                             "sm_80")
    LoadedVector(path)  # nvJitLink 13.x on the 13.0 stand-in: linked and loaded
    monkeypatch.setattr(nvrtc, "nvjitlink_version", lambda: (14, 0))
    with pytest.raises(eagle.BackendUnavailable, match=r"nvJitLink 14\.0 writes cubins for "
                                                       r"CUDA 14 drivers.*CUDA 13\.0"):
        LoadedVector(path)


def test_which_ptx_isa_a_toolchain_reads_is_eagles_own_table():
    """Not cuda-bindings' table, which 13.0.3 ends at 9.0: with it, nvJitLink 13.5 was said
    to refuse the PTX ISA 9.5 it writes (the exact-version job's first finding)."""
    assert nvrtc.readable_ptx_isa("9.5", (13, 5)) and not nvrtc.readable_ptx_isa("9.5", (13, 0))
    assert nvrtc.newest_readable_ptx_isa((13, 0)) == "9.0"
    assert nvrtc.newest_readable_ptx_isa((13, 5)) == "9.5"
    assert nvrtc.newest_readable_ptx_isa((12, 6)) == "8.5"
    assert not nvrtc.readable_ptx_isa("9.9", (13, 5))  # newer than the table: refused by all
    assert nvrtc.readable_ptx_isa("9.9", (13, 9))  # ... it lists; a newer linker decides


def test_the_cuda_extra_stays_within_one_cuda_major():
    """The policy's bounds: a CUDA 14 toolkit's cubins would not load on the CUDA 13 drivers
    the [cuda] extra is for."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    bounds = {re.split(r"[<>=]", req, maxsplit=1)[0]: req for req in extras["cuda"]}
    assert set(bounds) == {"cuda-bindings", "nvidia-cuda-nvrtc", "nvidia-nvjitlink"}
    for requirement in bounds.values():
        assert ">=13.0" in requirement and "<14" in requirement, requirement
