"""hawk: a small kernel language for stepping many independent samples.

``@hawk.kernel`` reads an annotated Python function (never running it) into a typed IR that
every eagle backend compiles; ``hawk.reference`` runs that IR with NumPy as the ground truth.
"""

from importlib import metadata as _metadata

from . import ir, passes, reference
from .annotations import (
    Mutable,
    Out,
    Param,
    Scalar,
    Series,
    Terminated,
    Vec2,
    Vec3,
    Vec4,
    cross,
    dot,
    length,
    maximum,
    minimum,
    normalize,
    total,
    vec2,
    vec3,
    vec4,
    width,
)
from .draws import exponential, normal, randint, sample_index, step, uniform
from .errors import CompileError, IRError
from .inline import Func, func
from .ir import DType, Program, Role
from .kernel import Kernel, ProgramKernel, kernel

try:  # one version for both packages: [project] version in pyproject.toml (eagle-hawk)
    __version__ = _metadata.version("eagle-hawk")
except _metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"



def __getattr__(name: str):
    """``hawk.ode`` after ``import hawk``, imported on first use (PEP 562)."""
    if name == "ode":
        import importlib

        return importlib.import_module(".ode", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "kernel", "Kernel", "ProgramKernel", "CompileError", "IRError",
    "Scalar", "Param", "Mutable", "Terminated", "Vec2", "Vec3", "Vec4", "Out", "Series",
    "vec2", "vec3", "vec4", "dot", "length", "cross", "normalize", "maximum", "minimum",
    "total", "width", "func", "Func",
    "uniform", "normal", "exponential", "randint", "sample_index", "step",
    "Program", "DType", "Role", "ir", "passes", "reference",
]  # fmt: skip
