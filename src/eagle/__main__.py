"""``python -m eagle``: the performance card, compiled artifacts, this machine, the cache.

    python -m eagle bench [--quick] [--out DIR] ...   the eager-loop vs graph card
    python -m eagle compile MODULE.py:KERNEL --target {cuda,ptx,cubin} [--arch sm_90]
                            [--ptx-isa 9.0] [--dtype NAME=float32 ...] [--fmad] [--info]
                            [--host-build]
                            -o FILE
    python -m eagle info                              versions, devices, threads, cache
    python -m eagle cache clear                       delete every compiled kernel
    python -m eagle --version

``compile`` writes the CUDA source, PTX or cubin of a hawk kernel's step and a JSON sidecar
beside it (``FILE`` with the suffix ``.json``; the format is in ``docs/artifacts.md``), for
``eagle.loaded.LoadedVector`` or a native program; NVRTC needs no GPU. ``--info`` also prints
each kernel's registers, spills and stack (ptxas's report) and how many of eagle's blocks fit on
one SM of ``--arch``. (It lives here, not in ``python -m hawk``: the language knows nothing of
the runtime's artifacts.)
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from .paths import shown


def _size(path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def info() -> int:
    import platform

    import llvmlite
    import numpy

    import hawk

    from . import __version__, cache
    from .backend import backends

    print(f"eagle {__version__}, hawk {hawk.__version__}, Python {platform.python_version()}, "
          f"NumPy {numpy.__version__}, llvmlite {llvmlite.__version__}")
    for backend in backends():
        for line in backend.describe():
            print(line)
    from .cuda._native import describe

    for line in describe():
        print(line)
    folder = cache.cache_dir()
    print(f"cache: {shown(folder)} ({_size(folder) / 2**20:.1f} MiB)")
    return 0


def clear_cache() -> int:
    from . import cache

    folder = cache.cache_dir()
    if not folder.is_dir():
        print(f"eagle: the cache location {folder} is not a folder, so there is nothing to "
              "clear (EAGLE_CACHE_DIR sets it)", file=sys.stderr)
        return 2
    size = _size(folder)
    for child in folder.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    print(f"cleared {folder} ({size / 2**20:.1f} MiB)")
    return 0


def compile_artifact(args) -> int:
    from hawk import CompileError
    from hawk.__main__ import UsageError, specialized

    from .cuda.artifact import write_artifact

    try:
        program = specialized(args.kernel, args.dtype)
    except (UsageError, CompileError) as exc:
        print(f"eagle: {exc}", file=sys.stderr)
        return 2
    try:
        path, meta = write_artifact(program, args.target, args.output, args.arch, args.fmad,
                                    args.ptx_isa)
    except ValueError as exc:
        print(f"eagle: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path} ({path.stat().st_size} bytes) and {meta}")
    if args.host_build:
        from .cuda.hostbuild import write_host_build

        if args.target != "ptx":
            print("eagle: --host-build goes with --target ptx", file=sys.stderr)
            return 2
        try:
            print(f"wrote {write_host_build(program, path)} (the host build the stand-in "
                  "libcuda runs for this PTX)")
        except RuntimeError as exc:
            print(f"eagle: {exc}", file=sys.stderr)
            return 2
    if args.info:
        for line in resource_table(program, args.arch, args.fmad):
            print(line)
    return 0


def resource_table(program, arch: str, fmad: bool) -> list[str]:
    """One line per kernel of ``program``'s CUDA: registers, spills, stack, and the blocks of
    eagle's launch that fit on one SM of ``arch`` (occupancy: the share of its warps)."""
    from .cuda.emit import BLOCK_SIZE, emit_cuda
    from .cuda.nvrtc import arch_name, blocks_per_sm, occupancy, resource_usage

    lines = [f"{'kernel':<14} {'registers':>9} {'spill st/ld':>12} {'stack':>6} "
             f"{'blocks/SM':>9} {'occupancy':>9}   ({arch_name(arch)}, {BLOCK_SIZE} threads "
             "per block)"]
    for used in resource_usage(emit_cuda(program), arch, fmad):
        blocks = blocks_per_sm(used.registers, BLOCK_SIZE, arch)
        share = occupancy(used.registers, BLOCK_SIZE, arch)
        share = "-" if share is None else f"{share:.1%}"
        lines.append(f"{used.kernel:<14} {used.registers:>9} "
                     f"{f'{used.spill_stores}/{used.spill_loads} B':>12} {used.stack:>4} B "
                     f"{'-' if blocks is None else blocks:>9} {share:>9}")
    return lines


def _version() -> str:
    from . import __version__

    return f"eagle {__version__} (eagle-hawk; hawk {__version__})"


def parser() -> argparse.ArgumentParser:
    main_parser = argparse.ArgumentParser(prog="python -m eagle",
                                          description=__doc__.splitlines()[0],
                                          formatter_class=argparse.RawDescriptionHelpFormatter,
                                          epilog="\n".join(__doc__.splitlines()[1:8]))
    main_parser.add_argument("--version", action="version", version=_version())
    commands = main_parser.add_subparsers(dest="command", required=True)
    commands.add_parser("bench", add_help=False,
                        help="the eager-loop vs graph card (bench --help for its options)")
    compile_ = commands.add_parser("compile", help="write CUDA source, PTX or a cubin")
    compile_.add_argument("kernel", help="MODULE.py:KERNEL")
    compile_.add_argument("--dtype", action="append", default=[], metavar="NAME=DTYPE",
                          help="a parameter's dtype (default float64)")
    compile_.add_argument("--target", choices=["cuda", "ptx", "cubin"], required=True)
    compile_.add_argument("--arch", default="sm_90", help="GPU architecture (default sm_90)")
    compile_.add_argument("--ptx-isa", default=None, metavar="X.Y",
                          help="PTX only: the PTX ISA to declare (default 9.0, what every "
                               "supported nvJitLink reads; 'native' for this NVRTC's own)")
    compile_.add_argument("--fmad", action="store_true",
                          help="allow fused multiply-add (results then differ from the CPU)")
    compile_.add_argument("--info", action="store_true",
                          help="print each kernel's registers, spills and blocks per SM")
    compile_.add_argument("--host-build", action="store_true",
                          help="also write NAME.host.so: the generated CUDA compiled for this "
                               "CPU, which the native layer's stand-in libcuda runs for the PTX")
    compile_.add_argument("-o", "--output", required=True, type=Path)
    commands.add_parser("info", help="versions, devices, threads, cache")
    cache = commands.add_parser("cache", help="the compile cache")
    cache.add_argument("action", choices=["clear"], help="clear: delete every compiled kernel")
    return main_parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:  # the card parses its own options
        from .bench import main as bench

        return bench(argv[1:])
    args = parser().parse_args(argv)
    if args.command == "compile":
        return compile_artifact(args)
    if args.command == "info":
        return info()
    return clear_cache()


if __name__ == "__main__":
    sys.exit(main())
