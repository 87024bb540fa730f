"""The bad-input matrix: every wrong binding is refused with an error naming the parameter,
before any array is touched (checked byte for byte), through every entry point that binds."""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import hawk
from hawk import Mutable, Param, Scalar, Series, Vec3
from kernels import falling, oscillator


def good(n=500):
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=1.0, dt=1e-3)


class OnlyDLPack:
    """An array that exports nothing but DLPack (like a JAX CPU array)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def read_only(n=500):
    a = np.ones(n)
    a.flags.writeable = False
    return a


BAD = {
    "missing": (dict(x=None), "missing a binding for 'x'"),
    "unknown": (dict(omgea=np.ones(500)), "unknown binding 'omgea' .*did you mean 'omega'"),
    "wrong dtype": (dict(x=np.ones(500, np.float16)), "'x' .*dtype float16"),
    "complex dtype": (dict(omega=np.ones(500, complex)), "'omega' .*dtype complex128"),
    "bool state": (dict(x=np.ones(500, bool)), "'x' .*bool array"),
    "wrong shape": (dict(x=np.ones((500, 1))), "'x' .*shape \\(n,\\), got \\(500, 1\\)"),
    "wrong count": (dict(v=np.zeros(499)), "disagree on the number of samples"),
    "zero samples": (dict(x=np.ones(0), v=np.zeros(0), t=np.zeros(0), omega=np.ones(0)),
                     "no samples"),
    "non-contiguous": (dict(x=np.ones(1000)[::2]), "'x' .*not contiguous"),
    "read-only": (dict(x=read_only()), "'x' .*read-only"),
    "read-only DLPack (JAX-like)": (dict(t=OnlyDLPack(read_only())), "'t' .*read-only"),
    "aliased mutables": ("alias", "share memory"),
    "not an array": (dict(x=object()), "'x'"),
    "a list": (dict(x=[1.0] * 500), "'x'"),
    "string": (dict(omega="fast"), "'omega'"),
    "array as Param": (dict(dt=np.ones(500)), "'dt' is a Param"),
    "Param out of range": (dict(dt=2**70), "'dt' .*does not fit in int64"),
    "complex Param": (dict(dt=1j), "'dt' .*real number"),
    "two devices": (dict(x=type("OnGpu", (), {"__cuda_array_interface__": dict(
        data=(1 << 20, False), shape=(500,), typestr="<f8", version=3)})()),
        "different devices"),
}


def apply(change):
    b = good()
    if change == "alias":
        b["v"] = b["x"]
    else:
        b.update(change)
    return {k: v for k, v in b.items() if v is not None}


def snapshot(b):
    return {k: np.array(v, copy=True) for k, v in b.items() if isinstance(v, np.ndarray)}


def assert_untouched(b, before):
    for k, v in before.items():
        assert np.asarray(b[k]).tobytes() == v.tobytes(), f"{k} was changed"


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("entry", ["until_done", "simulate"])
def test_bad_binding_is_refused_and_nothing_is_touched(entry, case):
    change, words = BAD[case]
    b = apply(change)
    before = snapshot(b)
    with pytest.raises((TypeError, ValueError), match=words):
        if entry == "until_done":
            eagle.until_done(eagle.deploy(oscillator), max_steps=100, **b).run()
        else:
            eagle.simulate(oscillator, max_steps=100, **b)
    assert_untouched(b, before)


@pytest.mark.parametrize("max_steps", [0, -1, 1.5, "10", None, True, 2**80])
def test_bad_max_steps_is_refused(max_steps):
    b = good()
    before = snapshot(b)
    with pytest.raises((TypeError, ValueError), match="max_steps"):
        eagle.until_done(eagle.deploy(oscillator), max_steps=max_steps, **b)
    assert_untouched(b, before)


@pytest.mark.parametrize("steps_per_launch", [0, -3, 2.5, False])
def test_bad_steps_per_launch_is_refused(steps_per_launch):
    with pytest.raises((TypeError, ValueError), match="steps_per_launch"):
        eagle.until_done(eagle.deploy(oscillator), max_steps=10,
                         steps_per_launch=steps_per_launch, **good())


def test_vectors_in_the_wrong_layout_are_refused_with_the_fix():
    p = np.ones((500, 3))
    with pytest.raises(ValueError, match=r"np.ascontiguousarray\(a.T\)"):
        eagle.until_done(eagle.deploy(falling), max_steps=10, position=p, velocity=p.copy(),
                         mu=1.0, dt=0.1, r_min=0.1)


def test_nan_and_inf_inputs_propagate_in_their_own_samples_only():
    """Documented behaviour: NaN and inf are values like any other; they stay in the samples
    that hold them and never stop the run or touch other samples."""
    b, clean = good(), good()
    b["omega"][7] = np.nan
    b["x"][9] = np.inf
    eagle.simulate(oscillator, max_steps=5000, **b)
    eagle.simulate(oscillator, max_steps=5000, **clean)
    assert np.isnan(b["x"][7]) and not np.isfinite(b["x"][9])
    others = np.ones(500, bool)
    others[[7, 9]] = False
    np.testing.assert_array_equal(b["x"][others], clean["x"][others])


def test_an_immutable_jax_array_bound_as_state_says_so():
    Array = type("Array", (OnlyDLPack,), {"__module__": "jaxlib.xla_extension"})
    b = dict(good(), x=Array(read_only()))
    with pytest.raises(ValueError, match="JAX arrays are immutable"):
        eagle.until_done(eagle.deploy(oscillator), max_steps=10, **b)


def test_dlpack_only_arrays_are_used_in_place():
    b = good()
    x = np.ones(500)
    b["x"] = OnlyDLPack(x)
    eagle.simulate(oscillator, max_steps=5000, **b)
    reference = good()
    eagle.simulate(oscillator, max_steps=5000, **reference)
    np.testing.assert_array_equal(x, reference["x"])


@hawk.kernel
def recorded(dt: Param, x: Mutable[Scalar], xs: Series[Scalar], ps: Series[Vec3]):
    x += dt
    xs[0] = x
    ps[1] = hawk.vec3(x, x, x)


def series_good(n=50):
    return dict(dt=0.5, x=np.zeros(n), xs=np.full((4, n), np.nan),
                ps=np.full((2, 3, n), np.nan))


def read_only_rows(shape):
    a = np.zeros(shape)
    a.flags.writeable = False
    return a


SERIES_BAD = {
    "a row of values, not rows": (dict(xs=np.zeros(50)),
                                  r"'xs' \(Series\[Scalar\]\) must have shape \(T, n\)"),
    "a vector series of the wrong width": (dict(ps=np.zeros((2, 2, 50))),
                                           r"'ps' \(Series\[Vec3\]\) must have shape "
                                           r"\(T, 3, n\).*got \(2, 2, 50\)"),
    "rows of another sample count": (dict(xs=np.zeros((4, 49))), "disagree on the number"),
    "read-only": (dict(xs=read_only_rows((4, 50))), "'xs' .*read-only"),
    "bool rows": (dict(xs=np.zeros((4, 50), bool)), "'xs' .*bool array"),
    "float16 rows": (dict(ps=np.zeros((2, 3, 50), np.float16)), "'ps' .*dtype float16"),
    "complex rows": (dict(xs=np.zeros((4, 50), complex)), "'xs' .*dtype complex128"),
    "a strided sample axis": (dict(xs=np.zeros((4, 100))[:, ::2]),
                              "'xs' .*sample axis .*must be contiguous"),
    "a number": (dict(xs=0.0), "'xs' .*must be a writable array of shape \\(T, n\\)"),
    "aliased with the state": ("alias", "share memory"),
}


@pytest.mark.parametrize("case", list(SERIES_BAD))
@pytest.mark.parametrize("entry", ["until_done", "simulate"])
def test_bad_series_binding_is_refused_and_nothing_is_touched(entry, case):
    change, words = SERIES_BAD[case]
    b = series_good()
    if change == "alias":
        b["xs"] = b["x"].reshape(1, 50)
    else:
        b.update(change)
    before = snapshot(b)
    with pytest.raises((TypeError, ValueError), match=words):
        if entry == "until_done":
            eagle.until_done(eagle.deploy(recorded), max_steps=3, **b).run()
        else:
            eagle.simulate(recorded, max_steps=3, **b)
    assert_untouched(b, before)
