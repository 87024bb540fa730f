"""The lowering's own structure: one table of built-in functions that every place reads
(``hawk.calls.BUILTINS``), and each expression lowered once.

``test_hawk_language``, ``test_hawk_funcs`` and ``test_hawk_errors`` check what the lowering
makes of kernels and funcs; ``test_golden_digests`` that a change of its code changes no bit.
"""

from __future__ import annotations

import builtins
import math
import textwrap

import hawk
from hawk.calls import ATTRIBUTES, BUILTINS, OBJECTS
from hawk.frontend import lower
from hawk.ir import MATH_FUNCTIONS, OpKind
from hawk.source import import_file


def test_every_builtin_is_named_by_its_objects_and_attributes():
    for name, builtin in BUILTINS.items():
        assert builtin.name == name
        assert builtin.objects, f"{name} has no Python object that names it"
        for obj in builtin.objects:
            assert OBJECTS[obj] == name
    for (module, attribute), name in ATTRIBUTES.items():
        target = math if module == "math" else hawk
        assert name in BUILTINS and hasattr(target, attribute), (module, attribute)
    assert {a for m, a in ATTRIBUTES if m == "math"} == set(MATH_FUNCTIONS)
    for name in ("min", "max", "abs", "float"):
        assert OBJECTS[getattr(builtins, name)] == name
    assert {"dot", "vec3", "Vec3", "matrix", "jvp", "uniform", "interp"} <= {
        a for m, a in ATTRIBUTES if m == "hawk"}


def _kernel(tmp_path, body: str):
    source = textwrap.dedent('''\
        import hawk
        from hawk import Mutable, Scalar


        @hawk.func
        def noise(x):
            return hawk.vec2(x * hawk.uniform(), hawk.uniform())


        @hawk.kernel
        def k(x: Mutable[Scalar]):
        ''') + textwrap.indent(textwrap.dedent(body), "    ")
    path = tmp_path / "once.py"
    path.write_text(source)
    return import_file(path, "once", keep=False).k


def test_an_indexed_expression_is_lowered_once(tmp_path):
    """``f(x)[0]`` inlines ``f`` once, and indexing any other vector expression lowers it once:
    the draws take the positions 0, 1, 2. (The two-class lowering lowered an indexed expression
    that was not a tuple twice, the first copy left dead: the draws took positions 0 to 5, the
    one this kernel keeps was number 2, and nested indexing, ``f(g(x)[0])[0]``, cost 2 ** depth
    inlinings.)"""
    kernel = _kernel(tmp_path, """\
        x = noise(x)[0] + hawk.vec2(hawk.normal(), 1.0)[1]
        """)
    program = lower(kernel.source, kernel.program.params, kernel.program.options)
    draws = [op.attr for op in program.ops if op.kind is OpKind.DRAW]
    assert draws == [("uniform", 0), ("uniform", 1), ("normal", 2)]
    assert [op.attr for op in kernel.program.ops if op.kind is OpKind.DRAW] == [("uniform", 0)]
