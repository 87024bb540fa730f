"""The native layer (``libeagle_cuda``, ``native/``) from Python: ctypes over its C facade.

``native/include/eagle/cuda/c_api.h`` is declared here function by function (``PROTOTYPES``; a
test compares the two). ``library()`` finds and loads the library once: ``$EAGLE_CUDA_LIBRARY``,
else the installed ``eagle-hawk-cuda`` distribution (``eagle_cuda_native.library_path()``), else
a checkout's ``build/native/install`` (``make native``). ``check(rc)`` turns a facade status
into the exception the Python layer raises today (``CudaError`` with the ``CUresult`` name and
the call, ``BackendUnavailable``, ``CaptureError``, ``ArtifactError``, ``BindingTypeError``).

The Python GPU path does not run over this layer yet: it stays on NVIDIA's ``cuda.bindings``
until a device run has passed with the native layer (``docs/native.md``). What uses it today:
``python -m eagle info`` (which library, and why the GPU is or is not usable through it).
"""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

from ..errors import ArtifactError, BackendUnavailable, BindingTypeError, CaptureError, CudaError

__all__ = ["ABI_VERSION", "PROTOTYPES", "library_path", "library", "check", "describe"]

ABI_VERSION = 1


class Error(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("cu_result", ctypes.c_int), ("name", ctypes.c_char_p),
                ("call", ctypes.c_char_p), ("message", ctypes.c_char_p)]


class Value(ctypes.Structure):
    _fields_ = [("is_float", ctypes.c_int), ("f64", ctypes.c_double), ("i64", ctypes.c_int64)]


_p, _i, _sz, _u64, _i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint64, \
    ctypes.c_int64
_pp, _str, _strs = ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)
_ip = ctypes.POINTER(ctypes.c_int)

#: name: (restype, argtypes), in c_api.h's order
PROTOTYPES = {
    "eagle_cuda_abi_version": (_i, []),
    "eagle_cuda_version": (_str, []),
    "eagle_last_error": (ctypes.POINTER(Error), []),
    "eagle_unavailable_reason": (_i, [_str, _sz]),
    "eagle_driver_version": (_i, [_ip]),
    "eagle_device_count": (_i, [_ip]),
    "eagle_device_info": (_i, [_i, _str, _sz, _ip, _ip, _ip]),
    "eagle_device_synchronize": (_i, [_i]),
    "eagle_stream_create": (_i, [_i, _i, _pp]),
    "eagle_stream_wrap": (_i, [_u64, _i, _pp]),
    "eagle_stream_current": (_i, [_i, _pp]),
    "eagle_stream_handle": (_u64, [_p]),
    "eagle_stream_synchronize": (_i, [_p]),
    "eagle_stream_push_current": (_i, [_p]),
    "eagle_stream_pop_current": (_i, [_i]),
    "eagle_capture_begin": (_i, [_p, _i, _pp]),
    "eagle_capture_status": (_i, [_p, _ip, ctypes.POINTER(_sz)]),
    "eagle_capture_end": (_i, [_p, _pp]),
    "eagle_graph_node_count": (_i, [_p, ctypes.POINTER(_sz)]),
    "eagle_graph_instantiate": (_i, [_p, _pp]),
    "eagle_exec_upload": (_i, [_p, _p]),
    "eagle_exec_launch": (_i, [_p, _p, _u64]),
    "eagle_module_load": (_i, [_i, _p, _sz, _pp]),
    "eagle_launcher_create": (_i, [_p, _str, _ip, _sz, ctypes.c_uint, _pp]),
    "eagle_launcher_launch": (_i, [_p, ctypes.c_uint, ctypes.POINTER(Value), _sz, _p]),
    "eagle_buffer_alloc": (_i, [_i, _sz, _pp]),
    "eagle_buffer_ptr": (_u64, [_p]),
    "eagle_buffer_upload": (_i, [_p, _p, _sz]),
    "eagle_buffer_download": (_i, [_p, _p, _sz]),
    "eagle_artifact_check": (_i, [_str]),
    "eagle_loaded_open": (_i, [_str, _i, _pp]),
    "eagle_loaded_run": (_i, [_p, _strs, ctypes.POINTER(_u64), ctypes.POINTER(_i64), _ip, _sz,
                              _strs, ctypes.POINTER(ctypes.c_double), _sz, _i64, _i64,
                              ctypes.POINTER(_i64), ctypes.POINTER(_i64),
                              ctypes.POINTER(_i64)]),
    "eagle_release": (None, [_p]),
}

_KINDS = {2: BackendUnavailable, 3: CaptureError, 4: ArtifactError, 5: BindingTypeError}


def library_path() -> Path | None:
    """Where ``libeagle_cuda.so`` is (see the module docstring), or None."""
    if os.environ.get("EAGLE_CUDA_LIBRARY"):
        return Path(os.environ["EAGLE_CUDA_LIBRARY"])
    try:
        import eagle_cuda_native
    except ImportError:
        checkout = Path(__file__).resolve().parents[3] / "build" / "native" / "install" / "lib"
        path = checkout / "libeagle_cuda.so"
        return path if path.exists() else None
    return eagle_cuda_native.library_path()


@functools.lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    """The loaded library with every prototype declared; ``BackendUnavailable`` saying what to
    install when it is missing or of another ABI."""
    path = library_path()
    if path is None or not path.exists():
        raise BackendUnavailable("eagle's native layer (libeagle_cuda) is not installed: "
                                 "pip install eagle-hawk-cuda, or make native in a checkout")
    lib = ctypes.CDLL(str(path))
    for name, (restype, argtypes) in PROTOTYPES.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    abi = lib.eagle_cuda_abi_version()
    if abi != ABI_VERSION:
        raise BackendUnavailable(f"{path} has ABI {abi}; this eagle needs ABI {ABI_VERSION}: "
                                 "install the eagle-hawk-cuda of eagle's own version")
    return lib


def check(rc: int) -> None:
    """Raise the eagle error a facade status ``rc`` stands for (nothing for 0)."""
    if rc == 0:
        return
    error = library().eagle_last_error().contents
    name, call, message = ((s or b"").decode() for s in (error.name, error.call, error.message))
    if rc == 1:
        raise CudaError(name, call)
    raise _KINDS.get(rc, RuntimeError)(message)


def describe() -> list[str]:
    """``python -m eagle info``'s lines: which native library, and whether a GPU is usable
    through it (and why not)."""
    try:
        lib = library()
    except BackendUnavailable as exc:
        return [f"native layer: none ({exc})"]
    except OSError as exc:
        return [f"native layer: {library_path()} does not load ({exc})"]
    reason = ctypes.create_string_buffer(1024)
    check(lib.eagle_unavailable_reason(reason, len(reason)))
    why = reason.value.decode()
    driver = os.environ.get("EAGLE_LIBCUDA") or "libcuda.so.1"
    head = (f"native layer: libeagle_cuda {lib.eagle_cuda_version().decode()} (ABI "
            f"{lib.eagle_cuda_abi_version()}) at {library_path()}")
    if why:
        return [head, f"  through it, GPU: none usable ({why})"]
    version = ctypes.c_int()
    check(lib.eagle_driver_version(ctypes.byref(version)))
    return [head, f"  through it, GPU: usable ({driver}, driver {version.value // 1000}."
                  f"{version.value % 1000 // 10}; the Python GPU path does not use it yet)"]
