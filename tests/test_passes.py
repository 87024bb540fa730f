"""hawk.passes: the checker refuses each kind of malformed program and accepts what the frontend
makes; dead-code removal and CSE remove what they should and nothing else (signed zeros and NaN
constants stay apart); stages are what hoisting needs; and the reference executor gives the same
bits on a random kernel's optimized and unoptimized programs."""

from __future__ import annotations

import copy
import math
import os
import struct
import sys
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hawk
import kernels
import pass_kernels
import random_kernels
from hawk import reference
from hawk.__main__ import main
from hawk.frontend import lower
from hawk.ir import DType, Op, OpKind, Parameter, Program, Role, Store
from hawk.passes import (
    PIPELINE,
    IRError,
    Stage,
    check,
    classify,
    eliminate_common_subexpressions,
    eliminate_dead_code,
    optimize,
)  # fmt: skip

F64, F32, I64, BOOL = DType.FLOAT64, DType.FLOAT32, DType.INT64, DType.BOOL


def lowered(kernel, program=None) -> Program:
    """The frontend's program for ``kernel`` (for ``program``'s dtypes), before any pass."""
    program = program or kernel.program
    return lower(kernel.source, program.params, program.options)


def text(program: Program, index: int) -> str:
    """Op ``index`` of ``program`` written out as an expression, e.g. ``mul(dt, omega)``."""
    op = program.ops[index]
    if op.kind is OpKind.LOAD:
        name, component = op.attr
        return name if component is None else f"{name}[{component}]"
    if op.kind is OpKind.CONST:
        return repr(op.attr)
    head = op.attr if op.kind is OpKind.CALL else op.kind.value
    return f"{head}({', '.join(text(program, a) for a in op.args)})"


def bits(a) -> bytes:
    """Raw bytes, so equality is bit for bit (NaN payloads and signed zeros included)."""
    return np.ascontiguousarray(a).tobytes()


# -- the checker ---------------------------------------------------------------------------------

PARAMS = (
    Parameter("a", Role.SCALAR), Parameter("p", Role.PARAM), Parameter("i", Role.SCALAR, 1, I64),
    Parameter("q", Role.MUTABLE, 3), Parameter("x", Role.MUTABLE),
    Parameter("out", Role.OUT), Parameter("done", Role.TERMINATED, 1, BOOL),
)
GOOD = Program(
    name="good", params=PARAMS,
    ops=(
        Op(OpKind.LOAD, F64, attr=("a", None)),  # %0
        Op(OpKind.LOAD, F64, attr=("p", None)),  # %1
        Op(OpKind.LOAD, F64, attr=("q", 2)),  # %2
        Op(OpKind.ADD, F64, (0, 1)),  # %3
        Op(OpKind.LT, BOOL, (3, 2)),  # %4
        Op(OpKind.LOAD, I64, attr=("i", None)),  # %5
        Op(OpKind.CONST, F64, attr=-0.0),  # %6
    ),
    stores=(Store("x", None, 3), Store("q", 0, 3)),
    terminated=4,
)


def with_op(op: Op) -> Program:
    """``GOOD`` with ``op`` appended as %7."""
    return replace(GOOD, ops=GOOD.ops + (op,))


def with_store(store: Store) -> Program:
    return replace(GOOD, stores=GOOD.stores + (store,))


MALFORMED = {
    "later argument": (with_op(Op(OpKind.NEG, F64, (8,))),
                       r"op %7 \(neg\(%8\).*argument %8 does not refer to an earlier op"),
    "own argument": (with_op(Op(OpKind.NEG, F64, (7,))), r"op %7 .*argument %7 does not"),
    "arity": (with_op(Op(OpKind.NEG, F64, (0, 1))), r"op %7 .*neg takes 1 argument\(s\), got 2"),
    "select arity": (with_op(Op(OpKind.SELECT, F64, (4, 0))), r"select takes 3 argument"),
    "operand dtype": (with_op(Op(OpKind.MUL, F64, (0, 5))),
                      r"op %7 .*operands must have the result dtype float64, got float64, int64"),
    "bool arithmetic": (with_op(Op(OpKind.ADD, BOOL, (4, 4))), r"add computes numbers, not bool"),
    "integer div": (with_op(Op(OpKind.DIV, I64, (5, 5))), r"div computes floats"),
    "attr on arithmetic": (with_op(Op(OpKind.ADD, F64, (0, 1), attr=2)),
                           r"add takes no attr, got 2"),
    "comparison dtypes": (with_op(Op(OpKind.LT, BOOL, (0, 5))),
                          r"a comparison takes two operands of one dtype and gives bool, got "
                          r"float64, int64 -> bool"),
    "comparison result": (with_op(Op(OpKind.EQ, F64, (0, 1))), r"float64, float64 -> float64"),
    "ordering bools": (with_op(Op(OpKind.LT, BOOL, (4, 4))), r"lt orders numbers"),
    "and of numbers": (with_op(Op(OpKind.AND, BOOL, (4, 0))),
                       r"and takes and gives bools, got bool, float64 -> bool"),
    "not gives bool": (with_op(Op(OpKind.NOT, F64, (4,))), r"not takes and gives bools"),
    "select condition": (with_op(Op(OpKind.SELECT, F64, (0, 0, 1))),
                         r"the condition of a select must be bool, got float64"),
    "select branches": (with_op(Op(OpKind.SELECT, F64, (4, 0, 5))),
                        r"the branches of a select must have the result dtype float64, got "
                        r"float64, int64"),
    "cast to itself": (with_op(Op(OpKind.CAST, F64, (0,))),
                       r"a cast converts a number to another number dtype, not float64 to "
                       r"float64"),
    "cast of a bool": (with_op(Op(OpKind.CAST, F64, (4,))), r"not bool to float64"),
    "unknown function": (with_op(Op(OpKind.CALL, F64, (0,), "gamma")),
                         r"calls 'gamma', which is not one of MATH_FUNCTIONS"),
    "function arity": (with_op(Op(OpKind.CALL, F64, (0,), "atan2")),
                       r"math.atan2 takes 2 argument\(s\), got 1"),
    "function of ints": (with_op(Op(OpKind.CALL, I64, (5,), "sqrt")),
                         r"math.sqrt takes and gives floats of one dtype, got int64 -> int64"),
    "function mixed floats": (with_op(Op(OpKind.CALL, F32, (0,), "sqrt")),
                              r"got float64 -> float32"),
    "load unknown": (with_op(Op(OpKind.LOAD, F64, attr=("b", None))),
                     r"loads 'b', which is not a parameter"),
    "load out": (with_op(Op(OpKind.LOAD, F64, attr=("out", None))),
                 r"loads 'out', which is Out: a step never reads it"),
    "load terminated": (with_op(Op(OpKind.LOAD, BOOL, attr=("done", None))),
                        r"loads 'done', which is Terminated"),
    "load scalar component": (with_op(Op(OpKind.LOAD, F64, attr=("a", 0))),
                              r"loads 'a': a scalar has no component 0"),
    "load vector whole": (with_op(Op(OpKind.LOAD, F64, attr=("q", None))),
                          r"loads 'q': a Vec3's component is 0, 1 or 2, not None"),
    "load vector component 3": (with_op(Op(OpKind.LOAD, F64, attr=("q", 3))), r"not 3"),
    "load dtype": (with_op(Op(OpKind.LOAD, F32, attr=("a", None))),
                   r"loads 'a' \(float64\) as float32"),
    "load attr shape": (with_op(Op(OpKind.LOAD, F64, attr="a")),
                        r"a load's attr is \(parameter name, component\), got 'a'"),
    "load with arguments": (with_op(Op(OpKind.LOAD, F64, (0,), ("a", None))),
                            r"load takes 0 argument\(s\), got 1"),
    "float constant as int": (with_op(Op(OpKind.CONST, I64, attr=1.5)),
                              r"the constant 1.5 is not exactly a value of dtype int64"),
    "bool constant as int": (with_op(Op(OpKind.CONST, I64, attr=True)), r"constant True"),
    "int64 overflow": (with_op(Op(OpKind.CONST, I64, attr=2**63)), r"constant 9223372036854775808"),
    "inexact float32": (with_op(Op(OpKind.CONST, F32, attr=0.1)), r"constant 0.1 is not exactly"),
    "int constant as float": (with_op(Op(OpKind.CONST, F64, attr=1)), r"constant 1 is not"),
    "store to Scalar": (with_store(Store("a", None, 0)),
                        r"store 2 \(a <- %0\): 'a' is Scalar, not Mutable or Out"),
    "store to Param": (with_store(Store("p", None, 0)), r"'p' is Param, not Mutable or Out"),
    "store to flag": (with_store(Store("done", None, 4)), r"'done' is Terminated, not Mutable"),
    "store to unknown": (with_store(Store("b", None, 0)), r"'b' is not a parameter"),
    "store dtype": (with_store(Store("out", None, 5)),
                    r"store 2 \(out <- %5\): stores int64 into a float64 parameter"),
    "store scalar component": (with_store(Store("out", 1, 0)), r"a scalar has no component 1"),
    "store vector whole": (with_store(Store("q", None, 0)), r"component is 0, 1 or 2, not None"),
    "store twice": (with_store(Store("x", None, 0)),
                    r"store 2 \(x <- %0\): this component is already stored to"),
    "store missing op": (with_store(Store("out", None, 7)), r"%7 does not refer to an op"),
    "terminated dtype": (replace(GOOD, terminated=3),
                         r"terminated <- %3: must be a bool op, got float64"),
    "terminated missing op": (replace(GOOD, terminated=9), r"terminated <- %9: does not refer"),
    "terminated without flag": (replace(GOOD, params=PARAMS[:-1]),
                                r"terminated <- %4: is set, but the kernel has no Terminated"),
    "parameter twice": (replace(GOOD, params=PARAMS + (Parameter("a", Role.SCALAR),)),
                        r"parameter 'a': two parameters have this name"),
}


def test_the_well_formed_base_program_passes():
    assert check(GOOD) is GOOD  # (so each refusal below is for its one broken rule)


@pytest.mark.parametrize("rule", MALFORMED)
def test_checker_refuses_a_program_that_breaks_a_rule(rule):
    program, message = MALFORMED[rule]
    with pytest.raises(IRError, match=r"IR of kernel 'good': " + ".*" + message):
        check(program)


def test_checker_error_shows_where_the_op_came_from():
    bad = pass_kernels.unused.program
    op = replace(bad.ops[2], dtype=I64)
    with pytest.raises(IRError, match=r"op %2 .*\[from .*pass_kernels.py, line \d+\]"):
        check(replace(bad, ops=bad.ops[:2] + (op,)))


def _test_kernels():
    return [k for k in vars(kernels).values() if isinstance(k, hawk.Kernel)]


@pytest.mark.parametrize("kernel", _test_kernels(), ids=lambda k: k.name)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_checker_accepts_every_test_kernel_before_and_after_the_pipeline(kernel, dtype):
    dtypes = {p.name: dtype for p in kernel.params if p.role is not Role.TERMINATED}
    program = kernel.specialize(dtypes)
    raw = lowered(kernel, program)
    assert check(raw) is raw and check(program) is program
    assert program == optimize(raw) and optimize(program) == program  # specialize optimizes


def test_reference_and_program_kernel_refuse_a_malformed_program():
    bad = MALFORMED["store dtype"][0]
    with pytest.raises(IRError, match="stores int64"):
        reference.step(bad, {})
    with pytest.raises(IRError, match="stores int64"):
        hawk.ProgramKernel(bad)


# -- dead code and common subexpressions ---------------------------------------------------------


def test_dead_code_elimination_drops_unused_ops_and_renumbers():
    raw = lowered(pass_kernels.unused)
    assert [text(raw, i) for i in range(len(raw.ops))].count("mul(exp(a), 3.0)") == 1
    program = eliminate_dead_code(raw)
    assert [text(program, i) for i in range(len(program.ops))] == ["a", "x", "add(x, a)"]
    assert program.stores == (Store("x", None, 2),)
    # stores and the terminated flag are renumbered too, and are what keeps an op alive
    kept = eliminate_dead_code(GOOD)
    assert [text(kept, i) for i in range(len(kept.ops))] == [
        "a", "p", "q[2]", "add(a, p)", "lt(add(a, p), q[2])"]
    assert kept.stores == GOOD.stores and kept.terminated == 4
    flag_only = eliminate_dead_code(replace(GOOD, stores=()))
    assert len(flag_only.ops) == 5 and text(flag_only, flag_only.terminated) == \
        "lt(add(a, p), q[2])"


def test_cse_merges_duplicated_subexpressions():
    raw = lowered(pass_kernels.duplicated)
    program = eliminate_dead_code(eliminate_common_subexpressions(raw))
    assert (len(raw.ops), len(program.ops)) == (12, 9)
    assert [op.attr for op in program.ops].count("sin") == 1
    x, y = (s.value for s in program.stores)
    assert text(program, x) == "add(x, mul(sin(mul(k, x)), dt))"
    assert program.ops[y].args[1] == program.ops[x].args[1]  # the one mul(sin(k * x), dt)
    lengths = pass_kernels.lengths.program  # three hawk.length(q): one sqrt left
    assert [op.attr for op in lengths.ops].count("sqrt") == 1


def test_cse_keeps_signed_zero_constants_apart():
    program = pass_kernels.signed_zeros.program
    consts = [op.attr for op in program.ops if op.kind is OpKind.CONST]
    assert [struct.pack("<d", c) for c in consts] == [struct.pack("<d", 0.0),
                                                      struct.pack("<d", -0.0)]
    arrays = dict(a=np.array([-0.0, 1.0]), x=np.zeros(2), y=np.zeros(2))
    reference.step(program, arrays)
    assert bits(arrays["x"]) == bits(np.array([0.0, 1.0]))
    assert bits(arrays["y"]) == bits(np.array([-0.0, 1.0]))
    # and made by hand, with no frontend to keep them apart first
    zeros = Program("zeros", (Parameter("x", Role.MUTABLE), Parameter("y", Role.MUTABLE)),
                    (Op(OpKind.CONST, F64, attr=0.0), Op(OpKind.CONST, F64, attr=-0.0)),
                    (Store("x", None, 0), Store("y", None, 1)), None)
    assert eliminate_common_subexpressions(zeros) == zeros


def test_cse_compares_nan_constants_by_their_bits():
    nan = math.inf - math.inf
    negated = -nan  # the same NaN with the other sign bit
    assert struct.pack("<d", nan) != struct.pack("<d", negated)
    params = tuple(Parameter(n, Role.MUTABLE) for n in "xyz")
    nans = Program("nans", params,
                   (Op(OpKind.CONST, F64, attr=nan), Op(OpKind.CONST, F64, attr=-negated),
                    Op(OpKind.CONST, F64, attr=negated)),
                   tuple(Store(n, None, i) for i, n in enumerate("xyz")), None)
    merged = eliminate_common_subexpressions(nans)
    # %0 and %1 have the same bits (two NaN objects, never == each other): one constant
    assert len(merged.ops) == 2 and [s.value for s in merged.stores] == [0, 0, 1]
    assert [struct.pack("<d", op.attr) for op in merged.ops] == [struct.pack("<d", nan),
                                                                 struct.pack("<d", negated)]
    arrays = {n: np.zeros(1) for n in "xyz"}
    reference.step(merged, arrays)
    assert [bits(arrays[n]) for n in "xyz"] == [bits(np.array([v])) for v in (nan, nan, negated)]


def test_frontend_keeps_nan_constants_of_either_sign_apart():
    nan = math.inf - math.inf
    arrays = {"x": np.zeros(1), "y": np.zeros(1)}
    reference.step(pass_kernels.nan_signs.program, arrays)
    assert bits(arrays["x"]) == bits(np.array([nan]))
    assert bits(arrays["y"]) == bits(np.array([-nan]))


def test_pipeline_is_the_named_passes_in_order():
    assert [p.name for p in PIPELINE] == ["check", "dead code", "common subexpressions",
                                          "dead code", "check"]
    assert optimize(GOOD) == eliminate_dead_code(GOOD)  # nothing to merge in GOOD
    assert optimize(lowered(pass_kernels.duplicated)) == pass_kernels.duplicated.program


def test_oscillator_pipeline_keeps_fourteen_ops():
    raw, program = lowered(kernels.oscillator), kernels.oscillator.program
    # the frontend's unused `terminated = False` constant is the only thing removed
    assert (len(raw.ops), len(program.ops)) == (15, 14)
    assert [text(raw, i) for i in range(len(raw.ops))].count("False") == 1


# -- stages --------------------------------------------------------------------------------------


def stages_by_text(program: Program) -> dict[str, Stage]:
    return {text(program, i): s for i, s in enumerate(classify(program))}


def test_oscillator_stages():
    stages = stages_by_text(kernels.oscillator.program)
    L, S, T = Stage.LAUNCH, Stage.SAMPLE, Stage.STEP
    assert stages == {
        "omega": S, "t_end": L, "dt": L, "x": T, "v": T, "t": T,
        "mul(dt, v)": T, "add(x, mul(dt, v))": T,
        "mul(dt, omega)": S, "mul(mul(dt, omega), omega)": S,  # dt * omega * omega
        "mul(mul(mul(dt, omega), omega), x)": T, "sub(v, mul(mul(mul(dt, omega), omega), x))": T,
        "add(t, dt)": T, "ge(add(t, dt), t_end)": T,
    }


def test_param_only_ops_are_launch_stage():
    stages = stages_by_text(pass_kernels.staged.program)
    assert stages["0.5"] is Stage.LAUNCH
    assert stages["mul(mul(0.5, dt), dt)"] is Stage.LAUNCH  # 0.5 * dt * dt
    assert stages["mul(omega, omega)"] is Stage.SAMPLE
    assert stages["mul(mul(mul(0.5, dt), dt), mul(omega, omega))"] is Stage.SAMPLE
    assert stages["mul(dt, mul(omega, omega))"] is Stage.SAMPLE
    assert stages["add(x, mul(dt, v))"] is Stage.STEP


def test_ir_command_marks_stages(capsys, monkeypatch):
    # `python -m hawk` imports the file again as module "kernels": keep the tests' own
    monkeypatch.setitem(sys.modules, "kernels", kernels)
    monkeypatch.setattr(sys, "path", list(sys.path))
    main(["ir", f"{kernels.__file__}:oscillator", "--stages"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[9].startswith("  %8 = mul(%2, %0) : float64") and lines[9].endswith("# sample")
    assert lines[2].endswith("# launch") and lines[-1] == "  terminated <- %13"
    main(["ir", f"{kernels.__file__}:oscillator"])
    assert capsys.readouterr().out == str(kernels.oscillator.program) + "\n"


# -- optimizing never changes a result -----------------------------------------------------------

N, MAX_STEPS = 64, 60
_SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.function_scoped_fixture,
                                            HealthCheck.too_slow])


def run_reference(program: Program, bindings: dict) -> tuple[dict, int]:
    arrays = copy.deepcopy(bindings)
    steps = 0
    while steps < MAX_STEPS and reference.step(program, arrays):
        steps += 1
    return arrays, steps


def assert_optimizing_changes_no_bit(kernel, dtype, seed: int) -> None:
    dtypes = {p.name: dtype for p in kernel.params  # integer counters keep their dtype
              if p.role is not Role.TERMINATED and p.dtype.is_float}
    program = kernel.specialize(dtypes)
    raw = lowered(kernel, program)
    assert program == optimize(raw)
    bindings = {**random_kernels.bindings(N, seed, dtype), "terminated": np.zeros(N, bool)}
    (expected, expected_steps), (actual, steps) = (run_reference(raw, bindings),
                                                   run_reference(program, bindings))
    assert steps == expected_steps
    for name, value in expected.items():
        assert bits(actual[name]) == bits(value), name


@pytest.mark.slow
@_SETTINGS
@given(source=random_kernels.kernel_sources(), seed=st.integers(0, 2**16))
def test_random_kernel_gives_the_same_bits_optimized_or_not(tmp_path, source, seed):
    assert_optimizing_changes_no_bit(random_kernels.load(source, tmp_path), np.float64, seed)


@pytest.mark.slow
@_SETTINGS
@given(source=random_kernels.kernel_sources(exact=True), seed=st.integers(0, 2**16))
def test_random_float32_kernel_gives_the_same_bits_optimized_or_not(tmp_path, source, seed):
    assert_optimizing_changes_no_bit(random_kernels.load(source, tmp_path), np.float32, seed)


@pytest.mark.parametrize("kernel", _test_kernels() + [pass_kernels.duplicated,
                                                     pass_kernels.lengths],
                         ids=lambda k: k.name)
def test_optimized_programs_compute_each_value_once(kernel):
    program = kernel.program
    keys = [(op.kind, op.dtype, op.args, struct.pack("<d", op.attr)
             if isinstance(op.attr, float) else op.attr) for op in program.ops]
    assert len(set(keys)) == len(keys)


BRANCHY = '''
import hawk
from hawk import Mutable, Param, Scalar, Terminated


@hawk.kernel
def branchy(dt: Param, terminated: Terminated, x: Mutable[Scalar], y: Mutable[Scalar],
            z: Mutable[Scalar], w: Mutable[Scalar]):
    if x > 0.5:
        alpha, beta, gamma, delta = x * dt, y + dt, z - dt, w * 2.0
    else:
        alpha, beta, gamma, delta = y * dt, x + dt, w - dt, z * 3.0
    x, y, z, w = alpha, beta, gamma, delta
    terminated = x > 1.0


print(branchy.specialize({}).digest())
'''


def test_a_program_and_its_digest_are_the_same_in_every_process(tmp_path):
    """An ``if`` that binds several names merges them in a fixed order: the program (and so
    its cache key) does not depend on the process's string hashing (it did: each process of
    a DP5 kernel compiled again)."""
    import subprocess
    import sys

    script = tmp_path / "branchy.py"
    script.write_text(BRANCHY)
    digests = set()
    for seed in ("0", "1", "2", "3", "4", "5"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                             text=True, check=True)
        digests.add(out.stdout.strip())
    assert len(digests) == 1, digests
