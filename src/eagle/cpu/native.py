"""Machine code of a compiled CPU launch: LLVM IR compiled to an object, kept across processes.

``compile_ir`` optimises the emitter's LLVM IR (``cpu.emit``) and writes the object code for
this machine; the cache entry keeps it (``pack``), and a later process links it into its own
memory with llvmlite's MCJIT (``load``) and calls it through ctypes: a few milliseconds.

The object refers to a few symbols outside itself: the C library's math functions, under
eagle's own names for them (``llvm_ops.libm_symbol``, bound here to the C library's), and
``fmod``/``memset``/``memcpy``, which the process has. An object is linked only if every symbol
it needs resolves in this process (an unresolved one would be a null address, found only when
called). Only ELF objects (Linux) are read that closely; elsewhere an object is not loaded, and
each process compiles its launch.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import os
import struct
import threading

from .llvm_ops import FACTOR_SYMBOL_PREFIX, LIBM, libm_symbol

__all__ = ["target", "compile_ir", "pipeline", "instructions", "pack", "header", "unpack",
           "source_sha256", "load", "undefined_symbols"]

_FORMAT = b"eagle-cpu-object 1\n"
#: The most instructions (``instructions``) of a steps' module that LLVM's vectorisers run on.
#: The loop vectoriser runs a visit for several samples at once (SIMD across the ensemble),
#: but its cost grows faster than the visit: ``benchmarks/stiff_compile.py`` (``rodas5p`` on
#: the Brusselator, 64 members from t = 0 to 10 at rtol = atol = 1e-6, one thread; a shared
#: 2-core machine at load 3 to 8: run times vary by 2x or more between runs) measured, with
#: both vectorisers against none, two runs each where two are given::
#:
#:     states  instructions  LLVM s (both / none)        run ms (both / none)
#:          4         1,816  0.84 / 0.33, 0.91 / 0.49    2.4 /  6.8, 2.5 /  8.8
#:          8         4,516  2.69 / 1.06, 3.85 / 0.55    4.4 / 19.7, 9.1 / 10.4
#:         12         9,022  25.6 / 2.87                23.9 / 49.7
#:         16        15,848   147 / 2.52, 59.7 / 6.21   31.7 / 34.1, 19.9 / 86.2
#:
#: so up to 8 states the vectorisers cost 0.4 to 3.3 s and save up to 0.24 ms a member
#: (paid back by ensembles of thousands), at 12 states they cost 23 s (paid back by about
#: 57,000 members) and at 16 states 55 to 145 s (paid back, at the better of the two run
#: times, by about 60,000). The SLP vectoriser alone bought nothing on these kernels (4 and 8
#: states: run time equal to none's or worse; 8 s more to compile at 16 states). Hence both up
#: to 6,000 instructions, neither above. The results are the same bits either way (no
#: fast-math flags: vectorising reorders no arithmetic), which the benchmark checks.
VECTORISER_LIMIT = 6_000
#: The most instructions of a steps' module that LLVM's machine scheduler runs on (in code
#: generation). The scheduler orders a basic block's instructions, and the visit is one basic
#: block of them: its cost grows about with the square. On the captured steps' module of
#: ``rodas5p`` (the O2 pipeline, no vectorisers): at 16 states (15,848 instructions) code
#: generation took 2.1 s with it; at 24 states 23.4 s with it and 3.05 s without (object 1.5 %
#: larger); at 32 states the whole LLVM step took 189 s with it and 25 s without (the run
#: 15 % slower, one run each). At 16 states (3.5 s against 6.2 s to compile) the runs without
#: it were 0.7x and 1.6x the time of those with it: noise, so it stays on up to 20,000
#: instructions. Without either, code generation is still superlinear (at 32 states 14.7 s of
#: the 25; at 64 states, 465,088 instructions, LLVM took 515 s): the rest is the register
#: allocator and instruction selection on one block, which only loops over scratch memory in
#: place of the unrolled LU would bound (issue 42).
SCHEDULER_LIMIT = 20_000
#: LLVM's optimisation levels for a kernel whose samples take one step each (``compile_ir``'s
#: ``once``; the ODE solvers' first-step kernel): the -O1 pass pipeline without either
#: vectoriser, and code generation at -O0 (fast instruction selection and register
#: allocation). It runs once per sample, so compiling it fast beats running it fast.
#: ``rodas5p``'s first-step kernel on the Brusselator (a shared 2-core machine at load 3 to 7,
#: one thread), compile and run against code generation at -O1, 20,000 samples: at 16 states
#: 0.10 s and 0.38 us a sample against 0.18 s and 0.31 us; at 64 states 0.25 s and 1.61 us
#: against 0.59 s and 1.82 us; at 128 states 0.43 s and 3.05 us against 1.1 to 1.6 s and
#: 3.9 us (the -O1 passes took 0.05 s of it, code generation the rest); at 128 states on
#: 2,000 samples 6.2 us against 3.5 us for -O2 with the vectorisers: a few microseconds a
#: sample either way, where the 128-state solve after it takes 10 ms a member. In a whole
#: first ``solve`` (``benchmarks/stiff_compile.py``'s ``1st llvm`` column, arms ``auto``
#: against ``no-once``, 64 members, two runs at load 2.7 to 3.9) its LLVM time went from 0.26 s
#: to 0.05-0.08 s at 16 states, from 1.3-2.1 s to 0.11 s at 64 (the first ``solve`` from
#: 4.3-5.3 s to 3.1-3.2 s), and from 1.4-1.7 s to 0.21-0.24 s at 128.
#: Every level gives the same bits (no fast-math flags; the benchmark checks).
ONCE_SPEED_LEVEL = 1
ONCE_CODEGEN_LEVEL = 0
_lock = threading.Lock()


def target() -> tuple[str, str, str]:
    """What machine code compiled in this process is for: (triple, CPU name, CPU features),
    this CPU's unless ``EAGLE_CPU_NAME`` and ``EAGLE_CPU_FEATURES`` say otherwise (e.g.
    ``generic`` and ``""``: code that runs on any CPU of the architecture, for a cache shared
    by different machines)."""
    import llvmlite.binding as ll

    name = os.environ.get("EAGLE_CPU_NAME") or ll.get_host_cpu_name()
    features = os.environ.get("EAGLE_CPU_FEATURES")
    if features is None:
        features = ll.get_host_cpu_features().flatten()
    return ll.get_process_triple(), name, features


def compile_ir(steps: str, machinery: str, name: str, once: bool = False) -> bytes:
    """The object code of a launch (``emit.emit_modules``) for this machine (``target``): the
    steps' module through LLVM's -O2 pipeline, loop and SLP vectorisation included up to a
    size, and the machine scheduler in code generation up to a larger one (``pipeline``:
    both superlinear in a visit's one basic block; LLVM's process-wide ``-enable-misched``
    option is turned off for the one compile, under this module's lock); the
    machinery's through promotion to registers, instruction combining and CFG simplification
    only (its loops run once per set or per lane of a launch: the full pipeline took three
    times as long for nothing measurable); then linked into one object. ``once``: a kernel
    whose samples take one step each (``hawk.ir.Program.runs_once``: the ODE solvers' first
    step) goes through the -O1 passes without the vectorisers and code generation at -O0
    (``ONCE_SPEED_LEVEL``, ``ONCE_CODEGEN_LEVEL``): it runs once per sample, so compiling it
    fast beats running it fast. ``name`` (the kernel's) is in the error raised for text LLVM
    refuses."""
    import llvmlite.binding as ll

    loop, slp, scheduler = pipeline(steps)
    if once:
        loop = slp = False
    with _lock:
        machine = _machine(ONCE_CODEGEN_LEVEL if once else 2 if scheduler else 1)
        modules = []
        for text in (steps, machinery):
            try:
                module = ll.parse_assembly(text)
                module.verify()
            except RuntimeError as exc:
                raise RuntimeError(f"eagle generated LLVM IR for kernel {name!r} that LLVM "
                                   f"refuses (an eagle bug; please report it): {exc}") from None
            module.triple = machine.triple
            module.data_layout = str(machine.target_data)
            modules.append(module)
        fast, light = modules
        tuning = ll.create_pipeline_tuning_options(speed_level=ONCE_SPEED_LEVEL if once else 2)
        tuning.loop_vectorization, tuning.slp_vectorization = loop, slp
        passes = ll.create_pass_builder(machine, tuning)
        passes.getModulePassManager().run(fast, passes)
        simple = ll.create_new_module_pass_manager()
        simple.add_sroa_pass()
        simple.add_instruction_combine_pass()
        simple.add_simplify_cfg_pass()
        simple.run(light, passes)
        fast.link_in(light)
        if scheduler:
            return bytes(machine.emit_object(fast))
        ll.set_option("eagle", "-enable-misched=false")
        try:
            return bytes(machine.emit_object(fast))
        finally:
            ll.set_option("eagle", "-enable-misched=true")


def instructions(text: str) -> int:
    """The instructions of a module's text (its lines that assign a value or store one)."""
    return text.count(" = ") + text.count("  store ")


def pipeline(steps: str) -> tuple[bool, bool, bool]:
    """(loop vectoriser, SLP vectoriser, machine scheduler) for the steps' module ``steps``,
    by its size (``instructions``): the vectorisers up to ``VECTORISER_LIMIT``, the machine
    scheduler up to ``SCHEDULER_LIMIT`` (see there: both measured on the stiff kernels). A
    step that factorises a matrix (``llvm_blocks``) calls out, so its lane loop is never
    vectorised: no vectorisers for it, whatever its size."""
    size = instructions(steps)
    vectorise = size <= VECTORISER_LIMIT and f"call void @{FACTOR_SYMBOL_PREFIX}" not in steps
    return vectorise, vectorise, size <= SCHEDULER_LIMIT


_machines: dict[tuple[tuple[str, str, str], int], object] = {}


def _machine(level: int = 2):
    """The target machine of ``target()`` generating code at optimisation ``level`` (one per
    target and level in a process: ``EAGLE_CPU_NAME`` is read at every compile, as the cache
    key reads it)."""
    key = (target(), level)
    if key not in _machines:
        _machines[key] = _new_machine(*key)
    return _machines[key]


def _new_machine(target_: tuple[str, str, str], level: int):
    """A target machine for (triple, CPU name, CPU features), LLVM's targets initialised."""
    import llvmlite.binding as ll

    ll.initialize_native_target()
    ll.initialize_native_asmprinter()
    triple, name, features = target_
    return ll.Target.from_triple(triple).create_target_machine(
        cpu=name, features=features, opt=level, codemodel="jitdefault")


def pack(code: bytes, symbol: str, source_sha256: str | None = None,
         seal: str | None = None) -> bytes:
    """One cache file: a format line, a JSON line (the symbol to call, the code's SHA-256, the
    SHA-256 of the source it was compiled from and the entry's seal: ``eagle.cache.seal``),
    then the object code."""
    header = json.dumps({"symbol": symbol, "sha256": hashlib.sha256(code).hexdigest(),
                         "source": source_sha256, "seal": seal})
    return _FORMAT + header.encode() + b"\n" + code


def header(data: bytes) -> dict | None:
    """The JSON line of a ``pack``ed file (None: not a packed file, or no object there)."""
    if not data.startswith(_FORMAT):
        return None
    line = data[len(_FORMAT):].partition(b"\n")[0]
    try:
        meta = json.loads(line)
    except ValueError:
        return None
    return meta if isinstance(meta, dict) else None


def source_sha256(data: bytes) -> str | None:
    """The SHA-256 of the source a ``pack``ed file says its code came from (None: not said,
    or not a packed file)."""
    digest = (header(data) or {}).get("source")
    return digest if isinstance(digest, str) else None


def unpack(data: bytes) -> tuple[bytes, str] | None:
    """(object code, symbol) of a ``pack``ed file, None unless it is whole and its code's
    SHA-256 verifies (what it is sealed to is the cache entry's to check)."""
    meta = header(data)
    if meta is None:
        return None
    code = data[len(_FORMAT):].partition(b"\n")[2]
    symbol, digest = meta.get("symbol"), meta.get("sha256")
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
        _register_libm()
        engine = _engine()  # also makes the process's own symbols visible to LLVM
        if any(not ll.address_of_symbol(name) for name in needed):
            return None
        engine.add_object_file(ll.ObjectFileRef.from_data(code))
        engine.finalize_object()
        address = engine.get_function_address(symbol)
    return (address, engine) if address else None


def _engine():
    """An MCJIT engine of its own for one object (dropped with the launch it holds), with a
    target machine of its own: the engine takes it over and disposes of it."""
    import llvmlite.binding as ll

    return ll.create_mcjit_compiler(ll.parse_assembly(""), _new_machine(target(), 2))


def _register_libm() -> None:
    """The C library functions generated modules call, under eagle's names for them
    (``llvm_ops.libm_symbol``): the same functions Python's ``math`` calls."""
    global _libm_registered
    if _libm_registered:
        return
    import llvmlite.binding as ll

    library = ctypes.CDLL(ctypes.util.find_library("m") or None)
    for name in LIBM:
        ll.add_symbol(libm_symbol(name), ctypes.cast(getattr(library, name), ctypes.c_void_p).value)
    _libm_registered = True


_libm_registered = False


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
