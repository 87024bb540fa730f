"""eagle's GPU code paths run against a stand-in driver (``fake_driver``) on a machine without
a GPU: every driver call is checked against cuda.bindings' own argument rules, and the calls
each path makes are checked. Numbers are not computed here; tests/test_gpu.py checks those on a
real device. The runner's cases run through both doors (``native_door``): the Python GPU layer
over ``fake_driver``, and ``EAGLE_CUDA_NATIVE=1``, the native layer over the stand-in libcuda
(the slow tier); a case that cannot apply to the native door says why.
Skipped where a real GPU is present (the real tests run instead)."""

from __future__ import annotations

import numpy as np
import pytest

import eagle
from kernels import falling, oscillator

pytest.importorskip("cuda.bindings.driver")
from eagle.cuda import driver as driver_module  # noqa: E402

if driver_module.is_available():
    pytest.skip("a real GPU is present: tests/test_gpu.py runs instead", allow_module_level=True)

from fake_driver import FakeDriver  # noqa: E402
from native_door import (  # noqa: E402
    DOORS,
    NativeDevice,
    bindings_door_only,
    device_array,
    door_opened,
    forget,
)

#: why the Python layer's own objects cannot be checked through the native door
PYTHON_LAYER = ("eagle.cuda.Module, Launcher, CudaKernel and device_info are the cuda.bindings "
                "door's; the native door's pipelines, composers and repeat_while run over "
                "LoadedVector in test_native and test_gpu_emulated")


@pytest.fixture(params=DOORS)
def fake(request, tmp_path_factory):
    """The stand-in driver behind the door the test runs through (``native_door``)."""
    with door_opened(request.param, tmp_path_factory.mktemp("door"), FakeDriver()) as driver:
        yield driver


def full(driver, shape, dtype=np.float64, fill=0):
    return device_array(driver, np.full(shape, fill, dtype=dtype))


def spec_bindings(driver, n=1000):
    return dict(x=full(driver, n, fill=1.0), v=full(driver, n), t=full(driver, n),
                omega=full(driver, n, fill=2.0), t_end=1.0, dt=1e-3)


def test_the_fake_is_a_gpu(fake):
    bindings_door_only(fake, PYTHON_LAYER)
    info = eagle.cuda.device_info(0)
    assert eagle.cuda.is_available() and info.arch == "sm_90" and info.supports_while_nodes


def test_until_done_records_one_while_graph_and_launches_it(fake):
    runner = eagle.until_done(eagle.deploy(oscillator), max_steps=100, **spec_bindings(fake))
    native = isinstance(fake, NativeDevice)
    assert runner.device == "cuda:0"
    # compiled (real NVRTC, or a host build through the native door) and loaded in until_done
    assert ("cuModuleLoadDataEx" if native else "cuModuleLoadData") in fake.calls
    forget(fake)
    report = runner.run()
    assert report.mode == "graph-while" and report.build_s > 0 and fake.graph_launches == 1
    order = [c for c in fake.calls if c in ("cuGraphConditionalHandleCreate", "cuGraphAddNode",
                                             "cuGraphAddKernelNode", "cuGraphInstantiate",
                                             "cuGraphInstantiateWithFlags", "cuGraphUpload",
                                             "cuGraphLaunch")]
    # (the C++ layer instantiates with the flags form and launches without a separate upload)
    assert order == ["cuGraphConditionalHandleCreate", "cuGraphAddNode", "cuGraphAddKernelNode",
                     "cuGraphAddKernelNode"] + (
        ["cuGraphInstantiateWithFlags", "cuGraphLaunch"] if native
        else ["cuGraphInstantiate", "cuGraphUpload", "cuGraphLaunch"])
    runner.max_steps = 200  # (the native door's stand-in computes: its first run took 100)
    assert runner.run().build_s == 0 and fake.graph_launches == 2  # replayed, not rebuilt
    runner.reset()
    assert "cuMemsetD8" in fake.calls


def test_eager_loop_launches_step_and_decide_and_reads_back(fake):
    runner = eagle.until_done(eagle.deploy(oscillator), max_steps=100, steps_per_launch=1,
                              eager=True, **spec_bindings(fake))
    report = runner.run()
    # a step and a decide per round trip: one round trip on the fake driver, whose kernels
    # compute nothing; all 100 on the native door's stand-in, which runs them
    rounds = 100 if isinstance(fake, NativeDevice) else 1
    assert report.mode == "host-loop" and fake.launches == 2 * rounds
    assert fake.graph_launches == 0
    assert "cuMemcpyDtoHAsync" in fake.calls


def test_vector_kernels_and_float32_bind_and_build(fake):
    n = 300
    runner = eagle.until_done(eagle.deploy(falling, "gpu"), max_steps=10,
                              position=full(fake, (3, n), fill=1.5),
                              velocity=full(fake, (3, n)), mu=1.0, dt=0.01, r_min=0.1)
    runner.run(progress=True)
    assert fake.graph_launches == 1
    single = {k: (full(fake, 100, np.float32, 1.0) if k != "t_end" and k != "dt" else v)
              for k, v in spec_bindings(fake, 100).items()}
    eagle.until_done(eagle.deploy(oscillator), max_steps=10, **single).run()


def test_graph_pipeline_and_its_capture_rules(fake):
    bindings_door_only(fake, PYTHON_LAYER)
    from eagle.cuda import DeviceBuffer, Launcher
    from eagle.pipeline import GraphPipeline

    function = eagle.cuda.Module(b"\0" * 8).function("add_one")
    add_one = Launcher(function, ["double*", "long long"], block=128)
    x = full(fake, 1000)
    pipe = GraphPipeline().add(lambda: add_one.launch(8, x, 1000)).build()
    pipe.launch(n=5)
    assert fake.graph_launches == 5
    with pytest.raises(eagle.CaptureError, match="step 1 .*allocate"):
        GraphPipeline().add(lambda: add_one.launch(8, x, 1000)).add(
            lambda: DeviceBuffer(64)).build()
    stream = eagle.cuda.current_stream()
    with pytest.raises(eagle.CaptureError, match="step 0 .*synchronise"):
        GraphPipeline().add(lambda: eagle.cuda.current_stream().synchronize()).build()
    with pytest.raises(eagle.CaptureError, match="issued 2 operations"):
        GraphPipeline().add(lambda: (add_one.launch(8, x, 1000),
                                     add_one.launch(8, x, 1000))).build()
    with pytest.raises(eagle.CaptureError, match="issued 0 operations"):
        GraphPipeline().add(lambda: None).build()
    stream.synchronize()  # the stream is usable after every failed capture
    GraphPipeline().add(lambda: add_one.launch(8, x, 1000)).build().launch(1)


def test_loaded_vector_links_the_fixture_and_launches_in_a_pipeline(fake):
    bindings_door_only(fake, "the native door's LoadedVector hands PTX to the driver's JIT, "
                             "not to nvJitLink; the spec cell over it is in test_native and "
                             "test_gpu_emulated")
    from pathlib import Path

    from eagle.loaded import LoadedVector
    from eagle.pipeline import GraphPipeline

    fixtures = Path(__file__).resolve().parent.parent / "docs" / "guide" / "_fixtures"
    force = LoadedVector(fixtures / "gravity.ptx")  # real nvJitLink: PTX -> sm_90 cubin
    n = 64
    position, out = full(fake, (3, n), fill=1.0), full(fake, (3, n))
    terminated = full(fake, n, np.bool_)
    pipe = GraphPipeline()
    pipe.add(lambda: force.launch(out=out, position=position, mu=2.0, terminated=terminated))
    pipe.build().launch(n=5)
    with pytest.raises(eagle.BindingTypeError, match="missing a binding for 'mu'"):
        force.launch(out=out, position=position)


def test_repeat_while_on_the_gpu_records_the_body_once(fake):
    bindings_door_only(fake, PYTHON_LAYER)
    from eagle.cuda import Launcher

    function = eagle.cuda.Module(b"\0" * 8).function("countdown")
    countdown = Launcher(function, ["long long*"], block=1)
    left = full(fake, 1, np.int64, 5)
    calls = []

    def body():
        calls.append(1)
        countdown.launch(1, left)

    eagle.repeat_while(left, body, max_iterations=3)
    assert calls == [1] and fake.graph_launches == 1
    assert "cuGraphAddChildGraphNode" in fake.calls


def test_graph_composer_forks_and_joins(fake):
    bindings_door_only(fake, PYTHON_LAYER)
    from eagle.compose import GraphComposer
    from eagle.cuda import Launcher
    from eagle.pipeline import GraphPipeline

    runners = [eagle.until_done(eagle.deploy(oscillator), max_steps=100,
                                **spec_bindings(fake)) for _ in range(2)]
    add_one = Launcher(eagle.cuda.Module(b"\0" * 8).function("add_one"),
                       ["double*", "long long"])
    x = full(fake, 10)
    pipe = GraphPipeline().add(lambda: add_one.launch(1, x, 10))
    composer = GraphComposer().add(runners[0]).add(runners[1]).add(pipe).build()
    composer.launch(2)
    assert fake.graph_launches == 2
    assert fake.calls.count("cuStreamWaitEvent") == 6  # 3 forks and 3 joins
    assert fake.calls.count("cuStreamUpdateCaptureDependencies") == 2
    for runner in runners:
        runner.sync_from_device()


def test_a_kernel_that_spills_much_at_two_blocks_per_sm_is_built_for_one(fake):
    """Two blocks per SM cap a step kernel at 128 registers; a wide model then spills so much
    that one block per SM ran faster on an H200 (benchmarks/gpu_launch_bounds.py). The backend
    asks the loaded kernel for its local memory and rebuilds it at one block past the limit."""
    bindings_door_only(fake, "CudaKernel is the cuda.bindings door's; the native door's "
                             "_native.Kernel builds at two blocks per SM and does not yet ask "
                             "for the local memory (a speed rule, not a result)")
    from eagle.cuda.backend import CudaKernel
    from eagle.cuda.emit import LOCAL_BYTES_FOR_ONE_BLOCK

    program = oscillator.specialize({})
    lean = CudaKernel(program, 0, False)
    assert lean.min_blocks == 2 and "__launch_bounds__(256, 2)" in lean.source
    assert fake.calls.count("cuModuleLoadData") == 1
    fake.local_bytes = lambda function: LOCAL_BYTES_FOR_ONE_BLOCK  # at the limit: kept
    assert CudaKernel(program, 0, False).min_blocks == 2
    fake.calls.clear()
    fake.local_bytes = lambda function: LOCAL_BYTES_FOR_ONE_BLOCK + 8
    wide = CudaKernel(program, 0, False)
    assert wide.min_blocks == 1 and "__launch_bounds__(256, 1)" in wide.source
    assert fake.calls.count("cuModuleLoadData") == 2  # built at two blocks, then at one
