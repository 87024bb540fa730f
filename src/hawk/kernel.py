"""``@hawk.kernel``: a Python function read once into a kernel object, specialised per dtypes."""

from __future__ import annotations

import dataclasses
import functools
import pickle
from collections.abc import Mapping

import numpy as np

from .errors import CompileError
from .frontend import lower
from .ir import DType, Parameter, Program, Role
from .passes import check, optimize
from .source import KernelSource
from .wire import check_ir_format, ir_format_digest

__all__ = ["kernel", "Kernel", "ProgramKernel", "KERNEL_OPTIONS", "RESERVED_PARAMETER_NAMES"]

#: every option ``@hawk.kernel(...)`` accepts, with its type and meaning
KERNEL_OPTIONS = {
    "accumulate": (bool, "writes to Out parameters add into the buffer instead of overwriting"),
    "dtypes": (dict, "the parameters' default dtypes by name (others: float64), e.g. "
                     "{'state': 'uint64'}: what the body is checked with at definition"),
}

#: Names a kernel parameter may not have: the keyword arguments of the runtime's entry points
#: (``eagle.until_done``, ``eagle.simulate``, ``eagle.distributed.until_done`` and
#: ``eagle.distributed.run_on_cluster``), which take the
#: kernel's bindings as ``**bindings`` beside them, so a parameter of the same name could never
#: be bound. The list lives here because hawk does not import eagle; eagle's tests check that it
#: covers every keyword of those functions (``tests/test_binding_checks.py``).
RESERVED_PARAMETER_NAMES = {
    "max_steps": "until_done/simulate's step limit",
    "steps_per_launch": "until_done/simulate's launch size",
    "eager": "until_done's host-decides-every-launch switch",
    "check_finite": "until_done's NaN/inf check",
    "stream": "until_done's CUDA stream",
    "seed": "until_done/simulate's seed of the random streams",
    "device": "simulate's device",
    "progress": "simulate's progress bar",
    "plan": "eagle.distributed.until_done's plan, which may be passed by name",
    "client": "eagle.distributed.until_done's Dask client",
    "chunks": "eagle.distributed.until_done's chunking",
    "compute": "eagle.distributed.until_done's compute switch",
    "n_samples": "eagle.distributed.run_on_cluster's sample count",
    "init": "eagle.distributed.run_on_cluster's input maker",
    "init_inputs": "eagle.distributed.run_on_cluster's per-chunk blocks for init",
    "reduce": "eagle.distributed.run_on_cluster's per-chunk reduction",
    "keep": "eagle.distributed.run_on_cluster's keep-the-arrays switch",
    "checkpoint": "eagle.distributed.run_on_cluster's folder of finished chunks",
    "timeout": "eagle.distributed.run_on_cluster's time limit",
    "no_workers_timeout": "eagle.distributed.run_on_cluster's wait for a worker",
    "workers": "eagle.distributed.run_on_cluster's choice of workers",
    "resources": "eagle.distributed.run_on_cluster's worker resources",
}


def _check_parameter_names(source: KernelSource) -> None:
    for decl in source.params:
        if decl.name in RESERVED_PARAMETER_NAMES:
            raise CompileError(
                f"parameter {decl.name!r} collides with a keyword of eagle's runtime "
                f"({RESERVED_PARAMETER_NAMES[decl.name]}): bindings are passed as keywords "
                f"beside it, so {decl.name}=... could not bind this parameter; rename it "
                f"(e.g. {decl.name + '_'!r})", decl.loc)


def _default_dtypes(source: KernelSource, given: Mapping[str, object]) -> dict[str, DType]:
    """Each parameter's default dtype: ``given`` (the ``dtypes`` option), else float64."""
    names = {d.name: d for d in source.params}
    out = {name: DType.FLOAT64 for name in names}
    for name, dtype in given.items():
        if name not in names:
            raise TypeError(f"@hawk.kernel(dtypes=...) names {name!r}, which is not a "
                            f"parameter of {source.name} ({', '.join(names)})")
        try:
            out[name] = DType.from_numpy(np.dtype(dtype))
        except (TypeError, ValueError):
            raise TypeError(f"@hawk.kernel(dtypes=...): {name!r} has dtype {dtype!r}; use one "
                            f"of {', '.join(d.value for d in DType)}") from None
        if names[name].annotation.role is Role.TERMINATED or out[name] is DType.BOOL:
            raise TypeError(f"@hawk.kernel(dtypes=...): {name!r} cannot be given a dtype "
                            "(the Terminated flag is bool; other parameters are numbers)")
    return out


class Kernel:
    """A hawk kernel: the parsed function, its parameters, and its IR per dtype signature.

    Decorating reads and checks the whole body once (for float64 arrays), so a mistake is
    reported where the kernel is defined, not where it is first run. ``specialize`` gives the IR
    for other dtypes (float32, int64 inputs), cached like Numba's dispatcher: the frontend's
    lowering after ``hawk.passes.optimize``, which is what every backend compiles.

    Attributes:
        name: the function's name.
        params: the parameters in order, with their default dtypes.
        options: the kernel options, e.g. ``{"accumulate": True}``.
        program: the IR for the default signature (every number float64).

    Made by ``@hawk.kernel``:

    Args:
        func: the annotated Python function; its source must be readable from a file.
        options: the decorator's keyword options, checked against ``KERNEL_OPTIONS``
            (``accumulate``: bool; ``dtypes``: dict of default dtypes by parameter name); an
            unknown option or a value of the wrong type is a ``TypeError``.
    """

    def __init__(self, func, options: Mapping[str, object] | None = None):
        options = dict(options or {})
        for key, value in options.items():
            if key not in KERNEL_OPTIONS:
                raise TypeError(f"@hawk.kernel got an unknown option {key!r}; known options: "
                                f"{', '.join(KERNEL_OPTIONS)}")
            kind, _ = KERNEL_OPTIONS[key]
            if not isinstance(value, kind):
                raise TypeError(f"@hawk.kernel option {key!r} must be a {kind.__name__}, "
                                f"got {value!r}")
        self.func = func
        self.name = func.__name__
        self.options = options
        self.source = KernelSource(func)
        _check_parameter_names(self.source)
        defaults = _default_dtypes(self.source, options.get("dtypes", {}))
        self.params = tuple(
            Parameter(d.name, d.annotation.role, d.annotation.width,
                      DType.BOOL if d.annotation.role is Role.TERMINATED else defaults[d.name],
                      d.annotation.columns, d.annotation.ndim)
            for d in self.source.params
        )
        self._programs: dict[tuple, Program] = {}
        self.program = self.specialize({})
        functools.update_wrapper(self, func)

    def param(self, name: str) -> Parameter:
        """The parameter named ``name`` at its default dtype (``KeyError`` if none)."""
        return self.program.param(name)

    def specialize(self, dtypes: Mapping[str, object]) -> Program:
        """The optimized IR for the given parameter dtypes, cached per signature.

        Args:
            dtypes: parameter name -> dtype (a NumPy dtype, a name such as ``"float32"``, or a
                ``hawk.ir.DType``); a parameter left out gets its default dtype (float64
                unless ``@hawk.kernel(dtypes=...)`` says otherwise). ``Terminated`` must be
                bool (else ``TypeError``); a dtype the body cannot use is a ``CompileError``.
        """
        params = []
        for p in self.params:
            dtype = dtypes.get(p.name, p.dtype)
            dtype = dtype if isinstance(dtype, DType) else DType.from_numpy(np.dtype(dtype))
            if p.role is Role.TERMINATED and dtype is not DType.BOOL:
                raise TypeError(f"{p.name!r} is the Terminated flag and must be bool, "
                                f"got {dtype.value}")
            params.append(dataclasses.replace(p, dtype=dtype))
        key = tuple(params)
        if key not in self._programs:
            options = tuple(sorted((k, tuple(sorted((n, DType.from_numpy(d).value)
                                                    for n, d in v.items()))
                                    if k == "dtypes" else v)
                                   for k, v in self.options.items()))
            self._programs[key] = optimize(lower(self.source, tuple(params), options))
        return self._programs[key]

    def __reduce__(self):
        """Pickled, a kernel is its IR: every specialisation made so far, read back as a
        ``ProgramKernel`` (``hawk.wire``), never its Python function and module globals."""
        programs = (self.program, *(p for p in self._programs.values() if p is not self.program))
        return program_kernel_from_wire, (ir_format_digest(), pickle.dumps(programs))

    def __call__(self, *args, **kwargs):
        raise TypeError(f"hawk kernel {self.name!r} is not called directly; run it with "
                        f"eagle.simulate({self.name}, ...) or "
                        f"eagle.until_done(eagle.deploy({self.name}), ...)")

    def __repr__(self) -> str:
        params = ", ".join(f"{d.name}: {d.annotation!r}" for d in self.source.params)
        opts = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"<hawk.Kernel {self.name}({params}){opts}>"


class ProgramKernel(Kernel):
    """A kernel known by its specialisations' IR alone, without its source: how a kernel
    travels to another process (a Dask worker) or comes back from a file. It runs only with
    the dtypes it was specialised for. The programs came out of ``specialize``, so they are not
    optimized again, only checked (they may have travelled through a file or a network).

    Args:
        program: a ``hawk.ir.Program`` made by ``Kernel.specialize``, the default
            specialisation; an ill-formed one is an ``IRError``.
        *more: the kernel's other specialisations (other dtypes), if any.
    """

    def __init__(self, program: Program, *more: Program):
        for each in (program, *more):
            check(each)
        self.func = None
        self.source = None
        self.program = program
        self.name = program.name
        self.options = dict(program.options)
        self.params = program.params
        self._programs = {tuple(each.params): each for each in (program, *more)}

    def specialize(self, dtypes: Mapping[str, object]) -> Program:
        wanted = []
        for p in self.params:
            dtype = dtypes.get(p.name, p.dtype)
            dtype = dtype if isinstance(dtype, DType) else DType.from_numpy(np.dtype(dtype))
            wanted.append(dataclasses.replace(p, dtype=dtype))
        found = self._programs.get(tuple(wanted))
        if found is None:
            p, dtype = next((p, w.dtype) for p, w in zip(self.params, wanted, strict=True)
                            if w.dtype is not p.dtype)
            raise TypeError(f"kernel {self.name!r} was specialised for {p.name} as "
                            f"{p.dtype.value}, got {dtype.value}")
        return found

    def __repr__(self) -> str:
        return f"<hawk.ProgramKernel {self.name}({', '.join(map(str, self.params))})>"


def program_kernel_from_wire(digest: str, blob: bytes) -> ProgramKernel:
    """The ``ProgramKernel`` a kernel was pickled as (``Kernel.__reduce__``); an
    ``IRFormatError`` before anything is unpickled where this process's IR format differs from
    the sender's (``hawk.wire``)."""
    check_ir_format(digest)
    return ProgramKernel(*pickle.loads(blob))


def kernel(func=None, /, **options):
    """Turn an annotated Python function into a hawk kernel.

    Use bare (``@hawk.kernel``) or with options (``@hawk.kernel(accumulate=True)``).

    Args:
        func: the function to read (positional only; given by the bare decorator). Each of
            its parameters is annotated with its role (``Scalar``, ``Param``, ``Mutable[...]``,
            ``Out[...]``, ``Terminated``, ``Vec3``...); the body is read and type-checked now,
            never run, and a mistake is a ``CompileError`` pointing at the line.
        **options: ``accumulate=True``: writes to ``Out`` parameters add into the array
            instead of overwriting it; ``dtypes={"name": "uint64", ...}``: parameters' default
            dtypes (others float64). Any other option is a ``TypeError``.

    Example::

        @hawk.kernel
        def decay(rate: Scalar, dt: Param, terminated: Terminated, y: Mutable[Scalar]):
            y = y - dt * rate * y
            terminated = y < 1e-3
    """
    if func is None:
        return lambda f: Kernel(f, options)
    if not callable(func):
        raise TypeError(f"@hawk.kernel decorates a function, got {func!r}")
    return Kernel(func, options)
