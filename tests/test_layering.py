"""The architecture's rules, checked on the source so they stay true (docs/architecture.md):
hawk never imports eagle, and nothing above eagle's backends asks which device it is."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
#: the modules that may know device names: the backends, the registry, and the GPU-only tools
#: (graph pipelines and composers, compiled artifacts, and ``python -m eagle compile``)
DEVICE_MODULES = {"eagle/backend.py", "eagle/pipeline.py", "eagle/compose.py", "eagle/loaded.py",
                  "eagle/__main__.py"}


def _modules(package: str):
    for path in sorted((SRC / package).rglob("*.py")):
        yield path.relative_to(SRC).as_posix(), ast.parse(path.read_text(), str(path))


def test_hawk_never_imports_eagle():
    for name, tree in _modules("hawk"):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = [node.module or ""] if node.level == 0 else []
            else:
                continue
            assert not any(t == "eagle" or t.startswith("eagle.") for t in targets), \
                f"{name}:{node.lineno} imports {targets}"
    done = subprocess.run([sys.executable, "-c", "import sys, hawk, hawk.__main__, hawk.passes, "
                           "hawk.reference; print('eagle' in sys.modules)"],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr


def _device_literal(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)
            and (node.value in ("cpu", "gpu", "cuda") or node.value.startswith("cuda:")))


def test_no_device_branch_outside_the_backends():
    found = []
    for name, tree in _modules("eagle"):
        if name in DEVICE_MODULES or name.startswith(("eagle/cpu/", "eagle/cuda/")):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and any(
                    _device_literal(side) for side in [node.left, *node.comparators]):
                found.append(f"{name}:{node.lineno} compares with a device name")
            if isinstance(node, ast.ImportFrom) and node.level > 0 and (node.module or "") \
                    .split(".")[0] in ("cpu", "cuda"):
                found.append(f"{name}:{node.lineno} imports eagle.{node.module}")
    assert not found, "\n".join(found)


def test_hawk_compile_points_to_eagle_compile():
    done = subprocess.run([sys.executable, "-m", "hawk", "compile", "k.py:k", "--target", "ptx"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "python -m eagle compile" in done.stderr
