"""Machine code of a compiled CPU launch, kept across processes as the object file LLVM wrote.

Numba compiles the generated ``run_blocks`` as a C function (``cfunc``); the object code LLVM
emitted for it is stored in the cache entry, and a later process links it into its own memory
with llvmlite's MCJIT and calls it through ctypes. That takes a few milliseconds where loading
from Numba's own cache took about a third of a second per process (before it loads anything,
Numba rebuilds its typing and target registries, which imports SciPy's BLAS).

The object refers to a few symbols outside itself: the C library's (``memset``, ``exp``), the
Python C API's and Numba's helpers (``numba_gil_ensure``, ``NRT_Free``). Numba's helpers are
registered with LLVM here exactly as Numba registers them, and an object is linked only if
every symbol it needs resolves in this process (an unresolved one would be a null address,
found only when called). Only ELF objects (Linux) are read that closely; elsewhere an object is
not loaded, and each process compiles its launch.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading

__all__ = ["target", "object_code", "pack", "unpack", "load", "undefined_symbols"]

_FORMAT = b"eagle-cpu-object 1\n"
_lock = threading.Lock()
_registered = False


def target() -> tuple[str, str, str]:
    """What machine code compiled in this process is for: (triple, CPU name, CPU features),
    as Numba's JIT chooses them (``NUMBA_CPU_NAME`` and ``NUMBA_CPU_FEATURES`` respected)."""
    import llvmlite.binding as ll
    from numba.core import config
    from numba.core.codegen import get_host_cpu_features

    name = config.CPU_NAME or ll.get_host_cpu_name()
    features = config.CPU_FEATURES if config.CPU_FEATURES is not None \
        else get_host_cpu_features()
    return ll.get_process_triple(), name, features


def object_code(function) -> tuple[bytes, str] | None:
    """(object code, symbol) of a compiled Numba ``cfunc``; None where Numba did not keep its
    object code (a version that works otherwise: the launch is then not cached)."""
    try:
        return bytes(function._library._get_compiled_object()), function.native_name
    except (AttributeError, RuntimeError, ValueError):
        return None


def pack(code: bytes, symbol: str) -> bytes:
    """One cache file: a format line, a JSON line (the symbol to call, the code's SHA-256),
    then the object code."""
    header = json.dumps({"symbol": symbol, "sha256": hashlib.sha256(code).hexdigest()})
    return _FORMAT + header.encode() + b"\n" + code


def unpack(data: bytes) -> tuple[bytes, str] | None:
    """(object code, symbol) of a ``pack``ed file, None unless it is whole and verifies."""
    if not data.startswith(_FORMAT):
        return None
    header, _, code = data[len(_FORMAT):].partition(b"\n")
    try:
        meta = json.loads(header)
        symbol, digest = meta["symbol"], meta["sha256"]
    except (ValueError, TypeError, KeyError):
        return None
    if not isinstance(symbol, str) or hashlib.sha256(code).hexdigest() != digest:
        return None
    return code, symbol


def load(code: bytes, symbol: str) -> tuple[int, object] | None:
    """(address of ``symbol``, what keeps the code alive) once ``code`` is linked into this
    process; None if it cannot be (not an ELF object, or a symbol it needs is missing here)."""
    import llvmlite.binding as ll

    needed = undefined_symbols(code)
    if needed is None:
        return None
    with _lock:
        _register_numba_symbols()
        engine = _engine()  # also makes the process's own symbols visible to LLVM
        if any(not ll.address_of_symbol(name) for name in needed):
            return None
        engine.add_object_file(ll.ObjectFileRef.from_data(code))
        engine.finalize_object()
        address = engine.get_function_address(symbol)
    return (address, engine) if address else None


def _engine():
    """An MCJIT engine of its own for one object (dropped with the launch it holds), set up as
    Numba's JIT sets up its own."""
    import llvmlite.binding as ll
    from numba.core import config

    ll.initialize_native_target()
    ll.initialize_native_asmprinter()
    triple, name, features = target()
    machine = ll.Target.from_triple(triple).create_target_machine(
        cpu=name, features=features, opt=config.OPT, codemodel="jitdefault")
    return ll.create_mcjit_compiler(ll.parse_assembly(""), machine,
                                    use_lmm=config.USE_LLVMLITE_MEMORY_MANAGER)


def _register_numba_symbols() -> None:
    """Numba's C helpers, its runtime's functions and the exception objects, under the names
    Numba gives them (what ``numba.core.base`` and ``numba.core.runtime.nrt`` do before a first
    compile, without the rest of that set-up)."""
    global _registered
    if _registered:
        return
    import llvmlite.binding as ll
    from numba.core.base import _load_global_helpers
    from numba.core.runtime import _nrt_python

    _load_global_helpers()
    for name, address in _nrt_python.c_helpers.items():
        ll.add_symbol(name if name.startswith("_") else "NRT_" + name, address)
    _registered = True


def undefined_symbols(code: bytes) -> list[str] | None:
    """The symbols an ELF64 object refers to but does not define; None if ``code`` is not one
    (or not whole)."""
    if len(code) < 64 or code[:4] != b"\x7fELF" or code[4] != 2 or code[5] not in (1, 2):
        return None
    order = "<" if code[5] == 1 else ">"
    try:
        (section_at,) = struct.unpack_from(order + "Q", code, 0x28)
        size, count = struct.unpack_from(order + "HH", code, 0x3A)
        sections = [struct.unpack_from(order + "IIQQQQIIQQ", code, section_at + k * size)
                    for k in range(count)]
        found = []
        for _, kind, _, _, offset, length, link, _, _, entry in sections:
            if kind != 2:  # SHT_SYMTAB
                continue
            names_at = sections[link][4]
            for at in range(offset, offset + length, entry or 24):
                name_at, info, _, index = struct.unpack_from(order + "IBBH", code, at)
                if index == 0 and name_at and info >> 4 in (1, 2):  # undefined, global or weak
                    end = code.index(b"\0", names_at + name_at)
                    found.append(code[names_at + name_at:end].decode())
        return found
    except (struct.error, IndexError, ValueError, OverflowError, UnicodeDecodeError):
        return None
