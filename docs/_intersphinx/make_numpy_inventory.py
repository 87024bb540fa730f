"""Write ``numpy.inv``: a Sphinx inventory of the NumPy names eagle's documentation links to.

The build machine need not reach numpy.org, so the inventory intersphinx reads is kept in the
repository. It lists only the names the API reference uses, each with its address in NumPy's
own documentation (https://numpy.org/doc/stable/). Run it again after adding a name:

    python docs/_intersphinx/make_numpy_inventory.py
"""

from __future__ import annotations

import zlib
from pathlib import Path

# (name, domain:role, page under reference/)
NAMES = [
    ("numpy.ndarray", "py:class", "generated/numpy.ndarray.html"),
    ("numpy.dtype", "py:class", "generated/numpy.dtype.html"),
    ("numpy.float64", "py:attribute", "arrays.scalars.html"),
    ("numpy.float32", "py:attribute", "arrays.scalars.html"),
    ("numpy.int64", "py:attribute", "arrays.scalars.html"),
    ("numpy.bool", "py:attribute", "arrays.scalars.html"),
    ("numpy.generic", "py:class", "arrays.scalars.html"),
    ("numpy.random.Generator", "py:class", "random/generator.html"),
    ("numpy.typing.ArrayLike", "py:data", "typing.html"),
    ("numpy.typing.DTypeLike", "py:data", "typing.html"),
]


def inventory() -> bytes:
    header = ("# Sphinx inventory version 2\n# Project: NumPy\n# Version: stable\n"
              "# The remainder of this file is compressed using zlib.\n")
    body = "".join(f"{name} {role} 1 reference/{page}#$ -\n" for name, role, page in NAMES)
    return header.encode() + zlib.compress(body.encode())


if __name__ == "__main__":
    out = Path(__file__).with_name("numpy.inv")
    out.write_bytes(inventory())
    print(f"wrote {out} ({len(NAMES)} names)")
