"""The 32-bit and unsigned integer types and the bit operations (issue 14, item 5): the
promotion rules as written in ``hawk.typing_rules``, literals that must fit, the ``dtypes``
kernel option, the errors, and int32 arrays (JAX's default) binding and running.

Every op in every new type, on every backend, is in ``test_op_coverage.py`` (``more_ops``);
random integer kernels in ``test_random_kernels.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import assert_bitwise_equal, eagle_run, reference_run
from hawk import Mutable, Out, Param, Scalar, Terminated
from hawk.ir import DType, OpKind
from hawk.typing_rules import promote

I32, I64, U32, U64 = DType.INT32, DType.INT64, DType.UINT32, DType.UINT64
F32, F64 = DType.FLOAT32, DType.FLOAT64


@pytest.mark.parametrize("a, b, expected", [
    (I32, I64, I64), (U32, I32, I64), (U32, I64, I64), (U32, U64, U64),
    (I32, U64, U64), (I64, U64, U64),  # C's rule where NumPy gives float64
    (I32, F32, F32), (U64, F32, F32), (U32, F64, F64), (I32, I32, I32),
    (DType.BOOL, U32, None),
])
def test_promotion_rules(a, b, expected):
    assert promote(a, b) is expected
    assert promote(b, a) is expected
    if expected is not None and expected.is_integer and {a, b} != {I64, U64} \
            and {a, b} != {I32, U64}:
        assert np.promote_types(a.numpy, b.numpy) == expected.numpy  # as NumPy's


@hawk.kernel(dtypes={"k": "uint32", "m": "int32", "h": "uint64"})
def typed(k: Mutable[Scalar], m: Mutable[Scalar], h: Mutable[Scalar], f: Out[Scalar]):
    k = (k * 1664525 + 1013904223) & 0xFFFFFFFF
    m = (m >> 1) ^ ~m
    h = h + m
    f = k * 0.5 + m


def test_types_follow_the_rules_in_the_ir():
    program = typed.program
    dtypes = {op.kind: op.dtype for op in program.ops if op.kind is not OpKind.CONST}
    assert dtypes[OpKind.BITAND] is U32 and dtypes[OpKind.RSHIFT] is I32
    assert dtypes[OpKind.INVERT] is I32
    add = [op for op in program.ops if op.kind is OpKind.ADD]
    assert {op.dtype for op in add} >= {U32, U64, F64}  # h + m: uint64; k * 0.5: float64
    assert [p.dtype for p in program.params] == [U32, I32, U64, F64]


def test_int32_arrays_bind_and_run_like_the_reference():
    n = 3000
    rng = np.random.default_rng(3)
    bindings = dict(k=rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32),
                    m=rng.integers(-2**31, 2**31, n).astype(np.int32),
                    h=rng.integers(0, 2**63, n, dtype=np.uint64), f=np.zeros(n))
    expected, _ = reference_run(typed, bindings, 9)
    actual, report = eagle_run(typed, bindings, 9, 4)
    assert report.steps == 9
    assert_bitwise_equal(actual, expected)
    assert actual["k"].dtype == np.uint32 and actual["m"].dtype == np.int32


@pytest.mark.parametrize("body, words", [
    ("k = k + (-1)", "the constant -1 does not fit in uint32"),
    ("k = k + (1 << -1)", "the constant expression << is invalid: negative shift count"),
    ("f = f & 1", "& takes integers (or, for & | ^, two bools), not float64 and int"),
    ("f = ~(f > 0.0)", "~ takes an integer, not bool; for a bool write `not`"),
    ("f = ~f", "~ takes an integer, not float64"),
])
def test_misuse_is_a_compile_error(tmp_path, body, words):
    from hawk.source import import_file

    source = ("import hawk\nfrom hawk import Mutable, Out, Scalar\n\n\n"
              "@hawk.kernel(dtypes={'k': 'uint32'})\n"
              "def bad(k: Mutable[Scalar], f: Mutable[Scalar]):\n"
              f"    {body}\n")
    path = tmp_path / "bad_kernel.py"
    path.write_text(source)
    with pytest.raises(hawk.CompileError) as info:
        import_file(path, "bad_kernel", keep=False)
    assert words in info.value.message


@pytest.mark.parametrize("dtypes, words", [
    ({"nope": "int32"}, "names 'nope', which is not a parameter of k"),
    ({"x": "float16"}, "'x' has dtype 'float16'"),
    ({"x": "bool"}, "cannot be given a dtype"),
])
def test_the_dtypes_option_is_checked(dtypes, words):
    with pytest.raises(TypeError, match=words):
        @hawk.kernel(dtypes=dtypes)
        def k(x: Mutable[Scalar]):
            x = x + 1


def test_bools_combine_with_and_or_xor():
    @hawk.kernel
    def flags(a: Scalar, b: Scalar, o: Out[Scalar]):
        o = 1.0 if ((a > 0.0) & (b > 0.0)) | ((a < b) ^ (b < 0.0)) else 0.0

    kinds = {op.kind for op in flags.program.ops}
    assert {OpKind.AND, OpKind.OR, OpKind.NE} <= kinds and not kinds & {OpKind.BITAND}
    a = np.array([1.0, -1.0, 2.0, -3.0])
    b = np.array([1.0, 2.0, -1.0, -1.0])
    out = np.zeros(4)
    eagle.simulate(flags, max_steps=1, a=a, b=b, o=out)
    expected = [1.0 if ((x > 0) & (y > 0)) | ((x < y) ^ (y < 0)) else 0.0
                for x, y in zip(a, b, strict=True)]
    assert out.tolist() == expected


@hawk.kernel(dtypes={"state": "uint64", "mask": "uint64", "shift": "uint32", "n": "int32"})
def masked_walk(state: Mutable[Scalar], mask: Param, shift: Param, n: Mutable[Scalar],
                terminated: Terminated):
    state = (state ^ (state << 13) ^ (state >> 7)) & mask
    n += 1
    terminated = n >= 40 or (state >> shift) == 0


def test_every_backend_runs_unsigned_params_and_integer_arrays(target):  # noqa: F811
    """uint64 and uint32 Params and int32 arrays through every backend (the GPU's argument
    packing included), equal to the reference bit for bit."""
    n = 3001
    rng = np.random.default_rng(8)
    bindings = dict(state=rng.integers(1, 2**63, n, dtype=np.uint64),
                    mask=np.uint64(2**64 - 1), shift=np.uint32(58), n=np.zeros(n, np.int32))
    expected, steps = reference_run(masked_walk, bindings, 50)
    assert 0 < np.count_nonzero(expected["n"] < 40) < n  # some stop early
    arrays = target.put(bindings)
    report = eagle.until_done(eagle.deploy(masked_walk, target.target.device), max_steps=50,
                              steps_per_launch=7, **arrays).run()
    actual = target.get(arrays)
    assert report.steps == steps
    assert_bitwise_equal({k: actual[k] for k in ("state", "n")},
                         {k: expected[k] for k in ("state", "n")})
