"""The CPU launch's machine code across processes (``eagle.cpu.native``): linked only when it is
whole and every symbol it needs resolves, and a cached start compiles nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import llvmlite.binding as ll
import pytest

from eagle.cpu import native

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"


def _object(ir: str) -> bytes:
    ll.initialize_native_target()
    ll.initialize_native_asmprinter()
    machine = ll.Target.from_default_triple().create_target_machine(codemodel="jitdefault")
    return machine.emit_object(ll.parse_assembly(ir))


CALLS_MISSING = """
declare double @eagle_test_no_such_function(double)
define double @twice_missing(double %x) {
  %y = call double @eagle_test_no_such_function(double %x)
  ret double %y
}
"""
CALLS_EXP = """
declare double @exp(double)
define double @exp_plus_one(double %x) {
  %y = call double @exp(double %x)
  %z = fadd double %y, 1.0
  ret double %z
}
"""

elf = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF objects: Linux")


@elf
def test_the_symbols_an_object_needs_are_read_from_it():
    assert native.undefined_symbols(_object(CALLS_MISSING)) == ["eagle_test_no_such_function"]
    assert native.undefined_symbols(_object(CALLS_EXP)) == ["exp"]


@elf
def test_an_object_needing_a_symbol_this_process_lacks_is_not_linked():
    # Linked anyway, MCJIT resolves the missing function to a null address without a word,
    # and the first call crashes the process.
    assert native.load(_object(CALLS_MISSING), "twice_missing") is None


@elf
def test_an_object_whose_symbols_resolve_is_linked_and_runs():
    import ctypes

    address, keep = native.load(_object(CALLS_EXP), "exp_plus_one")
    function = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(address)
    assert function(0.0) == 2.0
    assert native.load(_object(CALLS_EXP), "no_such_symbol") is None


@pytest.mark.parametrize("data", [b"", b"\x7fELF", b"\x7fELF" + b"\x02\x01" + b"\xff" * 200,
                                  b"MZ" + b"\0" * 100])
def test_what_is_not_a_whole_elf_object_is_not_read(data):
    assert native.undefined_symbols(data) is None


def test_a_packed_object_unpacks_only_when_whole_and_unchanged():
    code = b"\x7fELF" + bytes(range(256)) * 4
    data = native.pack(code, "run_blocks_symbol")
    assert native.unpack(data) == (code, "run_blocks_symbol")
    flipped = bytearray(data)
    flipped[-100] ^= 1
    assert native.unpack(bytes(flipped)) is None
    assert native.unpack(data[:-1]) is None
    assert native.unpack(b"eagle-cpu-object 2\n" + data.split(b"\n", 1)[1]) is None
    first, header, body = data.split(b"\n", 2)
    assert native.unpack(first + b"\n{not json\n" + body) is None
    renamed = json.loads(header) | {"symbol": 7}
    assert native.unpack(first + b"\n" + json.dumps(renamed).encode() + b"\n" + body) is None


# A run in a fresh process: how many launches it compiled (``native.compile_ir`` counted), and
# whether Numba was imported at all (the CPU backend compiles with llvmlite alone).
CHILD = f"""
import json, sys
sys.path[:0] = [{str(TESTS)!r}, {str(SRC)!r}]
import numpy as np
import eagle
from eagle.cpu import native
from kernels import spread_oscillator

compiles = []
compile_ir = native.compile_ir
def counted(*modules_and_name, **options):
    compiles.append(modules_and_name[-1])
    return compile_ir(*modules_and_name, **options)
native.compile_ir = counted
n = 3000
values = dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
              t_end=np.linspace(0.1, 1.0, n), dt=1e-3)
ours = {{k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in values.items()}}
eagle.until_done(eagle.deploy(spread_oscillator), max_steps=5000, **ours).run()
print(json.dumps(dict(compiles=compiles, x=ours["x"].tolist(), numba="numba" in sys.modules)))
"""


def _child(cache: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          env={**os.environ, "EAGLE_CACHE_DIR": str(cache)}, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@elf
def test_a_cached_start_links_the_launch_and_never_imports_numba(tmp_path):
    first = _child(tmp_path)
    assert first["compiles"] == ["spread_oscillator"], "the first process compiles the launch"
    second = _child(tmp_path)
    assert second["compiles"] == []
    assert not first["numba"] and not second["numba"], "Numba was imported"
    assert second["x"] == first["x"]


@pytest.mark.skipif(not ll.get_process_triple().startswith("x86_64"), reason="an x86-64 CPU")
def test_eagle_cpu_name_and_features_choose_the_code_and_the_cache_key(monkeypatch):
    """Code for a generic x86-64 (a cache shared by different machines) is compiled for it,
    links and has a key of its own."""
    sys.path.insert(0, str(TESTS))
    from eagle.cpu import backend
    from eagle.cpu.emit import SYMBOL, emit_modules
    from eagle.cpu.layout import SHAPE
    from kernels import oscillator

    program = oscillator.specialize({})
    here = backend._entry(program, SHAPE)[1]
    host_code = native.compile_ir(*emit_modules(program), program.name)
    monkeypatch.setenv("EAGLE_CPU_NAME", "x86-64")
    monkeypatch.setenv("EAGLE_CPU_FEATURES", "")
    assert native.target()[1:] == ("x86-64", "")
    assert backend._entry(program, SHAPE)[1] != here
    code = native.compile_ir(*emit_modules(program), program.name)
    assert native.load(code, SYMBOL) is not None
    if ll.get_host_cpu_name() not in ("x86-64", "generic"):
        assert code != host_code  # SSE2 only, where this CPU has more


def test_a_step_that_calls_the_c_library_is_vectorised_lane_by_lane():
    """The adaptive ODE controller calls pow (the C library's, for the reference's bits): with
    the calls' vector variants the visit loop is widened and calls a variant, which calls the
    scalar function per lane; without them (before) the whole step ran one lane at a time,
    and the Numba per-sample peer was ahead (benchmarks/ode_width_gap.py)."""
    import re

    import hawk
    from eagle.cpu.emit import emit_modules
    from hawk import ode
    from ode_models import lorenz

    kernel = ode.dopri5_kernel(lorenz, hawk.Vec3, hawk.Vec3)
    steps, _ = emit_modules(kernel.specialize({}))
    machine = native._machine()
    module = ll.parse_assembly(steps)
    module.triple, module.data_layout = machine.triple, str(machine.target_data)
    tuning = ll.create_pipeline_tuning_options(speed_level=2)
    tuning.loop_vectorization = tuning.slp_vectorization = True
    passes = ll.create_pass_builder(machine, tuning)
    passes.getModulePassManager().run(module, passes)
    text = str(module)
    assert re.search(r"call <\d+ x double> @eagle_libm_pow_v\d+\(", text), "not widened"
    variant = text[text.index("define internal <8 x double> @eagle_libm_pow_v8"):]
    variant = variant[:variant.index("\n}")]
    assert variant.count("call double @eagle_libm_pow(") == 8  # each lane the scalar pow
