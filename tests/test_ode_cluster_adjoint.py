"""``eagle.ode.solve(..., adjoint=True, client=client)`` with dask inputs (issues 44 and 45):
each chunk's recorded steps stay on its worker, ``Solution.vjp`` runs each chunk's backward
pass there from cotangents given as dask arrays (chunked as the samples) or NumPy arrays
(scattered), and the gradients are dask arrays with the local adjoint solve's bits: per
sample (``u0``, a per-sample ``p``, per-sample arguments) and summed over the samples (a
shared ``p``, shared arguments, the tables' values) left to right as the local ``vjp`` sums
them. One in-process cluster, as ``test_ode_cluster_inputs``; the bytes through the scheduler
are counted on a cluster of processes in ``test_distributed_cluster``."""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import hawk
from ode_models import lorenz
from test_ode_cluster_inputs import lazy, lorenz_sweep
from test_stiff import _robertson_rates, robertson

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

N = 24


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as dask_client:
        yield dask_client


def is_lazy(value) -> bool:
    return type(value).__module__.startswith("dask")


def assert_same_gradients(here, there):
    """Every field of two ``Gradients`` equal bit for bit, the remote's still dask arrays
    until computed here."""
    import dask

    for name in ("p", "u0", "args", "tables"):
        a, b = getattr(here, name), getattr(there, name)
        assert (a is None) == (b is None), name
        if a is None:
            continue
        pairs = zip(a, b, strict=True) if isinstance(a, tuple) else [(a, b)]
        for x, y in pairs:
            assert is_lazy(y), name
            (y,) = dask.compute(y)
            x = np.asarray(x)
            assert x.shape == y.shape and x.dtype == y.dtype, name
            assert x.tobytes() == y.tobytes(), name


@hawk.func
def z_level(u, t, p):
    return u.z - 35.0


@pytest.mark.parametrize("shared", [False, True], ids=["per-sample-p", "shared-p"])
def test_dopri5_gradients_are_the_local_ones_with_saveat(client, shared):
    """Per-sample and shared ``p``, ``du`` and ``dsaved`` as dask arrays and as NumPy arrays:
    the local adjoint solve's gradients bit for bit, dask until computed."""
    u0, p = lorenz_sweep()
    if shared:
        p = np.array([10.0, 28.0, 8.0 / 3.0])
    options = dict(saveat=(0.0, 1.0, 4), adjoint=True, rtol=1e-8, atol=1e-8)
    local = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, **options)
    remote = eagle.ode.solve(lorenz, lazy(u0), (0.0, 1.0), p=p if shared else lazy(p),
                             client=client, chunks=3, **options)
    assert is_lazy(remote.arrays["steps_u"]) and is_lazy(remote.u)
    assert remote.u.compute().tobytes() == local.u.tobytes()
    du, dsaved = np.cos(u0), np.sin(np.nan_to_num(local.saved))
    here = local.vjp(du, dsaved)
    sizes = remote.u.chunks[-1]
    as_dask = remote.vjp(da.from_array(du, chunks=(3, sizes)),
                         da.from_array(dsaved, chunks=(4, 3, sizes)))
    assert_same_gradients(here, as_dask)
    assert_same_gradients(here, remote.vjp(du, dsaved))  # NumPy: split and scattered
    assert_same_gradients(local.vjp(du), remote.vjp(du))
    assert_same_gradients(local.vjp(dsaved=dsaved), remote.vjp(dsaved=dsaved))


def test_a_cotangent_made_on_the_workers_from_the_solution(client):
    """``dsaved`` computed with dask from the dask ``Solution.saved`` (a loss on the workers):
    chunked as the samples already, nothing of it comes to the client."""
    u0, p = lorenz_sweep()
    options = dict(saveat=(0.0, 1.0, 4), adjoint=True, rtol=1e-8, atol=1e-8)
    local = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, **options)
    remote = eagle.ode.solve(lorenz, lazy(u0), (0.0, 1.0), p=lazy(p), client=client,
                             chunks=4, **options)
    data = 1.01 * np.nan_to_num(local.saved)
    residual = np.where(np.isnan(data), 0.0, local.saved - data)
    there_residual = da.where(da.isnan(data), 0.0, remote.saved - data)
    assert_same_gradients(local.vjp(dsaved=2.0 * residual),
                          remote.vjp(dsaved=2.0 * there_residual))


def test_rodas5p_on_robertson_with_a_shared_p(client):
    n = 16
    k = _robertson_rates(n)
    u0 = np.stack([np.ones(n), np.zeros(n), np.zeros(n)])
    options = dict(method="rodas5p", rtol=1e-6, atol=1e-10, saveat=(0.0, 10.0, 3),
                   adjoint=True)
    for p, remote_p in ((k, lazy(k, 4)), (k[:, 0].copy(), k[:, 0].copy())):
        local = eagle.ode.solve(robertson, u0, (0.0, 10.0), p=p, **options)
        remote = eagle.ode.solve(robertson, lazy(u0, 4), (0.0, 10.0), p=remote_p,
                                 client=client, **options)
        du, dsaved = np.ones_like(u0), np.nan_to_num(local.saved)
        assert_same_gradients(local.vjp(du, dsaved), remote.vjp(du, dsaved))


def test_a_terminal_event_moves_with_the_parameters_as_locally(client):
    u0, p = lorenz_sweep()
    options = dict(event=z_level, direction=1, adjoint=True, rtol=1e-8, atol=1e-8)
    local = eagle.ode.solve(lorenz, u0, (0.0, 2.0), p=p, **options)
    assert (local.status == 2).any() and (local.status == 1).any()
    remote = eagle.ode.solve(lorenz, lazy(u0), (0.0, 2.0), p=lazy(p), client=client,
                             chunks=3, **options)
    du = np.cos(u0)
    assert_same_gradients(local.vjp(du), remote.vjp(lazy(du, 8)))


@hawk.func
def forced(u, t, k, xs, fs):
    return -k * u + hawk.interp(t, xs, fs)


@hawk.func
def forced_args(u, t, k, c, xs, fs):
    return -k * u + c * hawk.interp(t, xs, fs)


XS = np.array([-0.1, 0.3, 0.7, 1.2, 1.6, 2.1])
FS = np.array([1.0, 0.5, -0.3, 0.8, 1.2, 0.1])


def test_args_tables_a_column_u0_and_backward_time(client):
    """Shared and per-sample arguments of ``args``, the tables' values (summed over the
    samples with the shared argument, in one chain), a ``(1, n)`` ``u0`` and a solve
    backward in time with saveat times per sample."""
    u0 = np.linspace(1.5, 2.5, N)[None]
    k = np.linspace(0.5, 2.0, N)
    options = dict(tables=(XS, FS), adjoint=True, table_gradients=True, rtol=1e-8,
                   atol=1e-8)
    local = eagle.ode.solve(forced_args, u0, (0.0, 2.0), args=(k, 2.0), **options)
    remote = eagle.ode.solve(forced_args, lazy(u0), (0.0, 2.0), args=(lazy(k), 2.0),
                             client=client, chunks=3, **options)
    du = np.sin(u0)
    assert_same_gradients(local.vjp(du), remote.vjp(du))
    times = np.linspace(1.8, 0.2, 3)[:, None] - np.linspace(0.0, 0.1, N)
    options = dict(p=k, tables=(XS, FS), adjoint=True, table_gradients=True, saveat=times)
    local = eagle.ode.solve(forced, u0[0], (2.0, 0.0), **options)
    remote = eagle.ode.solve(forced, lazy(u0[0]), (2.0, 0.0), client=client, chunks=3,
                             **{**options, "p": lazy(k)})
    dsaved = np.nan_to_num(local.saved)
    assert_same_gradients(local.vjp(u0[0], dsaved), remote.vjp(u0[0], dsaved))


def test_the_rows_a_chunk_records_are_checked_by_name_on_its_worker(client):
    """``adjoint_steps`` too few: before the run where ``max_step`` forces more (each chunk
    on its worker), after it where the error control took more."""
    u0, p = lorenz_sweep()
    with pytest.raises(ValueError, match=r"adjoint_steps=5: sample \d+ must take at least"):
        eagle.ode.solve(lorenz, lazy(u0), (0.0, 1.0), p=lazy(p), adjoint=True,
                        adjoint_steps=5, max_step=0.01, client=client, chunks=3)
    with pytest.raises(ValueError, match=rf"adjoint_steps=8: {N} of {N} samples \(the first: "
                                         r"sample 0\) need more accepted steps"):
        eagle.ode.solve(lorenz, lazy(u0), (0.0, 1.0), p=lazy(p), adjoint=True,
                        adjoint_steps=8, rtol=1e-10, atol=1e-10, client=client, chunks=3)


def test_cotangents_of_the_wrong_shape_or_chunks_are_refused_by_name(client, monkeypatch):
    """Refused naming ``du``/``dsaved`` before any backward pass is run."""
    from eagle.ode import dask_adjoint

    u0, p = lorenz_sweep()
    remote = eagle.ode.solve(lorenz, lazy(u0), (0.0, 1.0), p=lazy(p), client=client,
                             chunks=3, saveat=(0.0, 1.0, 4), adjoint=True)

    def never(*args, **kwargs):
        raise AssertionError("a backward pass ran")

    monkeypatch.setattr(dask_adjoint, "_backward_chunk", never)
    assert remote.u.chunks[-1] == (8, 8, 8)
    refusals = [
        (dict(du=np.ones((3, N - 1))), r"du must be shaped as Solution.u, \(3, 24\)"),
        (dict(du=lazy(np.ones((3, N)), 5)),
         r"du as a dask array must be chunked along its last axis as the solve's samples, "
         r"\(8, 8, 8\), got \(5, 5, 5, 5, 4\)"),
        (dict(dsaved=np.ones((5, 3, N))), r"dsaved must be shaped as Solution.saved"),
        (dict(du=np.ones((3, N)), dsaved=lazy(np.ones((4, 3, N)), 7)),
         r"dsaved as a dask array must be chunked along its last axis"),
        (dict(du=np.ones((3, N), dtype=complex)), r"du must be real numbers"),
    ]
    for given, message in refusals:
        with pytest.raises((ValueError, TypeError), match=message):
            remote.vjp(**given)


def test_loss_and_grad_refuses_dask_inputs_by_name(client):
    """Its loss is one sum over every sample (NumPy's pairwise order), which chunks cannot
    give with the local bits: a dask ``u0`` or ``data`` is refused by name, pointing at
    ``solve(adjoint=True)`` and ``vjp(dsaved=...)``."""
    u0, p = lorenz_sweep()
    data = np.ones((4, 3, N))
    for given_u0, given_data, name in ((lazy(u0), data, "u0"), (u0, lazy(data), "data")):
        with pytest.raises(ValueError, match=rf"loss_and_grad takes {name} as NumPy"):
            eagle.ode.loss_and_grad(lorenz, given_u0, (0.0, 1.0), lazy(p), given_data,
                                    saveat=(0.0, 1.0, 4), client=client, chunks=3)
