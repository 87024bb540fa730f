"""How kernels and funcs travel to Dask's processes (issue 45, defect 1): a kernel as its IR,
a func as its function and source text, neither with its module's globals. Before, a pickled
``dopri5_start_kernel(lorenz)`` took the script's whole namespace along (hundreds of kB with its
imports), and a script that imported a module of its own folder could not be read where that
module is not importable (the Dask scheduler: ``ModuleNotFoundError``)."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import hawk
from hawk.kernel import ProgramKernel

cloudpickle = pytest.importorskip("cloudpickle")
ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import numpy as np
import hawk
import local_helpers  # a module of the script's own folder, importable only here

BIG = np.arange(200_000.0)  # what a script's namespace holds: data, imports


@hawk.func
def lorenz(u, t, p):
    return hawk.vec3(p.x * (u.y - u.x), u.x * (p.y - u.z) - u.y, u.x * u.y - p.z * u.z)


lorenz.terminal = False
start = hawk.ode.dopri5_start_kernel(lorenz, hawk.Vec3, hawk.Vec3)
"""

READ_BACK = """
import pickle, sys
import hawk
kernel, func = pickle.loads(sys.stdin.buffer.read())
again = hawk.ode.dopri5_start_kernel(func, hawk.Vec3, hawk.Vec3)
print(kernel.program.digest(), again.program.digest(), func.terminal)
"""


@pytest.fixture
def script(tmp_path, monkeypatch):
    (tmp_path / "local_helpers.py").write_text("SCALE = 2.0\n")
    (tmp_path / "user_script.py").write_text(textwrap.dedent(SCRIPT))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = hawk.source.import_file(tmp_path / "user_script.py", "user_script", keep=False)
    yield module, tmp_path
    sys.modules.pop("local_helpers", None)


def test_a_kernel_travels_as_its_ir_without_the_scripts_namespace(script):
    module, _ = script
    sent = cloudpickle.dumps(module.start)
    alone = cloudpickle.dumps(ProgramKernel(module.start.program))
    assert len(sent) < 1.1 * len(alone) < 40_000, (len(sent), len(alone))
    back = pickle.loads(sent)
    assert isinstance(back, ProgramKernel)
    assert back.program.digest() == module.start.program.digest()


def test_a_kernel_and_a_func_are_read_back_where_neither_file_nor_module_exists(script):
    module, folder = script
    blob = cloudpickle.dumps((module.start, module.lorenz))
    assert len(cloudpickle.dumps(module.lorenz)) < 5_000
    for name in ("user_script.py", "local_helpers.py"):
        (folder / name).unlink()  # the other process has neither
    done = subprocess.run([sys.executable, "-c", READ_BACK], input=blob, capture_output=True,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""}, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    sent_digest, rebuilt_digest, terminal = done.stdout.decode().split()
    assert sent_digest == rebuilt_digest == module.start.program.digest()
    assert terminal == "False"


def test_a_kernel_of_another_ir_format_is_refused_before_it_is_read(monkeypatch):
    from hawk import wire
    from kernels import oscillator

    blob = pickle.dumps(oscillator)
    monkeypatch.setattr(wire, "ir_format_digest", lambda: "0123456789abcdef")
    with pytest.raises(wire.IRFormatError, match=r"the sender's IR format \(digest \w+\) is "
                                                 r"not this process's \(0123456789abcdef\)"):
        pickle.loads(blob)


def test_a_travelled_kernel_keeps_each_specialisation():
    from kernels import oscillator

    as32 = oscillator.specialize({"x": "float32", "v": "float32"})
    back = pickle.loads(pickle.dumps(oscillator))
    assert back.specialize({"x": np.float32, "v": np.float32}).digest() == as32.digest()
    assert back.specialize({}).digest() == oscillator.program.digest()
    with pytest.raises(TypeError, match="was specialised for x as float64, got int64"):
        back.specialize({"x": "int64"})


def test_nothing_says_numba_is_checked_or_needed_on_workers():
    """Issue 45, defect 4: the CPU backend compiles with llvmlite, so no worker needs Numba and
    the environment guard does not look for it. (Already true of this tree when the issue was
    worked: this keeps it so.)"""
    ed = pytest.importorskip("eagle.distributed")
    assert not any("numba" in key.lower() for key in ed.environment())
    places = [*(ROOT / "src/eagle/distributed").glob("*.py"),
              *(ROOT / "docs/guide/many-machines").glob("*.md")]
    for path in places:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            lowered = line.lower()
            if "numba" in lowered and "no worker needs" not in lowered:
                raise AssertionError(f"{path.relative_to(ROOT)}:{number} mentions Numba: {line}")
