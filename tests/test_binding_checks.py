"""Bindings the kernel cannot use are refused by ``until_done``/``simulate`` (``bind``), named
by parameter, as ``eagle.BindingTypeError``/``BindingValueError``, before any array is touched:
complex and non-numeric NumPy scalars, and dtypes the kernel's body cannot compute with (found
by specialising the kernel for them). Kernel parameters named like the runtime's keywords are
refused where the kernel is defined."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import eagle
import eagle.distributed
import hawk
from hawk.kernel import RESERVED_PARAMETER_NAMES, ProgramKernel
from hawk.source import import_file
from kernels import oscillator, transcendental

N = 200


def good(n=N):
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=1.0, dt=1e-3)


def transcendental_good(n=N):
    rng = np.random.default_rng(3)
    return dict(k=rng.uniform(0.5, 3.0, n), u=rng.normal(0, 0.5, n), w=rng.normal(0, 0.5, n),
                peak=np.zeros(n), dt=1e-2)


def snapshot(b):
    return {k: np.array(v, copy=True) for k, v in b.items() if isinstance(v, np.ndarray)}


def assert_untouched(b, before):
    for k, v in before.items():
        assert b[k].dtype == v.dtype and b[k].tobytes() == v.tobytes(), f"{k} was changed"


def refused(kernel, bindings, entry, error, words):
    """``entry`` refuses ``bindings`` with ``error`` matching ``words``; nothing touched."""
    before = snapshot(bindings)
    with pytest.raises(error, match=words) as info:
        if entry == "until_done":
            eagle.until_done(eagle.deploy(kernel), max_steps=100, **bindings)
        else:
            eagle.simulate(kernel, max_steps=100, **bindings)
    assert not isinstance(info.value, hawk.CompileError)
    assert_untouched(bindings, before)
    return info.value


ENTRIES = ["until_done", "simulate"]

# NumPy scalars that are not real numbers eagle computes with, bound where a number is taken.
NOT_REAL = {
    "complex64 Scalar": (dict(omega=np.complex64(1 + 2j)), "'omega' \\(Scalar\\) must be a real"),
    "clongdouble Scalar": (dict(omega=np.clongdouble(1 + 2j)), "'omega' \\(Scalar\\)"),
    "str_ Scalar": (dict(omega=np.str_("fast")), "'omega' \\(Scalar\\) has dtype <U4"),
    "bytes_ Scalar": (dict(omega=np.bytes_(b"x")), "'omega' \\(Scalar\\) has dtype \\|S1"),
    "datetime64 Scalar": (dict(omega=np.datetime64(1, "s")), "'omega' .*datetime64"),
    "float16 Scalar": (dict(omega=np.float16(2)), "'omega' \\(Scalar\\) has dtype float16"),
}


@pytest.mark.parametrize("case", list(NOT_REAL))
@pytest.mark.parametrize("entry", ENTRIES)
def test_numpy_scalars_that_are_not_real_numbers_are_refused(entry, case):
    change, words = NOT_REAL[case]
    refused(oscillator, {**good(), **change}, entry, eagle.BindingTypeError, words)


@pytest.mark.parametrize("value", [2**64 - 1, 2**70, -(2**63) - 1])
def test_a_shared_integer_out_of_int64_is_refused(value):
    """A Python int is an int64 (a NumPy uint64 scalar is a uint64: it fits)."""
    refused(oscillator, {**good(), "omega": value}, "until_done", eagle.BindingValueError,
            "'omega' \\(Scalar\\) = .* does not fit in int64")


# Dtypes the kernel's body cannot use: each names the parameter and the dtype that works.
MISMATCHED = {
    "int64 Mutable": (oscillator, dict(x=np.ones(N, np.int64)),
                      "'x' \\(Mutable\\[Scalar\\], bound as int64\\).*cannot store float64 "
                      "into 'x'.*bind 'x' as float64"),
    "bool Param": (oscillator, dict(dt=True),
                   "'dt' \\(Param, bound as bool\\).*unsupported operand.*bind 'dt' as float64"),
    "NumPy bool Param": (oscillator, dict(dt=np.bool_(True)), "'dt' \\(Param, bound as bool\\)"),
    "bool shared Scalar": (oscillator, dict(omega=False), "'omega' \\(Scalar, bound as bool\\)"),
    "bool Param compared": (oscillator, dict(t_end=True),
                            "'t_end' \\(Param, bound as bool\\).*bind 't_end' as float64"),
    "int64 Out": (transcendental, dict(peak=np.zeros(N, np.int64)),
                  "'peak' \\(Out\\[Scalar\\], bound as int64\\).*bind 'peak' as float64"),
    "float32 world, int64 state": (oscillator, dict(
        x=np.ones(N, np.float32), v=np.zeros(N, np.float32), t=np.zeros(N, np.int64),
        omega=np.ones(N, np.float32)), "'t' .*bind 't' as float32"),
}


@pytest.mark.parametrize("case", list(MISMATCHED))
@pytest.mark.parametrize("entry", ENTRIES)
def test_dtypes_the_kernel_cannot_use_are_refused_by_until_done(entry, case):
    kernel, change, words = MISMATCHED[case]
    base = transcendental_good() if kernel is transcendental else good()
    error = refused(kernel, {**base, **change}, entry, eagle.BindingTypeError, words)
    assert isinstance(error.__cause__, hawk.CompileError)  # the kernel's reason, kept


def test_only_the_bindings_at_fault_are_named_and_the_fix_runs():
    b = {**good(), "x": np.ones(N, np.int64), "t": np.zeros(N, np.int64),
         "omega": np.ones(N, np.int64)}  # omega as int64 is fine: it is only read
    error = refused(oscillator, b, "until_done", eagle.BindingTypeError,
                    "bind 'x' as float64, 't' as float64 instead")
    assert "'omega'" not in str(error)
    b.update(x=np.ones(N), t=np.zeros(N))  # as the message says
    report = eagle.until_done(eagle.deploy(oscillator), max_steps=2000, **b).run()
    assert report.done == N


def test_a_kernel_specialised_for_other_dtypes_names_them():
    program = oscillator.specialize({k: "float32" for k in ("x", "v", "t", "omega", "t_end",
                                                            "dt")})
    frozen = ProgramKernel(program)
    b = {**good(), "x": np.ones(N, np.float32), "v": np.zeros(N, np.float32),
         "t": np.zeros(N, np.float32), "t_end": np.float32(1), "dt": np.float32(1e-3)}
    refused(frozen, b, "until_done", eagle.BindingTypeError, "'omega' .*bind 'omega' as float32")


def write_kernel(tmp_path, name, parameter):
    path = tmp_path / f"{name}.py"
    path.write_text("import hawk\nfrom hawk import Mutable, Param, Scalar\n\n\n"
                    "@hawk.kernel\n"
                    f"def {name}({parameter}: Param, x: Mutable[Scalar]):\n"
                    f"    x = x + {parameter}\n")
    return path


def keywords(entry) -> set[str]:
    return {name for name, p in inspect.signature(entry).parameters.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


# Every name a binding could collide with, read from the entry points themselves, so that a
# keyword added to one of them fails here until hawk reserves it too.
RUNTIME_KEYWORDS = sorted(keywords(eagle.until_done) | keywords(eagle.simulate)
                          | keywords(eagle.distributed.until_done)
                          | keywords(eagle.distributed.run_on_cluster))


@pytest.mark.parametrize("parameter", RUNTIME_KEYWORDS)
def test_parameters_named_like_the_runtimes_keywords_are_refused_at_definition(tmp_path,
                                                                                parameter):
    assert parameter in RESERVED_PARAMETER_NAMES
    path = write_kernel(tmp_path, f"reserved_{parameter}", parameter)
    with pytest.raises(hawk.CompileError, match=f"parameter '{parameter}' collides with a "
                       "keyword of eagle's runtime") as info:
        import_file(path, f"reserved_{parameter}", keep=False)
    assert info.value.lineno == 6 and parameter in str(info.value)  # points at the def line
    renamed = write_kernel(tmp_path, f"renamed_{parameter}", f"{parameter}_")  # as suggested
    module = import_file(renamed, f"renamed_{parameter}", keep=False)
    assert isinstance(getattr(module, f"renamed_{parameter}"), hawk.Kernel)
