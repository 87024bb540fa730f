"""Run a documentation page's code cells in order, as the docs build runs them, without Sphinx.

gpu-check uses it on a machine that has a GPU and no Sphinx: the spec page's cells must run
unchanged there, on the GPU. Every ``{code-cell} python`` block of the MyST page runs in one
namespace, from the page's own folder, with matplotlib's Agg backend; ``myst_nb.glue`` prints
its value where myst-nb is absent. A cell tagged ``gpu`` is skipped where no GPU is usable, as
the docs build skips it (``--require-gpu``: and the run fails). The first cell that raises ends
the run (exit 1) with its traceback.

    python scripts/run_page.py [--require-gpu] docs/guide/what-a-graph-is/what-a-graph-is.md
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import time
import traceback
import types
from pathlib import Path

CELL = re.compile(r"^```\{code-cell\}\s*python[^\n]*\n(.*?)^```\s*$", re.S | re.M)


def cells(page: str) -> list[tuple[str, set[str]]]:
    """The page's python code cells (without their ``:option:`` lines) and their tags."""
    found = []
    for block in CELL.findall(page):
        lines, tags = block.splitlines(), set()
        while lines and re.match(r"^:\w[\w-]*:", lines[0]):
            option = lines.pop(0)
            if option.startswith(":tags:"):
                tags = set(re.findall(r"[\w-]+", option[len(":tags:"):]))
        found.append(("\n".join(lines) + "\n", tags))
    return found


def _glue_stand_in() -> None:
    try:
        import myst_nb  # noqa: F401
    except ImportError:
        module = types.ModuleType("myst_nb")
        module.glue = lambda name, value, display=True: print(f"glue {name} = {value}")
        sys.modules["myst_nb"] = module


def main(argv: list[str]) -> int:
    require_gpu = "--require-gpu" in argv
    argv = [arg for arg in argv if arg != "--require-gpu"]
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    page = Path(argv[0]).resolve()
    code = cells(page.read_text())
    if not code:
        print(f"run_page: {page} has no python code cells", file=sys.stderr)
        return 1
    os.environ.setdefault("MPLBACKEND", "Agg")
    _glue_stand_in()
    os.chdir(page.parent)
    namespace: dict = {"__name__": "__main__"}
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "_shared"))
    from nb_helpers import gpu_available  # what docs/conf.py asks before a `gpu` cell

    gpu, skipped = gpu_available(), 0
    for number, (source, tags) in enumerate(code, 1):
        if "gpu" in tags and not gpu:  # as the docs build does without a GPU
            print(f"--- cell {number} of {len(code)}: skipped, it needs a GPU", flush=True)
            skipped += 1
            continue
        print(f"--- cell {number} of {len(code)}", flush=True)
        start = time.perf_counter()
        try:
            filename = f"<{page.name} cell {number}>"
            # hawk reads a kernel's source as Jupyter lets it: from the line cache
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            exec(compile(source, filename, "exec"), namespace)
        except Exception:
            traceback.print_exc()
            print(f"run_page: cell {number} of {len(code)} raised", flush=True)
            return 1
        print(f"--- cell {number}: {time.perf_counter() - start:.2f} s", flush=True)
    print(f"run_page: {len(code) - skipped} of {len(code)} cells of {page.name} ran"
          + (f", {skipped} skipped for want of a GPU" if skipped else ""), flush=True)
    return 1 if skipped and require_gpu else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
