"""Golden text of the emitted code: the spec's oscillator and a Vec3 kernel (``falling``), at
float64, as Numba source (``eagle.cpu.emit``) and as CUDA C++ (``eagle.cuda.emit``), compared
exactly with the files in ``tests/golden/``.

A deliberate change to an emitter updates these files in the same commit: run
``EAGLE_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py`` (which rewrites the files
instead of comparing them) and review the diff with ``git diff tests/golden``.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from eagle.cpu.emit import emit_launch
from eagle.cuda.emit import emit_cuda
from kernels import falling, oscillator

GOLDEN = Path(__file__).resolve().parent / "golden"
KERNELS = {"oscillator": oscillator, "falling": falling}
EMITTERS = {"numba.py.txt": emit_launch, "cu": emit_cuda}


@pytest.mark.parametrize("suffix", list(EMITTERS))
@pytest.mark.parametrize("name", list(KERNELS))
def test_emitted_code_matches_golden_file(name, suffix):
    text = EMITTERS[suffix](KERNELS[name].specialize({}))  # float64 everywhere
    path = GOLDEN / f"{name}.{suffix}"
    if os.environ.get("EAGLE_UPDATE_GOLDEN") == "1":
        path.write_text(text)
        return
    assert path.exists(), f"{path} is missing: run with EAGLE_UPDATE_GOLDEN=1 to create it"
    expected = path.read_text()
    if text != expected:
        diff = list(difflib.unified_diff(expected.splitlines(), text.splitlines(),
                                         f"golden/{path.name}", "emitted", lineterm=""))
        shown = "\n".join(diff[:80]) + ("\n..." if len(diff) > 80 else "")
        pytest.fail(f"the emitted code differs from {path} ({len(diff)} diff lines):\n{shown}\n"
                    "If the change is deliberate, update the golden files in the same commit: "
                    "EAGLE_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py",
                    pytrace=False)
