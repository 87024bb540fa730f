"""The CUDA layer's host-side logic, testable without a GPU: availability, argument packing,
GPU-array views and their binding checks, and GraphPipeline's rules before any capture."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import eagle
from eagle.bindings import bind
from eagle.cuda import launcher, memory
from eagle.cuda.driver import is_available, unavailable_reason
from eagle.pipeline import GraphPipeline
from kernels import oscillator


class FakeGpuArray:
    """Memory described by ``__cuda_array_interface__`` (never dereferenced here)."""

    def __init__(self, ptr, shape, typestr="<f8", strides=None, readonly=False):
        self.__cuda_array_interface__ = dict(data=(ptr, readonly), shape=shape, typestr=typestr,
                                             strides=strides, version=3)


def test_availability_has_a_reason_when_false():
    assert is_available() == (unavailable_reason() is None)
    if not is_available():
        assert unavailable_reason()
        with pytest.raises(eagle.BackendUnavailable, match="no usable CUDA device"):
            eagle.cuda.device_info(0)


def test_kernel_arguments_point_at_their_values():
    packed = launcher.pack(["long long", "ptr", "double", "float", "bool", "u64", "int"],
                           [7, FakeGpuArray(0x1000, (4,)), 2.5, 1.5, True, 2**63 + 1, -3])
    pointers = ctypes.cast(packed.address, ctypes.POINTER(ctypes.c_void_p))
    read = [ctypes.c_longlong, ctypes.c_uint64, ctypes.c_double, ctypes.c_float, ctypes.c_bool,
            ctypes.c_uint64, ctypes.c_int]
    values = [ctypes.cast(pointers[k], ctypes.POINTER(t)).contents.value
              for k, t in enumerate(read)]
    assert values == [7, 0x1000, 2.5, 1.5, True, 2**63 + 1, -3]


def test_kernel_arguments_check_their_count_and_pointers():
    with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
        launcher.pack(["ptr", "double"], [0x10])
    with pytest.raises(TypeError, match="pointer argument"):
        launcher.pack(["ptr"], ["not an array"])


def test_device_array_view_reads_the_interface():
    a = memory.as_device_array(FakeGpuArray(0x1000, (3, 10)), "cuda:0")
    assert a.shape == (3, 10) and a.dtype == np.float64 and a.strides == (80, 8)
    assert a.flags.c_contiguous and a.flags.writeable
    assert a.offset((2,)) == 0x1000 + 160 and a.offset(()) == 0x1000
    strided = memory.as_device_array(FakeGpuArray(0x1000, (10,), strides=(16,)), "cuda:0")
    assert not strided.flags.c_contiguous
    b = memory.as_device_array(FakeGpuArray(0x1000 + 8 * 29, (5,)), "cuda:0")
    c = memory.as_device_array(FakeGpuArray(0x1000 + 8 * 30, (5,)), "cuda:0")
    assert a.overlaps(b) and not a.overlaps(c)


def gpu_bindings(n=100, **changes):
    base = 0x10_0000
    arrays = dict(x=FakeGpuArray(base, (n,)), v=FakeGpuArray(base + 8 * n, (n,)),
                  t=FakeGpuArray(base + 16 * n, (n,)), omega=FakeGpuArray(base + 24 * n, (n,)),
                  terminated=FakeGpuArray(base + 32 * n, (n,), typestr="|b1"),
                  t_end=1.0, dt=1e-3)
    arrays.update(changes)
    return arrays


def test_gpu_arrays_bind_as_views_on_their_device():
    bound = bind(oscillator, gpu_bindings(), None)
    assert bound.device == "cuda:0" and bound.n == 100
    assert bound.arrays["x"].ptr == 0x10_0000


@pytest.mark.parametrize("change, words", [
    (dict(x=FakeGpuArray(0x10_0000, (100,), readonly=True)), "'x' .* read-only"),
    (dict(x=FakeGpuArray(0x10_0000, (100,), strides=(16,))), "'x' .* not contiguous"),
    (dict(omega=FakeGpuArray(0x50_0000, (100,), strides=(16,))), "'omega' .*non-contiguous GPU"),
    (dict(v=FakeGpuArray(0x10_0000 + 400, (100,))), "share memory"),
    (dict(x=FakeGpuArray(0x10_0000, (99,))), "disagree on the number of samples"),
    (dict(x=FakeGpuArray(0x10_0000, (100,), typestr="<i2")), "'x' .*dtype int16"),
    (dict(x=np.ones(100)), "different devices"),
])
def test_bad_gpu_bindings_are_refused(change, words):
    with pytest.raises((TypeError, ValueError), match=words):
        bind(oscillator, gpu_bindings(**change), None)


def test_graph_pipeline_rules_before_capture():
    pipe = GraphPipeline()
    with pytest.raises(TypeError, match="zero-argument callable"):
        pipe.add(42)
    with pytest.raises(ValueError, match="add\\(\\) at least one step"):
        pipe.build()
    with pytest.raises(RuntimeError, match="build\\(\\) first"):
        pipe.add(lambda: None).launch(n=1)
    with pytest.raises(ValueError, match="int >= 0"):
        pipe.launch(n=-1)


def test_graph_composer_rules_before_capture():
    from eagle.compose import GraphComposer

    composer = GraphComposer()
    with pytest.raises(TypeError, match="GraphPipeline, a GPU Runner or a callable"):
        composer.add(42)
    cpu_runner = eagle.until_done(eagle.deploy(oscillator, "cpu"), max_steps=10,
                                  x=np.ones(10), v=np.zeros(10), t=np.zeros(10),
                                  omega=np.ones(10), t_end=1.0, dt=0.1)
    with pytest.raises(TypeError, match="runs on cpu, whose loop is not recorded as a graph"):
        composer.add(cpu_runner)
    with pytest.raises(ValueError, match="add\\(\\) at least one piece"):
        composer.build()
    with pytest.raises(RuntimeError, match="build\\(\\) first"):
        composer.add(GraphPipeline()).launch()
