"""Kernels reading shared tables (in a file, since hawk reads kernels' source): indexed reads at
computed indices in and out of range, ``hawk.interp`` and ``hawk.interp_grid``."""

from __future__ import annotations

import numpy as np

import hawk
from hawk import Mutable, Out, Param, Scalar, Table, Terminated


@hawk.kernel(dtypes={"i": "int64"})
def read1(i: Scalar, tab: Table, terminated: Terminated, acc: Mutable[Scalar]):
    """Each step adds ``tab[i + 3 * s - 4]``: the index walks out of range on both sides."""
    s = hawk.step()
    acc = acc + tab[i + 3 * s - 4]
    terminated = s >= 3


@hawk.kernel(dtypes={"i": "int64", "j": "int64"})
def read2(i: Scalar, j: Scalar, tab: Table[2], terminated: Terminated, acc: Mutable[Scalar]):
    s = hawk.step()
    acc = acc + tab[i - 2 * s, j + s * 5]
    terminated = s >= 3


@hawk.kernel(dtypes={"i": "int64", "j": "int64", "k": "int64"})
def read3(i: Scalar, j: Scalar, k: Scalar, tab: Table[3], terminated: Terminated,
          acc: Mutable[Scalar]):
    s = hawk.step()
    acc = acc + tab[i + s, j - 3 * s, k * (s + 1)]
    terminated = s >= 3


READERS = {1: read1, 2: read2, 3: read3}


@hawk.kernel
def lookup(x: Scalar, dt: Param, xp: Table, fp: Table, grid: Table[2], cube: Table[3],
           terminated: Terminated, t: Mutable[Scalar], y: Mutable[Scalar], z: Mutable[Scalar],
           w: Out[Scalar]):
    """Interpolation at breakpoints and on 2-D and 3-D grids at points that move every step
    and leave the tables' ranges; ``w`` reads a corner of ``grid`` (launch-invariant)."""
    p = x + t
    y = y + hawk.interp(p, xp, fp)
    z = z + hawk.interp_grid(grid, hawk.vec2(p, 0.5 * p), hawk.vec2(-1.0, 0.0),
                             hawk.vec2(2.0, 1.5))
    z = z + hawk.interp_grid(cube, hawk.vec3(p, 1.0 - p, 0.25 * p), hawk.vec3(0.0, 0.0, 0.0),
                             hawk.vec3(1.0, 2.0, 0.5))
    w = grid[0, 0] + grid[-1, 10**6]
    t += dt
    terminated = t >= 0.5


@hawk.kernel
def interp1(x: Scalar, xp: Table, fp: Table, y: Out[Scalar]):
    y = hawk.interp(x, xp, fp)


@hawk.kernel
def grid1(x: Scalar, lo: Param, hi: Param, tab: Table, y: Out[Scalar]):
    y = hawk.interp_grid(tab, x, lo, hi)


@hawk.kernel
def grid2(x: Scalar, y: Scalar, tab: Table[2], out: Out[Scalar]):
    out = hawk.interp_grid(tab, hawk.vec2(x, y), hawk.vec2(-1.0, 0.5), hawk.vec2(1.0, 2.0))


@hawk.kernel
def grid3(x: Scalar, y: Scalar, z: Scalar, tab: Table[3], out: Out[Scalar]):
    out = hawk.interp_grid(tab, hawk.vec3(x, y, z), hawk.vec3(0.0, -2.0, 1.0),
                           hawk.vec3(1.0, 2.0, 3.0))


@hawk.func
def drag(mach, mach_points, cd_points):
    return hawk.interp(mach, mach_points, cd_points)


@hawk.kernel
def falling(dt: Param, g: Param, k: Scalar, mach_points: Table, cd_points: Table,
            terminated: Terminated, v: Mutable[Scalar], t: Mutable[Scalar]):
    """A falling body with a tabulated drag coefficient (through a func taking the tables)."""
    v = v + dt * (g - k * drag(v / 340.0, mach_points, cd_points) * v * v)
    t += dt
    terminated = t >= 1.0


def lookup_bindings(n: int, dtype=np.float64) -> dict:
    """``lookup``'s inputs: points from -1 to 2 (beyond every table's range), one exactly on a
    breakpoint, one at the first breakpoint and one NaN; tables of ``dtype``."""
    rng = np.random.default_rng(5)
    xp = np.sort(rng.uniform(-0.5, 1.5, 9))
    xp[3] = 0.25
    return dict(x=np.concatenate([np.linspace(-1.0, 2.0, n - 3), [0.25, xp[0], np.nan]]),
                dt=0.125, xp=xp.astype(dtype), fp=rng.normal(size=9).astype(dtype),
                grid=rng.normal(size=(6, 4)).astype(dtype),
                cube=rng.normal(size=(3, 5, 2)).astype(dtype),
                t=np.zeros(n), y=np.zeros(n), z=np.zeros(n), w=np.zeros(n))
