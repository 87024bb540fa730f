"""``python -m hawk``: look at what hawk makes of a kernel, without a GPU.

    python -m hawk ir MODULE.py:KERNEL [--dtype NAME=float32 ...] [--stages]

``ir`` prints the IR every backend compiles (after ``hawk.passes.optimize``); ``--stages`` adds
each op's stage (launch, sample or step: ``hawk.passes.classify``). Compiling a kernel to CUDA
source, PTX or a cubin is the runtime's: ``python -m eagle compile`` (hawk never imports eagle).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .ir import Program
from .kernel import Kernel
from .passes import classify
from .source import import_file


def load_kernel(spec: str) -> Kernel:
    """The kernel named by ``path/to/module.py:name``."""
    path_text, sep, name = spec.rpartition(":")
    if not sep or not path_text or not name:
        raise SystemExit(f"hawk: expected MODULE.py:KERNEL, got {spec!r}")
    path = Path(path_text).resolve()
    if not path.is_file():
        raise SystemExit(f"hawk: no such file {path_text!r}")
    sys.path.insert(0, str(path.parent))
    module = import_file(path, path.stem)
    kernel = getattr(module, name, None)
    if not isinstance(kernel, Kernel):
        found = ", ".join(k for k, v in vars(module).items() if isinstance(v, Kernel))
        raise SystemExit(f"hawk: {path_text} has no hawk kernel {name!r} "
                         f"(kernels there: {found or 'none'})")
    return kernel


def dtypes_of(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        name, sep, dtype = pair.partition("=")
        if not sep:
            raise SystemExit(f"hawk: --dtype takes NAME=DTYPE, got {pair!r}")
        out[name] = dtype
    return out


def with_stages(program: Program) -> str:
    """``program``'s text with each op's stage at the end of its line."""
    lines = str(program).splitlines()
    stages = iter(classify(program))
    width = max((len(line) for line in lines if line.startswith("  %")), default=0)
    return "\n".join(f"{line:<{width}}  # {next(stages).name.lower()}"
                      if line.startswith("  %") else line for line in lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["compile"]:
        print("hawk: 'python -m hawk compile' is now 'python -m eagle compile' (same options): "
              "compiled artifacts belong to eagle's CUDA backend", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog="python -m hawk", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    ir = commands.add_parser("ir", help="print the kernel's IR")
    ir.add_argument("kernel", help="MODULE.py:KERNEL")
    ir.add_argument("--dtype", action="append", default=[], metavar="NAME=DTYPE",
                    help="a parameter's dtype (default float64)")
    ir.add_argument("--stages", action="store_true",
                    help="mark each op launch, sample or step (what may be hoisted out of the "
                         "step loop)")
    args = parser.parse_args(argv)
    program = load_kernel(args.kernel).specialize(dtypes_of(args.dtype))
    print(with_stages(program) if args.stages else program)
    return 0


if __name__ == "__main__":
    sys.exit(main())
