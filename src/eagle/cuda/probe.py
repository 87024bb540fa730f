"""``python -m eagle.cuda.probe``: the riskiest things of the GPU path, tried first and quickly.

``scripts/gpu-check`` runs this before the test suite so that the suite's results can be read
against it (a failure here explains a hundred failures there). ``--versions`` prints what the
machine has (driver, NVRTC, nvJitLink, the Python packages, read from their metadata without
importing them) and stops. Without ``--versions`` each probe prints one line, ``ok`` with its
milliseconds or ``FAILED`` with the error, and the next one runs anyway:

- ``nvrtc-cubin``: eagle's generated CUDA compiled by NVRTC and loaded: the driver resolves
  ``cudaGraphSetConditional`` at load;
- ``nvjitlink-cubin``: an artifact written from hawk source as PTX (at the default ISA), linked
  by nvJitLink and loaded; then the checked-in ``gravity.ptx`` the spec loads;
- ``while-node``: ``until_done(...).run()`` of the spec's oscillator: a WHILE node that ends, with
  the results equal bit for bit to a NumPy loop;
- ``captured-step``: a ``LoadedVector`` launch captured by ``GraphPipeline`` and replayed;
- ``repeat-while``: ``eagle.repeat_while`` counting down on the device.

A hang shows where it is: each probe arms ``faulthandler.dump_traceback_later``. Nothing here
imports CuPy, platformdirs, pyelftools or dask (``$EAGLE_CACHE_DIR`` should be set, as
gpu-check does, so the cache never asks platformdirs). Exit status: 0 when every probe passed
or there is no GPU (said plainly), 1 otherwise.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib.metadata
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import hawk
from hawk import Mutable, Out, Param, Scalar, Terminated, Vec3

__all__ = ["main", "versions"]

PACKAGES = ("numpy", "llvmlite", "numba", "cuda-bindings", "nvidia-cuda-nvrtc", "nvidia-nvjitlink",
            "cupy-cuda13x", "cupy-cuda12x", "torch", "jax", "jaxlib", "pytest", "hypothesis",
            "tqdm", "platformdirs", "pyelftools", "dask", "sphinx")
FIXTURE = Path(__file__).resolve().parents[3] / "docs" / "guide" / "_fixtures" / "gravity.ptx"


def versions() -> list[str]:
    """One line per fact: the driver, the device, NVRTC, nvJitLink, the packages."""
    from .driver import unavailable_reason

    lines = [f"python {platform.python_version()} ({sys.executable})"]
    reason = unavailable_reason()
    if reason:
        lines.append(f"GPU: none ({reason})")
    else:
        from .driver import device_info

        info = device_info(0)
        lines.append(f"driver {info.driver_version[0]}.{info.driver_version[1]}; GPU 0: "
                     f"{info.name} ({info.arch}, {info.multiprocessors} SMs, "
                     f"{info.total_memory / 2**30:.0f} GiB)")
    for name, get in (("NVRTC", "nvrtc_version"), ("nvJitLink", "nvjitlink_version")):
        try:
            from . import nvrtc

            version = getattr(nvrtc, get)()
            lines.append(f"{name} {version[0]}.{version[1]}")
        except Exception as exc:
            lines.append(f"{name}: not usable ({type(exc).__name__}: {exc})")
    for package in PACKAGES:
        try:
            lines.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            lines.append(f"{package}: absent")
    return lines


class _Array:
    """A device array eagle allocates, exported like CuPy exports one (no CuPy needed)."""

    def __init__(self, host: np.ndarray):
        from .memory import DeviceBuffer

        self.host = np.ascontiguousarray(host)
        self.buffer = DeviceBuffer(self.host.nbytes)
        self.buffer.upload(self.host)
        self.__cuda_array_interface__ = dict(
            data=(self.buffer.ptr, False), shape=self.host.shape, typestr=self.host.dtype.str,
            strides=None, version=3, stream=None)

    def get(self) -> np.ndarray:
        from .driver import call, driver

        call(driver().cuCtxSynchronize)
        return self.buffer.download(np.empty_like(self.host))


@hawk.kernel(accumulate=True)
def gravity(mu: Param, terminated: Terminated, position: Vec3, out: Out[Vec3]):
    """The spec's gravity fixture's kernel (docs/guide/_fixtures/gravity.py)."""
    r = hawk.length(position)
    out = -mu * position / (r * r * r)  # noqa: F841


@hawk.kernel
def oscillator(omega: Scalar, t_end: Param, dt: Param, terminated: Terminated,
               x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    """The spec's oscillator."""
    x0, v0 = x, v
    x = x0 + dt * v0
    v = v0 - dt * omega * omega * x0
    t += dt
    terminated = t >= t_end  # noqa: F841


def probe_nvrtc_cubin(folder: Path) -> str:
    from .driver import device_info
    from .emit import DECIDE_KERNEL, STEP_KERNEL, emit_cuda
    from .launcher import Module
    from .nvrtc import compile_source

    arch = device_info(0).arch
    module = Module(compile_source(emit_cuda(gravity.specialize({})), arch,
                                   use_cache=False))
    module.function(STEP_KERNEL), module.function(DECIDE_KERNEL)
    return f"{arch} cubin loaded, cudaGraphSetConditional resolved"


def probe_nvjitlink_cubin(folder: Path) -> str:
    from ..loaded import LoadedVector
    from .artifact import write_artifact

    path, _ = write_artifact(gravity.specialize({}), "ptx", folder / "gravity.ptx",
                             "sm_80")
    fresh = LoadedVector(path)
    if not FIXTURE.exists():  # an installed eagle, not a checkout
        return f"a fresh PTX ISA {fresh.artifact.meta['ptx_isa']} artifact linked and loaded"
    fixture = LoadedVector(FIXTURE)
    return (f"the spec's PTX ISA {fixture.artifact.meta['ptx_isa']} fixture and a fresh "
            "artifact linked and loaded")


def probe_while_node(folder: Path) -> str:
    import eagle

    n, dt = 4096, 1e-3
    omega = np.linspace(1.0, 3.0, n)
    arrays = dict(x=_Array(np.ones(n)), v=_Array(np.zeros(n)), t=_Array(np.zeros(n)),
                  omega=_Array(omega))
    report = eagle.until_done(eagle.deploy(oscillator), max_steps=10_000, t_end=1.0, dt=dt,
                              **arrays).run()
    x, v, t = np.ones(n), np.zeros(n), np.zeros(n)
    live = np.ones(n, bool)
    while live.any():  # the same IEEE operations, in the same order
        x0, v0 = x, v
        x = np.where(live, x0 + dt * v0, x0)
        v = np.where(live, v0 - (dt * omega * omega) * x0, v0)
        t = np.where(live, t + dt, t)
        live &= ~(t >= 1.0)
    if report.mode != "graph-while" or report.steps != 1000 or report.done != n:
        raise AssertionError(f"unexpected report {report}")
    if not np.array_equal(arrays["x"].get(), x):
        raise AssertionError("x differs from the NumPy loop")
    return f"{report.launches} launches, 1000 steps, equal to NumPy bit for bit"


def probe_captured_step(folder: Path) -> str:
    from ..loaded import LoadedVector
    from ..pipeline import GraphPipeline
    from .artifact import write_artifact

    path, _ = write_artifact(gravity.specialize({}), "ptx", folder / "g2.ptx", "sm_80")
    force = LoadedVector(path)
    n, mu = 1024, 3.986004418e5
    host = np.random.default_rng(2).uniform(7.0e3, 4.2e4, size=(3, n))
    position, out = _Array(host), _Array(np.zeros((3, n)))
    terminated = _Array(np.zeros(n, bool))
    pipe = GraphPipeline().add(lambda: force.launch(out=out, position=position, mu=mu,
                                                    terminated=terminated)).build()
    pipe.launch(n=3)
    pipe.synchronize()
    expected = 3 * (-mu * host / np.linalg.norm(host, axis=0) ** 3)
    error = float(np.max(np.abs(out.get() - expected) / np.abs(expected)))
    if not error < 1e-13:
        raise AssertionError(f"3 replays differ from 3x the answer by {error:.3e}")
    return f"3 replays, max rel err {error:.1e}"


def probe_repeat_while(folder: Path) -> str:
    import eagle

    from .driver import device_info
    from .launcher import Launcher, Module
    from .nvrtc import compile_source

    source = ('extern "C" __global__ void countdown(long long* left, double* total) {\n'
              '    total[0] += 1.0; left[0] -= 1;\n}\n')
    module = Module(compile_source(source, device_info(0).arch, use_cache=False))
    countdown = Launcher(module.function("countdown"), ["long long*", "double*"], block=1)
    left, total = _Array(np.array([5], np.int64)), _Array(np.zeros(1))
    iterations = eagle.repeat_while(left, lambda: countdown.launch(1, left, total))
    if iterations != 5 or total.get()[0] != 5.0 or left.get()[0] != 0:
        raise AssertionError(f"{iterations} iterations, total {total.get()}, left {left.get()}")
    return "5 iterations on the device"


PROBES = {"nvrtc-cubin": probe_nvrtc_cubin, "nvjitlink-cubin": probe_nvjitlink_cubin,
          "while-node": probe_while_node, "captured-step": probe_captured_step,
          "repeat-while": probe_repeat_while}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eagle.cuda.probe",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--versions", action="store_true", help="print versions and stop")
    parser.add_argument("--each", type=float, default=20.0,
                        help="seconds after which a probe's stack is printed (a hang)")
    args = parser.parse_args(argv)
    for line in versions():
        print(line, flush=True)
    if args.versions:
        return 0
    from .driver import unavailable_reason

    reason = unavailable_reason()
    if reason:
        print(f"probe: no GPU ({reason}); nothing probed", flush=True)
        return 0
    failed = 0
    with tempfile.TemporaryDirectory(prefix="eagle-probe-") as folder:
        for name, probe in PROBES.items():
            print(f"probe {name}: ...", flush=True)
            faulthandler.dump_traceback_later(args.each, exit=False, file=sys.__stderr__)
            start = time.perf_counter()
            try:
                detail = probe(Path(folder))
                print(f"probe {name}: ok ({(time.perf_counter() - start) * 1e3:.0f} ms) "
                      f"{detail}", flush=True)
            except Exception as exc:
                failed += 1
                print(f"probe {name}: FAILED ({type(exc).__name__}: {exc})", flush=True)
            finally:
                faulthandler.cancel_dump_traceback_later()
    print(f"probe: {len(PROBES) - failed} of {len(PROBES)} passed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
