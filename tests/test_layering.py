"""The architecture's rules, checked on the source so they stay true (docs/architecture.md):
hawk never imports eagle, nothing above eagle's backends asks which device it is, no module of
``src/`` imports another in a circle (imports inside functions count too), and a module longer
than ``MAX_LINES`` says why in its docstring."""

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


#: a module longer than this says why in its docstring, with these words
MAX_LINES = 750
LONG_REASON = "Why this module is long:"


def _module_names() -> dict[str, Path]:
    names = {}
    for path in sorted(SRC.rglob("*.py")):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        names[name.removesuffix(".__init__")] = path
    return names


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``src/`` that ``name`` imports, anywhere in its file (inside functions
    and ``if TYPE_CHECKING`` blocks too); a package and its own submodules are not counted
    as importing each other (``hawk`` re-exports ``hawk.kernel``'s names)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            module = (f"{base}.{node.module}" if node.module else base) if node.level \
                else node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    modules = set()
    for target in found:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name and not target.startswith(name + ".") \
                and not name.startswith(target + "."):
            modules.add(target)
    return modules


def import_circles() -> list[list[str]]:
    """Each set of modules of ``src/`` that import one another in a circle (Tarjan's strongly
    connected components of the import graph with more than one module)."""
    known = _module_names()
    graph = {name: _imports(name, path, known) for name, path in known.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def test_no_module_imports_another_in_a_circle():
    assert import_circles() == [], (
        "modules that import one another (at the top or inside a function): move what both "
        "need into a module below them, or pass it in")


def test_the_circle_check_sees_imports_inside_functions(tmp_path, monkeypatch):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("def f():\n    from .a import g\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    assert import_circles() == [["pkg.a", "pkg.b"]]


def test_a_long_module_says_why():
    long = []
    for name, path in _module_names().items():
        lines = path.read_text().count("\n")
        if lines > MAX_LINES and LONG_REASON not in (ast.get_docstring(ast.parse(
                path.read_text())) or ""):
            long.append(f"{name}: {lines} lines")
    assert not long, (f"split these by job, or say in the docstring {LONG_REASON!r} ...: "
                      + ", ".join(long))



def _method_lists(tree: ast.AST, names: set[str]):
    """``(line, names)`` of each tuple, list, set or dict literal in ``tree`` whose items (a
    dict's keys) include two or more method names; ``__all__`` (a module's public names, some
    of which, ``euler`` and ``rk4``, are a method's too) is not a method list."""
    skipped = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = node.elts
        elif isinstance(node, ast.Dict):
            items = [key for key in node.keys if key is not None]
        else:
            continue
        found = [item.value for item in items
                 if isinstance(item, ast.Constant) and item.value in names]
        if len(found) >= 2:
            yield node.lineno, found


def test_no_method_list_is_written_but_the_registry():
    """``hawk.ode.METHODS`` is the one method list: no module of ``src/`` but
    ``hawk/ode/methods.py`` writes two method names in one literal (a list, tuple, set or dict:
    it reads the registry instead), and no test, benchmark, example or doc writes out one of
    the registry's classes (every method, or every adaptive, implicit, fixed, stochastic or
    explicit one) in place of reading it; a test may still name the few methods it is about."""
    import hawk.ode

    methods = hawk.ode.METHODS
    names = set(methods)
    classes = {"every method": names,
               "the adaptive methods": {n for n, m in methods.items() if m.adaptive},
               "the implicit methods": {n for n, m in methods.items() if m.implicit},
               "the fixed-step methods": {n for n, m in methods.items() if m.kind == "fixed"},
               "the stochastic methods": {n for n, m in methods.items() if m.stochastic},
               "the explicit tableau methods": {n for n, m in methods.items() if m.tableau}}
    written = []
    for path in sorted(SRC.rglob("*.py")):
        name = path.relative_to(SRC).as_posix()
        if name == "hawk/ode/methods.py":
            continue
        written += [f"src/{name}:{line}: {found}"
                    for line, found in _method_lists(ast.parse(path.read_text()), names)]
    root = SRC.parent
    for folder in ("tests", "benchmarks", "examples", "docs"):
        for path in sorted((root / folder).rglob("*.py")):
            for line, found in _method_lists(ast.parse(path.read_text()), names):
                for what, members in classes.items():
                    if len(members) >= 2 and set(found) == members:
                        written.append(f"{path.relative_to(root)}:{line}: {what}, {found}")
    assert not written, ("method lists written outside hawk.ode.METHODS (read the registry: "
                         f"hawk.ode.METHODS, eagle.ode.ADAPTIVE/IMPLICIT): {written}")
