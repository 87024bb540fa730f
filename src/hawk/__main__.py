"""``python -m hawk``: look at what hawk makes of a kernel, without a GPU.

    python -m hawk ir MODULE.py:KERNEL [--dtype NAME=float32 ...] [--stages | --stats]
    python -m hawk --version

``ir`` prints the IR every backend compiles (after ``hawk.passes.optimize``); ``--stages`` adds
each op's stage (launch, sample or step: ``hawk.passes.classify``); ``--stats`` prints only how
many ops there are of each kind and the whole-matrix ops' sizes (what compile time follows).
Compiling a kernel to CUDA source, PTX or a cubin is the runtime's: ``python -m eagle compile``
(hawk never imports eagle).

A mistake of the user's (a file or kernel that is not there, a ``--dtype`` hawk cannot use, a
kernel hawk cannot compile) is one message on stderr, no traceback, and exit status 2; a
``CompileError`` prints as itself, with the kernel's file, line and a caret.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from . import __version__
from .errors import CompileError
from .ir import AGGREGATES, DType, Program
from .kernel import Kernel
from .passes import classify
from .source import import_file


class UsageError(Exception):
    """A command line that cannot be carried out as written; ``main`` prints it, exit 2."""


def load_kernel(spec: str) -> Kernel:
    """The kernel named by ``path/to/module.py:name`` (``UsageError`` if there is none; a kernel
    hawk cannot compile raises its ``CompileError`` when the file is imported)."""
    path_text, sep, name = spec.rpartition(":")
    if not sep or not path_text or not name:
        raise UsageError(f"expected MODULE.py:KERNEL, got {spec!r}")
    path = Path(path_text).resolve()
    if not path.is_file():
        raise UsageError(f"no such file {path_text!r}")
    sys.path.insert(0, str(path.parent))
    module = import_file(path, path.stem)
    kernel = getattr(module, name, None)
    if not isinstance(kernel, Kernel):
        found = ", ".join(k for k, v in vars(module).items() if isinstance(v, Kernel))
        raise UsageError(f"{path_text} has no hawk kernel {name!r} "
                         f"(kernels there: {found or 'none'})")
    return kernel


def dtypes_of(pairs: list[str], kernel: Kernel | None = None) -> dict[str, str]:
    """``--dtype NAME=DTYPE`` options as a dict, each dtype one hawk supports and, given the
    kernel, each name one of its parameters (else ``UsageError`` saying what would do)."""
    supported = [d.value for d in DType]
    names = [p.name for p in kernel.params] if kernel is not None else None
    out = {}
    for pair in pairs:
        name, sep, dtype = pair.partition("=")
        if not sep:
            raise UsageError(f"--dtype takes NAME=DTYPE, got {pair!r}")
        if names is not None and name not in names:
            raise UsageError(f"--dtype {pair}: {kernel.name} has no parameter {name!r}; its "
                             f"parameters are {', '.join(names)}")
        if dtype not in supported:
            raise UsageError(f"--dtype {pair}: hawk does not support dtype {dtype!r}; the "
                             f"supported dtypes are {', '.join(supported)}")
        out[name] = dtype
    return out


def specialized(spec: str, pairs: list[str]) -> Program:
    """The IR of the kernel named by ``spec`` for the ``--dtype`` options ``pairs``."""
    kernel = load_kernel(spec)
    dtypes = dtypes_of(pairs, kernel)
    try:
        return kernel.specialize(dtypes)
    except TypeError as exc:  # e.g. a Terminated flag given a dtype other than bool
        raise UsageError(f"--dtype: {exc}") from None


def with_stages(program: Program) -> str:
    """``program``'s text with each op's stage at the end of its line."""
    lines = str(program).splitlines()
    stages = iter(classify(program))
    width = max((len(line) for line in lines if line.startswith("  %")), default=0)
    return "\n".join(f"{line:<{width}}  # {next(stages).name.lower()}"
                      if line.startswith("  %") else line for line in lines)


def statistics(program: Program) -> str:
    """How many ops ``program`` has, of each kind (most first), and its whole-matrix ops
    (``hawk.ir.AGGREGATES``) by size."""
    kinds = Counter(op.kind.value for op in program.ops)
    lines = [f"{program.name}: {len(program.ops)} ops",
             *(f"  {count:8d} {kind}" for kind, count in kinds.most_common())]
    blocks = Counter(f"{op.kind.value} {op.attr}" for op in program.ops
                     if op.kind in AGGREGATES)
    lines += [f"  block {name}: {count}" for name, count in sorted(blocks.items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["compile"]:
        print("hawk: 'python -m hawk compile' is now 'python -m eagle compile' (same options): "
              "compiled artifacts belong to eagle's CUDA backend", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog="python -m hawk", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"hawk {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    ir = commands.add_parser("ir", help="print the kernel's IR")
    ir.add_argument("kernel", help="MODULE.py:KERNEL")
    ir.add_argument("--dtype", action="append", default=[], metavar="NAME=DTYPE",
                    help="a parameter's dtype (default float64)")
    shown = ir.add_mutually_exclusive_group()
    shown.add_argument("--stages", action="store_true",
                       help="mark each op launch, sample or step (what may be hoisted out of "
                            "the step loop)")
    shown.add_argument("--stats", action="store_true",
                       help="print the count of ops of each kind instead of the ops")
    args = parser.parse_args(argv)
    try:
        program = specialized(args.kernel, args.dtype)
    except (UsageError, CompileError) as exc:
        print(f"hawk: {exc}", file=sys.stderr)
        return 2
    print(statistics(program) if args.stats else
          with_stages(program) if args.stages else program)
    return 0


if __name__ == "__main__":
    sys.exit(main())
