"""Golden text of the emitted code: the spec's oscillator and a Vec3 kernel (``falling``), at
float64, as LLVM IR (``eagle.cpu.emit``) and as CUDA C++ (``eagle.cuda.emit``), compared
exactly with the files in ``tests/golden/``.

A deliberate change to an emitter updates these files in the same commit: run
``EAGLE_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py`` (which rewrites the files
instead of comparing them) and review the diff with ``git diff tests/golden``.
"""

from __future__ import annotations

import difflib
import hashlib
import os
from pathlib import Path

import pytest

from eagle.cpu.backend import EMITTER_VERSION
from eagle.cpu.emit import emit_launch
from eagle.cuda.emit import emit_cuda
from kernels import falling, oscillator

GOLDEN = Path(__file__).resolve().parent / "golden"
KERNELS = {"oscillator": oscillator, "falling": falling}
EMITTERS = {"ll.txt": emit_launch, "cu": emit_cuda}


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


def test_a_change_to_the_cpu_emitter_bumps_its_version():
    """The CPU cache keys a launch's object code by ``EMITTER_VERSION``, not by the emitted
    text: emitted code that changes under the same version would let a later process link the
    old code from a cache entry. ``golden/cpu-emitter-version.txt`` records the version with
    the SHA-256 of the LLVM IR golden texts; new texts under the version it records fail here,
    and ``EAGLE_UPDATE_GOLDEN=1`` records new texts only under a new version."""
    texts = "".join(emit_launch(KERNELS[name].specialize({})) for name in sorted(KERNELS))
    digest = hashlib.sha256(texts.encode()).hexdigest()
    path = GOLDEN / "cpu-emitter-version.txt"
    version, recorded = path.read_text().split() if path.exists() else ("none", "none")
    if recorded != digest and version == str(EMITTER_VERSION):
        pytest.fail(f"the CPU emitter's output changed but EMITTER_VERSION is still {version}: "
                    "bump it in eagle/cpu/backend.py, then rerun with EAGLE_UPDATE_GOLDEN=1",
                    pytrace=False)
    if os.environ.get("EAGLE_UPDATE_GOLDEN") == "1":
        path.write_text(f"{EMITTER_VERSION} {digest}\n")
        return
    assert (version, recorded) == (str(EMITTER_VERSION), digest), (
        f"{path} records version {version}; EMITTER_VERSION is {EMITTER_VERSION}: "
        "rerun with EAGLE_UPDATE_GOLDEN=1")
