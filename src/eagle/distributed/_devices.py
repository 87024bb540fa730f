"""GPU arrays in a cluster run: each chunk runs on its worker's own GPU.

A per-sample input bound to ``run_on_cluster`` may be a GPU array (CuPy, or anything that
exports ``__cuda_array_interface__``). A GPU's memory cannot be read from another machine, so
``host_inputs`` copies each such input to the client's host memory once, and its chunks travel
to the workers as NumPy pieces (as a NumPy input's do); every worker moves its chunk onto its
own GPU (``ChunkSpec.device``: the device family, ``"cuda"``, so a dask-cuda worker, which sees
its one GPU as ``cuda:0`` under ``CUDA_VISIBLE_DEVICES``, runs there), runs it with eagle's
CUDA backend and keeps its results in host memory (blocks of the result's dask arrays).
``ClusterResult.gather`` puts them back on the GPU the inputs came from.

A dask array's blocks are computed on the workers; a block that comes out as a CuPy array is
brought to host memory there before the chunk goes onto the run's device (``_chunk._inputs``;
not yet tried on a GPU).

One run, one device: per-sample inputs on two GPUs, or some on a GPU and some on the host,
are refused by name, and so are GPU inputs with a plan deployed to the CPU.

Cost model, per chunk of ``b`` bytes of inputs and ``r`` bytes of results: on the client one
device-to-host copy of the inputs (once for the run) and one host-to-device copy of the
results (``gather``); on the worker one host-to-device copy of ``b`` and one device-to-host copy
of ``r`` (PCIe, ~25 GB/s: 40 us per MB), the wire as for NumPy inputs, and the chunk's launch
and compile (the first chunk of a kernel on each worker) on its GPU. A chunk pays off on a GPU
when its samples keep the GPU busy: tens of thousands of samples or more.
"""

from __future__ import annotations

from .. import backend as backends
from ..arrays import is_array_like
from ..backend import HOST
from ..errors import BindingTypeError
from ..plan import Plan, deploy

__all__ = ["host_inputs"]


def host_inputs(plan: Plan, bindings: dict, per_sample) -> tuple[Plan, dict, str | None]:
    """``(plan, bindings, device)``: ``bindings`` with every GPU per-sample array (names for
    which ``per_sample(name, value)`` holds) copied to a NumPy array, ``plan`` running on the
    workers' GPUs when there were any (a plan without a device: the family, each worker's own
    GPU), and the GPU the inputs were on (None: no GPU input)."""
    where = {name: backends.device_of(value) for name, value in bindings.items()
             if per_sample(name, value) and is_array_like(value)}
    on_gpu = {name: device for name, device in where.items() if device != HOST}
    if not on_gpu:
        return plan, bindings, None
    devices = sorted(set(on_gpu.values()))
    if len(devices) > 1:
        first, other = (next(n for n, d in on_gpu.items() if d == dev) for dev in devices[:2])
        raise BindingTypeError(f"{first!r} is on {on_gpu[first]} and {other!r} on "
                               f"{on_gpu[other]}: bind every per-sample array of one run on "
                               "one device")
    on_host = [name for name, device in where.items() if device == HOST]
    name = next(iter(on_gpu))
    if on_host:
        raise BindingTypeError(f"{name!r} is on {on_gpu[name]} and {on_host[0]!r} is a host "
                               f"array: bind every per-sample array of one run on one device "
                               f"(all on the GPU to run each chunk on its worker's GPU)")
    family = devices[0].split(":")[0]
    if plan.device is not None and not plan.device.startswith(family):
        raise BindingTypeError(f"{name!r} is on {on_gpu[name]} but the plan is deployed to "
                               f"{plan.device!r}: deploy it to {family!r} (or None) to run the "
                               "chunks on the workers' GPUs, or bind host arrays")
    if plan.device is None:
        plan = deploy(plan.kernel, family, fmad=plan.fmad)
    backend = backends.backend_for(devices[0])
    moved = {name: backend.to_host(bindings[name]) for name in on_gpu}
    return plan, {**bindings, **moved}, devices[0]


def to_host(value):
    """``value`` as a host array: a GPU array (a dask block of CuPy) copied to NumPy."""
    device = backends.device_of(value) if is_array_like(value) else HOST
    return value if device == HOST else backends.backend_for(device).to_host(value)
