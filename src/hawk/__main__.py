"""``python -m hawk``: look at what hawk makes of a kernel, without a GPU.

    python -m hawk ir MODULE.py:KERNEL [--dtype NAME=float32 ...] [--stages]
    python -m hawk compile MODULE.py:KERNEL --target {cuda,ptx,cubin} [--arch sm_90]
                           [--dtype NAME=float32 ...] [--fmad] -o FILE

``ir`` prints the IR every backend compiles (after ``hawk.passes.optimize``); ``--stages`` adds
each op's stage (launch, sample or step: ``hawk.passes.classify``). ``compile`` writes the CUDA
source, PTX or cubin of the kernel's step and a JSON sidecar beside it (``FILE`` with the
suffix ``.json``; the format is in ``docs/artifacts.md``).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from .ir import Program
from .kernel import Kernel
from .passes import classify


def load_kernel(spec: str) -> Kernel:
    """The kernel named by ``path/to/module.py:name``."""
    path_text, sep, name = spec.rpartition(":")
    if not sep or not path_text or not name:
        raise SystemExit(f"hawk: expected MODULE.py:KERNEL, got {spec!r}")
    path = Path(path_text).resolve()
    if not path.is_file():
        raise SystemExit(f"hawk: no such file {path_text!r}")
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[path.stem] = module
    sys.path.insert(0, str(path.parent))
    module_spec.loader.exec_module(module)
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
    parser = argparse.ArgumentParser(prog="python -m hawk", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    ir = commands.add_parser("ir", help="print the kernel's IR")
    compile_ = commands.add_parser("compile", help="write CUDA source, PTX or a cubin")
    for command in (ir, compile_):
        command.add_argument("kernel", help="MODULE.py:KERNEL")
        command.add_argument("--dtype", action="append", default=[], metavar="NAME=DTYPE",
                             help="a parameter's dtype (default float64)")
    ir.add_argument("--stages", action="store_true",
                    help="mark each op launch, sample or step (what may be hoisted out of the "
                         "step loop)")
    compile_.add_argument("--target", choices=["cuda", "ptx", "cubin"], required=True)
    compile_.add_argument("--arch", default="sm_90", help="GPU architecture (default sm_90)")
    compile_.add_argument("--fmad", action="store_true",
                          help="allow fused multiply-add (results then differ from the CPU)")
    compile_.add_argument("-o", "--output", required=True, type=Path)
    args = parser.parse_args(argv)
    kernel = load_kernel(args.kernel)
    program = kernel.specialize(dtypes_of(args.dtype))
    if args.command == "ir":
        print(with_stages(program) if args.stages else program)
        return 0
    from eagle.cuda.artifact import write_artifact

    path, meta = write_artifact(program, args.target, args.output, args.arch, args.fmad)
    print(f"wrote {path} ({path.stat().st_size} bytes) and {meta}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
