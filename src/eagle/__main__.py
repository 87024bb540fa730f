"""``python -m eagle``: the performance card, what this machine offers, the cache.

    python -m eagle bench [--quick] [--out DIR]   the eager-loop vs graph card
    python -m eagle info                          versions, devices, threads, cache
    python -m eagle cache clear                   delete every compiled kernel
"""

from __future__ import annotations

import shutil
import sys


def _size(path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def info() -> int:
    import platform

    import numba
    import numpy

    import hawk

    from . import __version__, cache
    from .cuda.driver import device_count, device_info, unavailable_reason
    from .threads import ENV_VAR, get_num_threads

    print(f"eagle {__version__}, hawk {hawk.__version__}, Python {platform.python_version()}, "
          f"NumPy {numpy.__version__}, Numba {numba.__version__}")
    print(f"CPU: {platform.machine()} {platform.processor() or ''}".rstrip())
    print(f"  host team: {get_num_threads()} threads (eagle's own pool over GIL-free Numba "
          f"code; set ${ENV_VAR} or eagle.set_num_threads)")
    reason = unavailable_reason()
    if reason:
        print(f"GPU: none usable ({reason})")
    else:
        for ordinal in range(device_count()):
            d = device_info(ordinal)
            print(f"GPU {ordinal}: {d.name}, compute capability {d.compute_capability[0]}."
                  f"{d.compute_capability[1]} ({d.arch}), {d.total_memory / 2**30:.1f} GiB, "
                  f"driver {d.driver_version[0]}.{d.driver_version[1]}, "
                  f"{'WHILE nodes' if d.supports_while_nodes else 'no WHILE nodes (unrolled)'}")
    try:
        from .cuda.nvrtc import nvrtc_version

        print(f"NVRTC {'.'.join(map(str, nvrtc_version()))} (CUDA code generation works "
              "without a GPU)")
    except Exception as exc:
        print(f"NVRTC: not available ({exc})")
    folder = cache.cache_dir()
    print(f"cache: {folder} ({_size(folder) / 2**20:.1f} MiB)")
    return 0


def clear_cache() -> int:
    from . import cache

    folder = cache.cache_dir()
    size = _size(folder)
    for child in folder.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    print(f"cleared {folder} ({size / 2**20:.1f} MiB)")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        from .bench import main as bench

        return bench(argv[1:])
    if argv == ["info"]:
        return info()
    if argv == ["cache", "clear"]:
        return clear_cache()
    print(__doc__.strip(), file=sys.stderr)
    return 0 if argv in ([], ["-h"], ["--help"]) else 2


if __name__ == "__main__":
    sys.exit(main())
