"""Where the installed native layer lives: ``library_path()`` (libeagle_cuda.so),
``standin_path()`` (the stand-in libcuda for machines without a GPU), ``include_dir()`` and
``cmake_dir()`` (for ``find_package(eagle_cuda)``: pass it as ``-Deagle_cuda_DIR``)."""

from pathlib import Path

ABI_VERSION = 1
_HERE = Path(__file__).resolve().parent


def library_path() -> Path:
    return _HERE / "lib" / "libeagle_cuda.so"


def standin_path() -> Path:
    return _HERE / "lib" / "libfakecuda.so"


def include_dir() -> Path:
    return _HERE / "include"


def cmake_dir() -> Path:
    return _HERE / "lib" / "cmake" / "eagle_cuda"
