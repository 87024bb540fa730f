"""Every kernel example in docs/language.md compiles (and every `python error` block does not),
and the Monte Carlo page's examples run and agree with their closed forms.

hawk reads a kernel's source with ``inspect.getsource``, so each block is written to a file of its
own, after the imports the page says its examples assume, and imported from there: its kernels
are compiled, and its top-level code (the RK4 and Boris examples simulate with eagle on the CPU
and check their results with ``assert``) runs. Where NVRTC is installed, each block's kernels
are also compiled to CUDA cubins.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import hawk
from hawk.source import import_file

DOC = Path(__file__).resolve().parents[1] / "docs" / "language.md"
PRELUDE = """\
import math

import numpy as np

import eagle
import hawk
from hawk import Mutable, Out, Param, Scalar, Series, Table, Terminated, Vec2, Vec3, Vec4
"""
_FENCE = re.compile(r"^```(python(?: error)?)\n(.*?)^```", re.S | re.M)


def _blocks(kind: str) -> list:
    text = DOC.read_text()
    found = []
    for match in _FENCE.finditer(text):
        if match.group(1) == kind and "@hawk.kernel" in match.group(2):
            line = text.count("\n", 0, match.start()) + 1
            found.append(pytest.param(match.group(2), id=f"line{line}"))
    return found


KERNEL_BLOCKS = _blocks("python")
ERROR_BLOCKS = _blocks("python error")
_MODULES: dict[str, object] = {}


def _import(source: str, folder: Path, name: str):
    path = folder / f"{name}.py"
    path.write_text(PRELUDE + "\n" + source)
    return import_file(path, name, keep=False)


def _module(source: str, tmp_path_factory):
    """The block imported (and so run) once per session, shared by the tests below."""
    if source not in _MODULES:
        name = f"doc_block_{len(_MODULES)}"
        _MODULES[source] = _import(source, tmp_path_factory.mktemp(name), name)
    return _MODULES[source]


def _kernels(module) -> list:
    return [v for v in vars(module).values() if isinstance(v, hawk.Kernel)]


def test_the_page_has_examples():
    assert len(KERNEL_BLOCKS) >= 11
    assert len(ERROR_BLOCKS) >= 6
    text = "".join(p.values[0] for p in KERNEL_BLOCKS)
    for construct in ("@hawk.func", "hawk.cross(", "hawk.normalize(", "Vec2", "Vec4",
                      "for i in range(", "eagle.simulate(", "assert np.allclose"):
        assert construct in text, construct


@pytest.mark.slow
@pytest.mark.parametrize("source", KERNEL_BLOCKS)
def test_kernel_example_runs(source, tmp_path_factory):
    kernels = _kernels(_module(source, tmp_path_factory))
    assert kernels, "the block defines no kernel"
    for k in kernels:
        assert k.program.ops  # lowered to a non-empty program


@pytest.mark.parametrize("source", KERNEL_BLOCKS)
def test_kernel_example_compiles_to_a_cubin(source, tmp_path_factory):
    nvrtc = pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.emit import STEP_KERNEL, emit_cuda

    for k in _kernels(_module(source, tmp_path_factory)):
        cubin = nvrtc.compile_source(emit_cuda(k.program), "sm_80")
        assert cubin[:4] == b"\x7fELF" and STEP_KERNEL.encode() in cubin


@pytest.mark.parametrize("source", ERROR_BLOCKS)
def test_error_example_does_not_compile(source, tmp_path, request):
    with pytest.raises(hawk.CompileError) as info:
        _import(source, tmp_path, f"doc_error_{request.node.callspec.id}")
    assert info.value.lineno is not None
    assert "^" in str(info.value)


MONTE_CARLO = DOC.parent / "guide" / "monte-carlo" / "monte-carlo.md"
_CELL = re.compile(r"^```\{code-cell\} python\n(.*?)^```", re.S | re.M)


@pytest.mark.slow
def test_the_monte_carlo_examples_match_their_closed_forms(tmp_path, capsys):
    """The page's cells, run in order as one module (as the docs build runs them): the barrier
    option and the first-passage time differ from the continuous closed forms by their
    discretisation bias (several standard errors, on the side the page explains) and agree with
    the corrected ones within three standard errors."""
    cells = _CELL.findall(MONTE_CARLO.read_text())
    assert len(cells) == 3
    path = tmp_path / "monte_carlo_page.py"
    path.write_text("\n\n".join(cells))
    page = import_file(path, "monte_carlo_page", keep=False)
    assert page.price - page.continuous > 3 * page.standard_error
    assert abs(page.price - page.shifted) < 3 * page.standard_error
    assert page.mean_time - page.expected > 3 * page.time_error
    assert abs(page.mean_time - page.corrected) < 3 * page.time_error
    assert "standard errors" in capsys.readouterr().out
