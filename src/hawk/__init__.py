"""hawk: a small kernel language for stepping many independent samples.

``@hawk.kernel`` reads an annotated Python function (never running it) into a typed IR that
every eagle backend compiles; ``hawk.reference`` runs that IR with NumPy as the ground truth.
"""


from . import ir, passes, reference
from .adjoints import grad, table_values, vjp
from .annotations import (
    Matrix,
    Mutable,
    Out,
    Param,
    Scalar,
    Series,
    Table,
    Terminated,
    Vec2,
    Vec3,
    Vec4,
    Vector,
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
    vector,
    width,
)
from .derivatives import jacobian, jvp
from .draws import exponential, normal, randint, sample_index, step, uniform
from .errors import CompileError, IRError
from .inline import Func, func
from .ir import DType, Program, Role
from .kernel import Kernel, ProgramKernel, kernel
from .matrices import (
    concat,
    det,
    identity,
    inverse,
    matmul,
    matrix,
    outer,
    solve,
    sparse_solve,
    trace,
    transpose,
    zeros,
)
from .tables import interp, interp_grid


def __getattr__(name: str):
    """``hawk.ode`` after ``import hawk``, imported on first use (PEP 562), and
    ``__version__``, read on first use (``importlib.metadata`` is a tenth of ``import hawk``)."""
    if name == "ode":
        import importlib

        return importlib.import_module(".ode", __name__)
    if name == "__version__":
        globals()["__version__"] = version = _version()
        return version
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _version() -> str:
    """One version for both packages: the [project] version in pyproject.toml (eagle-hawk)."""
    from importlib import metadata

    try:
        return metadata.version("eagle-hawk")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


__all__ = [
    "kernel", "Kernel", "ProgramKernel", "CompileError", "IRError",
    "Scalar", "Param", "Mutable", "Terminated", "Vec2", "Vec3", "Vec4", "Vector", "Matrix",
    "Out", "Series", "Table", "interp", "interp_grid", "vec2", "vec3", "vec4", "vector", "dot",
    "length", "cross", "normalize", "maximum", "minimum", "total", "width", "matrix", "zeros",
    "identity", "outer", "transpose", "matmul", "trace", "det", "inverse", "solve",
    "sparse_solve", "concat",
    "jvp", "jacobian", "vjp", "grad", "table_values",
    "func", "Func",
    "uniform", "normal", "exponential", "randint", "sample_index", "step",
    "Program", "DType", "Role", "ir", "passes", "reference",
]  # fmt: skip
