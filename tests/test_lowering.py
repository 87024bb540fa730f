"""The lowering's own structure: one table of built-in functions that every place reads
(``hawk.calls.BUILTINS``).

``test_hawk_language``, ``test_hawk_funcs`` and ``test_hawk_errors`` check what the lowering
makes of kernels and funcs; ``test_golden_digests`` that a change of its code changes no bit.
"""

from __future__ import annotations

import builtins
import math

import hawk
from hawk.calls import ATTRIBUTES, BUILTINS, OBJECTS
from hawk.ir import MATH_FUNCTIONS


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
