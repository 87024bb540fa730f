"""GPU workers (issue 45): a cluster run whose per-sample inputs are GPU arrays runs each chunk
on its worker's GPU, bit for bit the run of the same ensemble on one local GPU.

The GPU is the emulated one (``emulated_gpu``: eagle's CUDA backend end to end, the kernels'
CUDA source compiled by the host compiler) and the GPU arrays are the stand-in driver's
``GpuArray`` (exported as CuPy exports its arrays), which also stands for the one CuPy call
the CUDA backend makes (``from_host``). The cluster is a
``LocalCluster(processes=False)``: its workers are threads of this process, which is where the
emulated driver is installed (a worker process would find no GPU); the chunks still go
through Dask's chunking, transfer and per-worker run (``eagle.distributed._chunk``), each on
the worker's ``cuda`` device. The kernels are the ones ``eagle.ode.solve`` runs: the test
takes the bindings of a local solve's integration and runs them both ways.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import eagle
from hawk.ir import Role
from ode_models import lorenz

distributed = pytest.importorskip("distributed")
pytest.importorskip("cuda.bindings.driver")  # the stand-in driver checks calls against it


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    """The emulated GPU as ``cuda:0``; the backend's one CuPy call (``from_host``: a host array
    onto the GPU, ``cupy.asarray``) made by the stand-in driver's ``GpuArray`` instead."""
    from eagle.cuda import driver as cuda_driver
    from host_cuda import compiler

    if cuda_driver.is_available():
        pytest.skip("a real GPU is present: the emulated GPU stands in only without one")
    if compiler() is None:
        pytest.skip("no host C++ compiler to emulate the GPU with")
    from emulated_gpu import EmulatedDriver
    from fake_driver import GpuArray, installed

    with installed(EmulatedDriver(tmp_path_factory.mktemp("emulated")),
                   compiler=lambda source, arch="sm_90", **_: source.encode() + b"\0") as d:
        backend = eagle.backend.backend_for("cuda:0")
        backend.from_host = lambda array, device: GpuArray(d, array)
        yield d


@pytest.fixture(scope="module")
def client(gpu):
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as dask_client:
        yield dask_client


def integration_of(monkeypatch, method, **options):
    """The main kernel and bindings of a local solve's integration (after the first step)."""
    from eagle.ode import solver

    taken = {}
    real = solver.until_done

    def until_done(plan, **bindings):
        taken.update(kernel=plan.kernel, bindings={
            k: v.copy() if isinstance(v, np.ndarray) else v for k, v in bindings.items()})
        return real(plan, **bindings)

    monkeypatch.setattr(solver, "until_done", until_done)
    n = 37
    rho = np.linspace(20.0, 40.0, n)
    p = np.stack([np.full(n, 10.0), rho, np.full(n, 8.0 / 3.0)])
    u0 = np.stack([np.ones(n), np.linspace(0.9, 1.1, n), np.full(n, 20.0)])
    eagle.ode.solve(lorenz, u0, (0.0, 0.5), p=p, method=method, **options)
    monkeypatch.setattr(solver, "until_done", real)
    kernel, bindings = taken["kernel"], taken["bindings"]
    max_steps = bindings.pop("max_steps")
    bindings.pop("seed", None)
    return kernel, bindings, max_steps


def on_gpu(gpu, kernel, bindings):
    """The per-sample arrays as GPU arrays; shared values (``Param``, tables) as they are."""
    from fake_driver import GpuArray

    roles = {p.name: p.role for p in kernel.params}
    return {k: GpuArray(gpu, v) if isinstance(v, np.ndarray)
            and roles[k] not in (Role.PARAM, Role.TABLE) else v for k, v in bindings.items()}


@pytest.mark.parametrize("method, options", [
    ("dopri5", dict(saveat=(0.0, 0.5, 6), rtol=1e-8, atol=1e-8)),
    ("rodas5p", dict(saveat=(0.0, 0.5, 4), rtol=1e-6, atol=1e-8)),
])
def test_gpu_inputs_run_each_chunk_on_its_workers_gpu_bit_for_bit(gpu, client, monkeypatch,
                                                                  method, options):
    kernel, bindings, max_steps = integration_of(monkeypatch, method, **options)
    local = eagle.until_done(eagle.deploy(kernel, "cuda:0"), max_steps=max_steps,
                             **on_gpu(gpu, kernel, bindings))
    local.run()
    written = [p.name for p in kernel.params if p.role.written]
    to_host = eagle.backend.backend_for("cuda:0").to_host
    expected = {k: to_host(local.bound.arrays[k]) for k in written}
    launches = gpu.graph_launches
    result = eagle.distributed.run_on_cluster(kernel, client, chunks=3, max_steps=max_steps,
                                              **on_gpu(gpu, kernel, bindings))
    gathered = result.gather()
    assert result.device == "cuda:0"
    assert {c.device for c in result.report.chunks} == {"cuda:0"}
    assert gpu.graph_launches >= launches + 3  # every chunk launched on the GPU
    assert result.report.done == result.report.n == 37
    for name in written:
        value = gathered[name]
        assert hasattr(value, "__cuda_array_interface__"), name  # back on the GPU
        value = value.get()
        assert value.dtype == expected[name].dtype, name
        assert value.tobytes() == expected[name].tobytes(), name


def test_one_run_on_one_device_refused_by_name(gpu, client, monkeypatch):
    kernel, bindings, max_steps = integration_of(monkeypatch, "dopri5")
    mixed = on_gpu(gpu, kernel, bindings)
    mixed["t"] = bindings["t"]  # a host array among GPU ones
    with pytest.raises(eagle.BindingTypeError, match=r"'t' is a host array: bind every "
                                                     r"per-sample array of one run on one"):
        eagle.distributed.run_on_cluster(kernel, client, chunks=2, max_steps=max_steps,
                                         **mixed)
    two = on_gpu(gpu, kernel, bindings)
    two["t"].device = SimpleNamespace(id=1)  # as CuPy says an array is on GPU 1
    with pytest.raises(eagle.BindingTypeError, match=r"'t' on cuda:1: bind every per-sample "
                                                     r"array of one run on one device"):
        eagle.distributed.run_on_cluster(kernel, client, chunks=2, max_steps=max_steps, **two)
    with pytest.raises(eagle.BindingTypeError, match=r"on cuda:0 but the plan is deployed to "
                                                     r"'cpu'"):
        eagle.distributed.run_on_cluster(eagle.deploy(kernel, "cpu"), client, chunks=2,
                                         max_steps=max_steps, **on_gpu(gpu, kernel, bindings))


def test_a_cupy_solves_integration_runs_on_the_workers_gpus_into_its_gpu_arrays(gpu, client,
                                                                                 monkeypatch):
    """``eagle.ode.solve(cupy_u0, client=...)``'s cluster part (``eagle.ode.cluster.run``): the
    solve's GPU arrays go to the workers' GPUs in 4 chunks and the results are written back
    into the same GPU arrays, bit for bit the local GPU run's. (The rest of a CuPy solve is
    CuPy code, which the emulated GPU does not provide; it is the local solve's own.)"""
    import ctypes

    from eagle.ode import cluster
    from fake_driver import GpuArray

    class Writable(GpuArray):  # what the solve's CuPy arrays do: ``a[...] = b``
        def __setitem__(self, key, value):
            assert key is Ellipsis and value.shape == self.shape and value.dtype == self.dtype
            ctypes.memmove(self.address, value.address, value.get().nbytes)

    kernel, bindings, max_steps = integration_of(monkeypatch, "dopri5",
                                                 saveat=(0.0, 0.5, 6))
    local = eagle.until_done(eagle.deploy(kernel, "cuda:0"), max_steps=max_steps,
                             **on_gpu(gpu, kernel, bindings))
    local.run()
    to_host = eagle.backend.backend_for("cuda:0").to_host
    written = [p.name for p in kernel.params if p.role.written]
    arrays = {k: Writable(gpu, v.get()) if isinstance(v, GpuArray) else v
              for k, v in on_gpu(gpu, kernel, bindings).items()}
    launches = gpu.graph_launches
    report = cluster.run(eagle.deploy(kernel), client, 4, arrays, {}, max_steps=max_steps,
                         seed=None, progress=False)
    assert {c.device for c in report.chunks} == {"cuda:0"} and len(report.chunks) == 4
    assert gpu.graph_launches >= launches + 4
    assert {"u", "t", "status", "saved"} <= set(written) & set(arrays)
    for name in set(written) & set(arrays):  # (``terminated`` is the runner's own)
        assert to_host(arrays[name]).tobytes() == to_host(local.bound.arrays[name]).tobytes()
