"""Checking every binding against the kernel's parameters before anything runs.

``bind`` either returns a complete, consistent set of arrays for one launch signature or raises
an error that names the parameter and what was expected. It never writes to a user's array, so a
refused call leaves every array as it was. It validates only: which device an array lives on,
how it is viewed without a copy and how a new one is made are the backend's (``eagle.backend``).

The last check is the kernel itself: ``bind`` specialises a hawk kernel for the bound dtypes, so
a dtype the body cannot use (an int64 array stored into from a float expression, a bool where a
number is needed) is found here, before any array is touched, and reported as the binding's
fault (``BindingTypeError`` naming the parameters and the dtype that would work) rather than as
the kernel's ``hawk.CompileError`` (kept as the error's ``__cause__``, with the source line). A
failure that no change of the bindings' dtypes cures is the kernel's own and stays a
``CompileError`` (hawk reports most of those when the kernel is defined).
"""

from __future__ import annotations

import difflib
import numbers
from dataclasses import dataclass, field

import numpy as np

from hawk import CompileError, Kernel
from hawk.ir import DType, OpKind, Parameter, Program, Role, series_field
from hawk.tables import MAX_TABLE_ELEMENTS

from . import backend as backends
from .arrays import is_array_like
from .errors import BindingTypeError, BindingValueError

__all__ = ["Bound", "bind", "specialize", "check_max_steps", "check_steps_per_launch",
           "check_seed", "series_field"]

_DTYPE_NAMES = ("bool", "int32", "int64", "uint32", "uint64", "float32", "float64")
_ARRAY_DTYPES = {np.dtype(t) for t in _DTYPE_NAMES}
_INT64 = np.iinfo(np.int64)


@dataclass
class Bound:
    """The validated bindings of one run: host arrays, uniform values and the dtype signature."""

    n: int
    device: str
    # per-sample parameters, (n,) or (width, n); Series (T, ..., n); a Table its whole array
    arrays: dict[str, np.ndarray]
    uniforms: dict[str, np.generic | np.ndarray]  # Param values, typed; (K,)/(R, C) arrays
    flags: np.ndarray  # the Terminated array (the user's, or allocated here)
    dtypes: dict[str, DType] = field(default_factory=dict)
    seed: int | None = None  # the random streams' seed (``hawk.philox``), for kernels that draw
    first_sample: int = 0  # the global index of these arrays' sample 0 (a chunk's offset)


def _shape_text(p: Parameter) -> str:
    dims = "".join(f"{d}, " for d in p.dims)
    if p.role is Role.PARAM:
        return f"({dims.rstrip(', ')}{',' if len(p.dims) == 1 else ''})"
    return f"(T, {dims}n)" if p.role is Role.SERIES else f"({dims}n{',' if not dims else ''})"


def check_max_steps(max_steps, name: str = "max_steps") -> int:
    if isinstance(max_steps, bool) or not isinstance(max_steps, numbers.Integral):
        raise BindingTypeError(f"{name} must be a positive int, got {type(max_steps).__name__} "
                               f"{max_steps!r}")
    if not 1 <= int(max_steps) <= _INT64.max // 2:
        raise BindingValueError(f"{name} must be between 1 and {_INT64.max // 2}, "
                                f"got {max_steps}")
    return int(max_steps)


def check_steps_per_launch(steps_per_launch) -> int | None:
    if steps_per_launch is None:
        return None
    return check_max_steps(steps_per_launch, "steps_per_launch")


def check_seed(seed) -> int | None:
    """``seed`` as an int in ``[0, 2**64)`` (the key of the random streams), or None."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise BindingTypeError(f"seed must be an int in [0, 2**64) (or None), got "
                               f"{type(seed).__name__} {seed!r}")
    if not 0 <= int(seed) < 2**64:
        raise BindingValueError(f"seed must be an int in [0, 2**64), got {seed}")
    return int(seed)


def _check_draws(kernel: Kernel, program: Program, seed: int | None, caller: str) -> None:
    """A kernel that draws random numbers runs only with a seed: say where it draws."""
    if seed is not None or not program.draws:
        return
    op = next(op for op in program.ops if op.kind is OpKind.DRAW)
    where = f" (hawk.{op.attr[0]}() at {op.loc.file}:{op.loc.line})" if op.loc else ""
    raise BindingTypeError(f"{kernel.name} draws random numbers{where}, so {caller}() needs a "
                           f"seed: pass seed=<an int in [0, 2**64)>; the same seed gives the "
                           "same numbers")


def bind(kernel: Kernel, bindings: dict, device: str | None, caller: str = "until_done",
         seed: int | None = None) -> Bound:
    """Validate ``bindings`` (and ``seed``) for ``kernel``; see the module docstring. A kernel
    that draws random numbers needs a seed; a kernel that does not ignores one."""
    seed = check_seed(seed)
    params = {p.name: p for p in kernel.params}
    unknown = [name for name in bindings if name not in params]
    if unknown:
        name = unknown[0]
        close = difflib.get_close_matches(name, params, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise BindingTypeError(f"{caller}() got an unknown binding {name!r}{hint}; "
                               f"{kernel.name}'s parameters are {', '.join(params)}")
    unread = _unread_shared(kernel)
    bindings = dict(bindings)
    for p in kernel.params:
        if p.name in bindings or p.role is Role.TERMINATED:
            continue
        if p.name not in unread:
            raise BindingTypeError(f"{caller}() is missing a binding for {p.name!r} "
                                   f"({p.annotation}): pass {_expected(p)}")
        bindings[p.name] = _placeholder(p)  # never read: any value of its shape will do

    arrays, scalars, devices, tables = {}, {}, {}, {}
    for p in kernel.params:
        if p.name not in bindings:
            continue
        value = bindings[p.name]
        if p.role is Role.PARAM:
            scalars[p.name] = _uniform(p, value)
        elif p.role is Role.TABLE:
            tables[p.name] = _check_table(p, value)
            where = backends.device_of(value)
            if where != backends.HOST:  # a host table goes to any device; a GPU one decides
                devices[p.name] = where
        elif _library_of(value) in _LABELLED_ARRAYS:
            raise BindingTypeError(_labelled_array_message(p, value))
        elif is_array_like(value):
            _check_not_tracked(p, value)
            devices[p.name] = backends.device_of(value)
            arrays[p.name] = value
        elif p.role is Role.SCALAR and _is_number(value):
            scalars[p.name] = _real_number(p, value)
        else:
            raise BindingTypeError(f"{p.name!r} ({p.annotation}) must be {_expected(p)}, got "
                                   f"{type(value).__name__}")
    device = _common_device(devices, device)
    backend = backends.backend_for(device)
    originals = dict(arrays)
    for name, value in list(arrays.items()):
        try:
            arrays[name] = backend.view(value, device)
        except (TypeError, BufferError) as exc:  # BufferError: an exporter refused (DLPack)
            raise BindingTypeError(f"{name!r} ({params[name].annotation}): {exc}") from None
    n = _sample_count(kernel, arrays)
    for name, value in tables.items():
        arrays[name] = _table_on(params[name], value, backend, device)

    checked = {}
    for name, array in arrays.items():
        checked[name] = array if name in tables else _check_array(params[name], array, n,
                                                                   originals[name])
    _check_aliasing(kernel, checked, backend)

    float_types = {a.dtype for name, a in checked.items() if a.dtype.kind == "f"
                   and name not in tables}
    working_float = np.dtype("float32") if float_types == {np.dtype("float32")} else np.dtype(
        "float64")
    uniforms = {}
    for name, value in scalars.items():
        p = params[name]
        if p.role is Role.SCALAR:  # a number broadcast to every sample (read-only, so a copy)
            dtype = _number_dtype(value, working_float)
            checked[name] = backend.full(p.shape(n), value, dtype, device)
        elif isinstance(value, np.ndarray):  # a Param vector or matrix (a new array)
            from_python = not isinstance(bindings[name], np.ndarray)
            uniforms[name] = value.astype(working_float) if from_python and \
                value.dtype.kind == "f" else value
        else:
            uniforms[name] = value if isinstance(value, np.generic) else _number_dtype(
                value, working_float).type(value)

    flag_param = next((p for p in kernel.params if p.role is Role.TERMINATED), None)
    if flag_param is not None and flag_param.name in checked:
        flags = checked[flag_param.name]
    else:
        flags = backend.full((n,), False, np.dtype(bool), device)
        if flag_param is not None:
            checked[flag_param.name] = flags
    dtypes = {name: DType.from_numpy(a.dtype) for name, a in checked.items()}
    dtypes.update({name: DType.from_numpy(v.dtype) for name, v in uniforms.items()})
    bound = Bound(n, device, checked, uniforms, flags, dtypes, seed)
    if isinstance(kernel, Kernel):
        program = specialize(kernel, bound, DType.from_numpy(working_float))
        _check_draws(kernel, program, seed, caller)
    return bound


def specialize(kernel: Kernel, bound: Bound, working_float: DType | None = None) -> Program:
    """``kernel.specialize(bound.dtypes)``; where the kernel cannot be compiled for those dtypes
    but can when some bindings take the working float dtype (float32 when every float array is
    float32, else float64) or the kernel's own dtype, ``BindingTypeError`` naming the fewest
    such bindings and the dtype that works. Any other failure is re-raised as it is."""
    try:
        return kernel.specialize(bound.dtypes)
    except (CompileError, TypeError) as exc:
        error = exc
    if working_float is None:
        floats = {a.dtype for a in bound.arrays.values() if a.dtype.kind == "f"}
        working_float = DType.FLOAT32 if floats == {np.dtype("float32")} else DType.FLOAT64
    params = [p for p in kernel.params if p.role is not Role.TERMINATED]
    for choose in (lambda p: working_float, lambda p: p.dtype):
        fix = {p.name: choose(p) for p in params if bound.dtypes[p.name] is not choose(p)}
        if not fix or not _compiles(kernel, {**bound.dtypes, **fix}):
            continue
        for name in list(fix):  # keep only the bindings that must change
            fewer = {k: v for k, v in fix.items() if k != name}
            if _compiles(kernel, {**bound.dtypes, **fewer}):
                fix = fewer
        raise BindingTypeError(_dtype_message(kernel, bound, fix, error)) from error
    raise error


def _compiles(kernel: Kernel, dtypes: dict) -> bool:
    try:
        kernel.specialize(dtypes)
    except (CompileError, TypeError):
        return False
    return True


def _dtype_message(kernel: Kernel, bound: Bound, fix: dict, error: Exception) -> str:
    params = {p.name: p for p in kernel.params}
    names = " and ".join(f"{name!r} ({params[name].annotation}, bound as "
                         f"{bound.dtypes[name].value})" for name in fix)
    instead = ", ".join(f"{name!r} as {dtype.value}" for name, dtype in fix.items())
    if isinstance(error, CompileError):
        reason = error.message
        if error.loc is not None:
            reason += f" at {error.loc.file}:{error.loc.line}"
    else:
        reason = str(error)
    these = "these dtypes" if len(fix) > 1 else "this dtype"
    return f"{names}: {kernel.name} cannot run with {these} ({reason}); bind {instead} instead"


def _unread_shared(kernel) -> set[str]:
    """The ``Param`` and ``Table`` parameters the kernel's body never reads (a feature a
    kernel factory switched off): they may be left unbound. An artifact's are all needed."""
    program = getattr(kernel, "program", None)
    if program is None:
        return set()
    read = {op.attr[0] if op.kind is OpKind.LOAD else op.attr for op in program.ops
            if op.kind in (OpKind.LOAD, OpKind.TABLE_READ)}
    return {p.name for p in program.params
            if p.role in (Role.PARAM, Role.TABLE) and p.name not in read}


def _placeholder(p: Parameter):
    """A value for a ``Param`` or ``Table`` the body never reads."""
    if p.role is Role.TABLE:
        return np.zeros((1,) * p.ndim, dtype=p.dtype.numpy)
    return np.zeros(p.dims, dtype=p.dtype.numpy) if p.is_vector else p.dtype.numpy.type(0)


def _expected(p: Parameter) -> str:
    if p.role is Role.PARAM and p.is_vector:
        return (f"one array of shape {_shape_text(p)} (NumPy, or a list) shared by every "
                "sample")
    if p.role is Role.PARAM:
        return "one number (a Python or NumPy scalar) shared by every sample"
    if p.role is Role.TERMINATED:
        return "a writable bool array of shape (n,) (or omit it and eagle allocates one)"
    if p.role is Role.TABLE:
        return (f"an array of {p.ndim} dimension{'s' if p.ndim > 1 else ''}, each of size >= "
                "1, shared by every sample")
    if p.role is Role.SCALAR:
        return f"an array of shape {_shape_text(p)} or a number that every sample shares"
    if p.role is Role.SERIES:
        return (f"a writable array of shape {_shape_text(p)} (any number of rows T >= 0, the "
                "sample axis last and contiguous)")
    return f"a writable, contiguous array of shape {_shape_text(p)}"


def _is_number(value) -> bool:
    return isinstance(value, numbers.Number | np.generic) and not isinstance(value, complex)


def _number_dtype(value, working_float: np.dtype) -> np.dtype:
    if isinstance(value, bool | np.bool_):
        return np.dtype(bool)
    if isinstance(value, numbers.Integral):
        return np.dtype(np.int64)
    return working_float


# Libraries whose arrays carry labels (an index, coordinates) and hold a NumPy array inside;
# recognised by module name, so neither is ever imported here.
_LABELLED_ARRAYS = {"pandas": "a pandas", "xarray": "an xarray"}


def _library_of(value) -> str:
    return type(value).__module__.partition(".")[0]


def _labelled_array_message(p: Parameter, value) -> str:
    what = f"{_LABELLED_ARRAYS[_library_of(value)]} {type(value).__name__}"
    read_back = (" and read the results from that array (eagle updates it in place, not the "
                 f"{type(value).__name__})" if p.role.written else "")
    return (f"{p.name!r} ({p.annotation}) is {what}; eagle binds plain arrays, so pass "
            f"{p.name}.to_numpy(){read_back}")


def _check_not_tracked(p: Parameter, value) -> None:
    """A PyTorch tensor that autograd tracks is refused with the fix (its exporters would say
    only that they cannot export it)."""
    if _library_of(value) == "torch" and getattr(value, "requires_grad", False) is True:
        raise BindingTypeError(f"{p.name!r} ({p.annotation}) is a PyTorch tensor that requires "
                               f"grad; eagle reads and writes its memory outside autograd, so "
                               f"pass {p.name}.detach()")


def _uniform(p: Parameter, value):
    if p.is_vector:
        return _uniform_array(p, value)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]  # a 0-d NumPy array is the number it holds (as a NumPy scalar)
    elif is_array_like(value) and tuple(getattr(value, "shape", (1,))) == ():
        raise BindingTypeError(f"{p.name!r} is a Param (one value for every sample) but got a "
                               f"0-d {type(value).__name__}; pass a number, e.g. "
                               f"float({p.name})")
    if is_array_like(value) or isinstance(value, list | tuple):
        shape = getattr(value, "shape", None)
        what = f"an array of shape {tuple(shape)}" if shape is not None else type(value).__name__
        raise BindingTypeError(f"{p.name!r} is a Param (one value for every sample) but got "
                               f"{what}; declare it Scalar to bind one value per sample")
    return _real_number(p, value)


def _uniform_array(p: Parameter, value) -> np.ndarray:
    """A ``Param[Vector[K]]``'s or ``Param[Matrix[R, C]]``'s value: a host array (or nested
    lists) of exactly that shape and a real dtype eagle computes in, as a new NumPy array
    (the kernel takes it by value, so later changes to the caller's array do not reach a run).
    Python floats are left float64 here and follow the arrays' float type in ``bind``."""
    if is_array_like(value) and not isinstance(value, np.ndarray):  # a GPU array: read once
        try:
            value = backends.backend_for(backends.device_of(value)).to_host(value)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise BindingTypeError(f"{p.name!r} ({p.annotation}) must be an array of shape "
                                   f"{_shape_text(p)} (it is passed to the kernel by value), "
                                   f"got a {_library_of(value)} array: {exc}") from None
    try:
        array = np.array(value)
    except (TypeError, ValueError) as exc:
        raise BindingTypeError(f"{p.name!r} ({p.annotation}) must be an array of shape "
                               f"{_shape_text(p)}, got {type(value).__name__}: {exc}") from None
    if array.shape != p.dims:
        raise BindingValueError(f"{p.name!r} ({p.annotation}) must have shape "
                                f"{_shape_text(p)}, got {array.shape}")
    if array.dtype.kind in "iu" and array.dtype not in _ARRAY_DTYPES:
        array = array.astype(np.int64)
    if array.dtype not in _ARRAY_DTYPES or array.dtype == np.bool_:
        raise BindingTypeError(f"{p.name!r} ({p.annotation}) has dtype {array.dtype}; use one of "
                               f"{', '.join(_DTYPE_NAMES[1:])}")
    return array


def _real_number(p: Parameter, value):
    """``value`` as a number a ``Param`` holds or a ``Scalar`` shares: a real number (complex
    ones of every kind refused, NumPy's ``complex64`` included, never cast to real), an integer
    that fits in int64 (as ``np.int64`` when it came from NumPy), or a NumPy scalar of a dtype
    eagle computes in."""
    what = p.annotation
    if not _is_number(value) or isinstance(value, complex | np.complexfloating):
        raise BindingTypeError(f"{p.name!r} ({what}) must be a real number, got "
                               f"{type(value).__name__} {value!r}")
    if isinstance(value, np.generic):
        if value.dtype.kind in "iu" and value.dtype not in _ARRAY_DTYPES:  # int8, uint16...
            return np.int64(value)
        if value.dtype not in _ARRAY_DTYPES:
            raise BindingTypeError(f"{p.name!r} ({what}) has dtype {value.dtype}; use one of "
                                   f"{', '.join(_DTYPE_NAMES)}")
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if not _INT64.min <= value <= _INT64.max:
            raise BindingValueError(f"{p.name!r} ({what}) = {value} does not fit in int64")
    return value


def _common_device(devices: dict[str, str], requested: str | None) -> str:
    found = sorted(set(devices.values()))
    if len(found) > 1:
        where = ", ".join(f"{name} on {dev}" for name, dev in devices.items())
        raise BindingValueError(f"the arrays live on different devices ({where}); put them on "
                                "one device")
    found_device = found[0] if found else backends.HOST
    if requested is not None and requested != found_device and found:
        name = next(iter(devices))
        raise BindingValueError(f"{name!r} lives on {found_device} but the plan is for "
                                f"{requested}; move the arrays or deploy for {found_device}")
    return requested or found_device


def _soa_hint(p: Parameter) -> str:
    """How to pass an array of ``p``'s values with the sample axis first."""
    if p.columns:
        return (f"; matrices are stored SoA as {_shape_text(p)}: pass "
                "np.ascontiguousarray(np.moveaxis(a, 0, -1))")
    return f"; vectors are stored SoA as {_shape_text(p)}: pass np.ascontiguousarray(a.T)"


def _sample_count(kernel: Kernel, arrays: dict[str, np.ndarray]) -> int:
    counts = {}
    for p in kernel.params:
        if p.name in arrays:
            array = arrays[p.name]
            if array.ndim == 0:
                raise BindingValueError(f"{p.name!r} ({p.annotation}) is a 0-d array; pass "
                                        f"{_expected(p)}")
            if p.role is Role.SERIES:
                _check_series_shape(p, array)
            elif not p.is_vector and array.ndim != 1:
                raise BindingValueError(f"{p.name!r} ({p.annotation}) must have shape (n,), got "
                                        f"{tuple(array.shape)}")
            elif p.is_vector and tuple(array.shape[:-1]) != p.dims:
                raise BindingValueError(f"{p.name!r} ({p.annotation}) must have shape "
                                        f"{_shape_text(p)}, got {array.shape}"
                                        f"{_soa_hint(p) if array.shape[1:] == p.dims else ''}")
            counts[p.name] = array.shape[-1]
    if not counts:
        raise BindingValueError(f"cannot tell the number of samples: bind at least one of "
                                f"{kernel.name}'s per-sample parameters to an array")
    if len(set(counts.values())) > 1:
        listing = ", ".join(f"{name} has {count}" for name, count in counts.items())
        raise BindingValueError(f"the arrays disagree on the number of samples ({listing})")
    n = next(iter(counts.values()))
    if n == 0:
        raise BindingValueError(f"the arrays hold no samples ({next(iter(counts))!r} has "
                                "length 0); an ensemble needs at least one sample")
    return n


def _check_table(p: Parameter, value):
    """A Table's binding, checked before any array is touched: an array-like of exactly
    ``p.ndim`` dimensions, each of size >= 1 (at most ``MAX_TABLE_ELEMENTS`` elements); its
    dtype (a real one eagle computes in: no bool, no complex) is checked on its view
    (``_table_on``)."""
    if _library_of(value) in _LABELLED_ARRAYS:
        raise BindingTypeError(_labelled_array_message(p, value))
    if not is_array_like(value):
        raise BindingTypeError(f"{p.name!r} ({p.annotation}) must be {_expected(p)}, got "
                               f"{type(value).__name__}")
    _check_not_tracked(p, value)
    shape = tuple(int(s) for s in getattr(value, "shape", np.shape(value)))
    if len(shape) != p.ndim:
        raise BindingValueError(f"{p.name!r} ({p.annotation}) must be {_expected(p)}, got "
                                f"shape {shape}")
    if any(size < 1 for size in shape):
        raise BindingValueError(f"{p.name!r} ({p.annotation}) is empty (shape {shape}); a "
                                f"table needs at least one element along each axis")
    elements = int(np.prod(shape, dtype=object))
    if elements > MAX_TABLE_ELEMENTS:
        raise BindingValueError(f"{p.name!r} ({p.annotation}) has {elements} elements; a table "
                                f"holds at most {MAX_TABLE_ELEMENTS} (2**40)")
    return value


def _table_on(p: Parameter, value, backend, device: str):
    """The table as the backend reads it, its dtype checked first: C-contiguous on ``device``
    (a contiguous copy of a strided array; a host array copied to a GPU once, here). Never
    written."""
    try:
        host = backends.device_of(value) != device  # a host table for a GPU run
        array = _host_array(value) if host else backend.view(value, device)
    except (TypeError, BufferError) as exc:
        raise BindingTypeError(f"{p.name!r} ({p.annotation}): {exc}") from None
    if array.dtype == np.bool_ or array.dtype not in _ARRAY_DTYPES:
        raise BindingTypeError(f"{p.name!r} ({p.annotation}) has dtype {array.dtype}; a table "
                               f"holds real numbers: use one of {', '.join(_DTYPE_NAMES[1:])}")
    if host:
        return backend.upload(np.ascontiguousarray(array), device)
    return _contiguous_read_only(p, array)


def _host_array(value) -> np.ndarray:
    """A host array-like as a NumPy array (no copy where none is needed)."""
    return backends.backend_for(backends.HOST).view(value, backends.HOST)


def _check_series_shape(p: Parameter, array) -> None:
    if array.ndim != 2 + len(p.dims) or tuple(array.shape[1:-1]) != p.dims:
        one = "a matrix" if p.columns else "a vector" if p.is_vector else "a value"
        raise BindingValueError(f"{p.name!r} ({p.annotation}) must have shape {_shape_text(p)}: "
                                f"T rows of {one} per sample, got {tuple(array.shape)}")


def _check_series(p: Parameter, array, original) -> None:
    """A Series: writable, numeric, its elements apart by whole elements and its sample axis
    contiguous (a slice of the sample axis is fine; rows and components may be strided)."""
    if not array.flags.writeable:
        raise BindingValueError(f"{p.name!r} ({p.annotation}) is read-only; eagle writes its "
                                "rows in place, so pass a writable array")
    if array.dtype == np.bool_:
        raise BindingTypeError(f"{p.name!r} ({p.annotation}) is a bool array; a Series holds "
                               "numbers")
    itemsize = array.dtype.itemsize
    strides = tuple(array.strides)
    empty = any(size == 0 for size in array.shape)  # nothing to address (NumPy: strides 0)
    if not empty and (any(stride % itemsize for stride in strides)
                      or (array.shape[-1] > 1 and strides[-1] != itemsize)):
        raise BindingValueError(f"{p.name!r} ({p.annotation}) has strides {strides} (bytes); "
                                f"its sample axis (the last) must be contiguous, "
                                f"{itemsize} bytes apart: pass np.ascontiguousarray(...) and "
                                "read the results from that array")


def _check_array(p: Parameter, array: np.ndarray, n: int, original=None) -> np.ndarray:
    if p.role is Role.SERIES:
        expected = p.shape(n, array.shape[0])
        if array.shape != expected:
            raise BindingValueError(f"{p.name!r} ({p.annotation}) must have shape "
                                    f"{_shape_text(p).replace('n', str(n))}, got {array.shape}")
        if array.dtype not in _ARRAY_DTYPES:
            raise BindingTypeError(f"{p.name!r} ({p.annotation}) has dtype {array.dtype}; use "
                                   f"one of {', '.join(_DTYPE_NAMES[1:])}")
        _check_series(p, array, original)
        return array
    expected = p.shape(n)
    if array.shape != expected:
        hint = _soa_hint(p) if array.shape == (n, *p.dims) else ""
        raise BindingValueError(f"{p.name!r} ({p.annotation}) must have shape "
                                f"{_shape_text(p).replace('n', str(n))}, got {array.shape}{hint}")
    if p.role is Role.TERMINATED:
        if array.dtype != np.bool_:
            raise BindingTypeError(f"{p.name!r} (Terminated) must be a bool array, got "
                                   f"{array.dtype}")
    elif array.dtype not in _ARRAY_DTYPES:
        raise BindingTypeError(f"{p.name!r} ({p.annotation}) has dtype {array.dtype}; use one of "
                               f"{', '.join(_DTYPE_NAMES)}")
    if p.role.written:
        if not array.flags.writeable:
            immutable = type(original).__module__.split(".")[0] in ("jax", "jaxlib")
            hint = (" (JAX arrays are immutable: bind a NumPy or CuPy array, e.g. "
                    "np.array(a), and read the results from it)" if immutable else "")
            raise BindingValueError(f"{p.name!r} ({p.annotation}) is read-only; eagle updates it "
                                    f"in place, so pass a writable array{hint}")
        if not array.flags.c_contiguous:
            raise BindingValueError(f"{p.name!r} ({p.annotation}) is not contiguous; eagle "
                                    "updates it in place, so pass np.ascontiguousarray(...) and "
                                    "read the results from that array")
        if p.role is not Role.TERMINATED and array.dtype == np.bool_:
            raise BindingTypeError(f"{p.name!r} ({p.annotation}) is a bool array; state must be "
                                   "numeric")
        return array
    return _contiguous_read_only(p, array)


def _contiguous_read_only(p: Parameter, array):
    """An array the kernel only reads, C-contiguous: a host one copied if need be (a copy is as
    good as a view), a GPU one refused unless it already is."""
    if isinstance(array, np.ndarray):
        return np.ascontiguousarray(array)
    if not array.flags.c_contiguous:
        raise BindingValueError(f"{p.name!r} ({p.annotation}) is a non-contiguous GPU array; "
                                "pass a contiguous one (cupy.ascontiguousarray, "
                                "tensor.contiguous())")
    return array


def _check_aliasing(kernel: Kernel, arrays: dict[str, np.ndarray], backend) -> None:
    written = [p.name for p in kernel.params if p.role.written and p.name in arrays]
    for name in written:
        for other, array in arrays.items():
            if other != name and backend.shares_memory(arrays[name], array):
                raise BindingValueError(f"{name!r} and {other!r} share memory; every array a "
                                        "kernel writes must be its own (pass a copy)")
