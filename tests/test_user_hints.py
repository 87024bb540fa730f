"""What a user is told and offered at the edges of the API (issue 17): bindings of the wrong
kind answered with the fix, ``simulate(progress=True)``."""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import hawk
from hawk import Mutable, Param, Scalar, Terminated


@hawk.kernel
def count_up(x: Mutable[Scalar], dt: Param, terminated: Terminated):
    x = x + dt
    terminated = x >= 1.0


def labelled(module: str, name: str):
    """An object shaped like a pandas/xarray container (neither library is needed here)."""
    cls = type(name, (), {"__module__": module, "values": np.zeros(4),
                          "__array__": lambda self, dtype=None, copy=None: self.values,
                          "to_numpy": lambda self: self.values})
    return cls()


@pytest.mark.parametrize("module, name", [("pandas.core.series", "Series"),
                                          ("pandas.core.frame", "DataFrame"),
                                          ("xarray.core.dataarray", "DataArray")])
def test_labelled_arrays_are_answered_with_to_numpy(module, name):
    with pytest.raises(eagle.BindingTypeError) as caught:
        eagle.simulate(count_up, max_steps=10, x=labelled(module, name), dt=0.5)
    message = str(caught.value)
    assert "'x' (Mutable[Scalar]) is a" in message and name in message
    assert "x.to_numpy()" in message and "read the results from that array" in message


class GradTensor:
    """Shaped like a PyTorch CPU tensor that requires grad: its exporters refuse."""

    __module__ = "torch"
    requires_grad = True
    shape = (4,)

    def __dlpack__(self, *args, **kwargs):
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def test_a_tensor_that_requires_grad_is_answered_with_detach():
    with pytest.raises(eagle.BindingTypeError) as caught:
        eagle.simulate(count_up, max_steps=10, x=GradTensor(), dt=0.5)
    assert "requires grad" in str(caught.value) and "x.detach()" in str(caught.value)


class Refusing:
    """Any array that refuses DLPack export (a BufferError from its exporter)."""

    shape = (4,)

    def __dlpack__(self, *args, **kwargs):
        raise BufferError("cannot export")

    def __dlpack_device__(self):
        return (1, 0)


def test_an_exporter_that_refuses_is_a_binding_error():
    with pytest.raises(eagle.BindingTypeError, match="'x' .*cannot export"):
        eagle.simulate(count_up, max_steps=10, x=Refusing(), dt=0.5)


@pytest.mark.parametrize("dt", [np.array(0.25), np.array(0.25, dtype=np.float32)])
def test_a_0d_numpy_array_binds_a_param_as_its_value(dt):
    x = np.zeros(4)
    report = eagle.simulate(count_up, max_steps=10, x=x, dt=dt)
    assert report.done == 4 and report.steps == 4
    np.testing.assert_array_equal(x, np.ones(4))


class ZeroD:
    """A 0-d array that is not NumPy's (a GPU or DLPack scalar array)."""

    shape = ()

    def __dlpack__(self, *args, **kwargs):
        raise AssertionError("never exported")

    def __dlpack_device__(self):
        return (1, 0)


def test_another_0d_array_for_a_param_is_answered_with_a_number():
    with pytest.raises(eagle.BindingTypeError) as caught:
        eagle.simulate(count_up, max_steps=10, x=np.zeros(4), dt=ZeroD())
    message = str(caught.value)
    assert "pass a number, e.g. float(dt)" in message and "declare it Scalar" not in message


def test_simulate_shows_progress(capsys):
    x = np.zeros(1000)
    report = eagle.simulate(count_up, max_steps=10, progress=True, x=x, dt=0.5)
    assert report.done == 1000
    err = capsys.readouterr().err
    assert "count_up" in err and "1000/1000" in err
