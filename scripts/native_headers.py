"""Fetch the two CUDA headers the native layer builds against (cuda.h, cudaTypedefs.h).

    python scripts/native_headers.py DEST [--wheel nvidia-cuda-runtime==13.0.96]

Downloads the ``nvidia-cuda-runtime`` wheel with pip (no install) and unpacks only those two
files into ``DEST``: no CUDA toolkit, no driver and nothing of NVIDIA's in the repository.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HEADERS = ("cuda.h", "cudaTypedefs.h")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path)
    parser.add_argument("--wheel", default="nvidia-cuda-runtime==13.0.96")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                        "--only-binary", ":all:", "--dest", folder, args.wheel], check=True)
        wheel = next(Path(folder).glob("*.whl"))
        args.dest.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if name.endswith(tuple(f"/include/{h}" for h in HEADERS)):
                    (args.dest / Path(name).name).write_bytes(archive.read(name))
    missing = [h for h in HEADERS if not (args.dest / h).exists()]
    if missing:
        print(f"native_headers: {wheel.name} has no {', '.join(missing)}", file=sys.stderr)
        return 1
    print(f"native_headers: {', '.join(HEADERS)} from {wheel.name} in {args.dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
