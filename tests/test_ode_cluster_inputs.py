"""``eagle.ode.solve(..., client=client)`` takes every argument a local solve takes (issue 45):
with dask inputs, ``args`` (shared and per-sample parts), per-sample ``t_span``, ``rtol``,
``atol``, ``max_step`` and ``dt`` as dask arrays, a sensitivity with a terminal event (its
time's correction run on the workers), pure recordings (their events located on the workers)
and ``saveat`` times per sample; with NumPy inputs, ``adjoint=True`` and ``Solution.vjp``.
Each bit-identical to a local solve of the same numbers. One in-process cluster
(``processes=False``: processes are not the point here; ``test_ode_cluster`` runs them)."""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import hawk
from ode_models import free_fall, height, lorenz

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

FIELDS = ("u", "t", "status", "accepted", "rejected", "events", "saved", "ts", "du_dp",
          "du_du0", "dt_dp", "dt_du0", "saved_sensitivity", "t_events", "u_events",
          "which_events")
N = 24


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as dask_client:
        yield dask_client


def assert_same(local, remote):
    """Every array of the two Solutions equal bit for bit (NaN payloads and -0.0 too), the
    remote's computed first where it is a dask array."""
    import dask

    for name in FIELDS:
        a, b = getattr(local, name), getattr(remote, name)
        assert (a is None) == (b is None), name
        if a is None:
            continue
        if type(b).__module__.startswith("dask"):
            (b,) = dask.compute(b)
        assert a.shape == b.shape and a.dtype == b.dtype, name
        assert a.tobytes() == b.tobytes(), name
    assert remote.report.n == local.report.n and remote.report.done == local.report.done


def lazy(value, chunk=5):
    """``value`` as a dask array cut every ``chunk`` samples (not the solve's chunks)."""
    return da.from_array(value, chunks=(*value.shape[:-1], chunk))


def lorenz_sweep(n=N):
    rho = np.linspace(20.0, 40.0, n)
    p = np.stack([np.full(n, 10.0), rho, np.full(n, 8.0 / 3.0)])
    u0 = np.stack([np.ones(n), np.linspace(0.9, 1.1, n), np.full(n, 20.0)])
    return u0, p


@hawk.func
def lorenz_by_args(u, t, sigma_beta, rho):
    return hawk.vec3(sigma_beta.x * (u.y - u.x), u.x * (rho - u.z) - u.y,
                     u.x * u.y - sigma_beta.y * u.z)


@hawk.func
def x_crossing(u, t, p):
    return u.x


@hawk.func
def y_crossing(u, t, p):
    return u.y


@hawk.func
def x_crossing_by_args(u, t, sigma_beta, rho):
    return u.x


def test_args_with_shared_and_per_sample_parts_as_dask_arrays(client):
    """``args=(shared NumPy vector, per-sample dask rho)``, and all-shared ``args``."""
    u0, p = lorenz_sweep()
    sigma_beta = np.array([10.0, 8.0 / 3.0])
    options = dict(rtol=1e-8, atol=1e-8, saveat=(0.0, 1.0, 4))
    local = eagle.ode.solve(lorenz_by_args, u0, (0.0, 1.0), args=(sigma_beta, p[1]), **options)
    remote = eagle.ode.solve(lorenz_by_args, lazy(u0), (0.0, 1.0),
                             args=(sigma_beta, lazy(p[1])), client=client, chunks=3,
                             **options)
    assert_same(local, remote)
    local = eagle.ode.solve(lorenz_by_args, u0, (0.0, 1.0), args=(sigma_beta, 28.0), **options)
    remote = eagle.ode.solve(lorenz_by_args, lazy(u0), (0.0, 1.0), args=(sigma_beta, 28.0),
                             client=client, chunks=3, **options)
    assert_same(local, remote)


def test_a_shared_argument_as_long_as_a_chunk_stays_shared(client):
    """A shared vector ``(2,)`` in chunks of 2 samples: packed as shared on every worker (its
    last axis is not read as the chunk's samples)."""
    u0, p = lorenz_sweep(8)
    sigma_beta = np.array([10.0, 8.0 / 3.0])
    local = eagle.ode.solve(lorenz_by_args, u0, (0.0, 0.5), args=(sigma_beta, p[1]))
    remote = eagle.ode.solve(lorenz_by_args, lazy(u0, 2), (0.0, 0.5),
                             args=(sigma_beta, lazy(p[1], 2)), client=client)
    assert len(remote.report.chunks) == 4
    assert_same(local, remote)


@pytest.mark.parametrize("kind", ["t_span", "tolerances", "dt"])
def test_per_sample_times_tolerances_and_steps_as_dask_arrays(client, kind):
    u0, p = lorenz_sweep()
    span, options = (0.0, 1.0), dict(p=p, rtol=1e-8, atol=1e-8)
    if kind == "t_span":  # backward in time, each sample from its own t0
        span = (np.linspace(0.3, 0.5, N), np.zeros(N))
    elif kind == "tolerances":
        options.update(rtol=np.geomspace(1e-10, 1e-6, N), atol=np.full(N, 1e-9),
                       max_step=np.linspace(0.01, 0.1, N))
    else:
        options = dict(p=p, method="rk4", dt=np.linspace(0.01, 0.02, N),
                       saveat=(0.0, 1.0, 3))
    local = eagle.ode.solve(lorenz, u0, span, **options)

    def dask_of(value):
        return lazy(value) if isinstance(value, np.ndarray) and value.shape[-1] == N else value

    remote = eagle.ode.solve(lorenz, lazy(u0), tuple(dask_of(v) for v in span),
                             client=client, chunks=3,
                             **{name: dask_of(value) for name, value in options.items()})
    assert_same(local, remote)


def test_a_sample_whose_value_a_local_solve_refuses_is_refused_by_name_on_its_worker(client):
    """Each sample's checks run where its chunk is made: a non-positive rtol, and a t_span
    whose samples go both ways, refused naming the argument."""
    u0, p = lorenz_sweep()
    rtol = np.full(N, 1e-8)
    rtol[-1] = 0.0
    with pytest.raises(ValueError, match=r"rtol must be positive for every sample \(in the "
                                         "chunk of samples 16 to 23"):
        eagle.ode.solve(lorenz, lazy(u0), (0.0, 1.0), p=lazy(p), rtol=lazy(rtol),
                        client=client, chunks=3)
    t_end = np.ones(N)
    t_end[-1] = -1.0
    with pytest.raises(ValueError, match="t_span: t_end must differ from t0 on the same side"):
        eagle.ode.solve(lorenz, lazy(u0), (0.0, lazy(t_end)), p=lazy(p), client=client,
                        chunks=3)


def test_a_sensitivity_with_a_terminal_event_is_corrected_on_the_workers(client):
    """``dt_du0`` and the event-moved ``du_du0`` (``event_correction_kernel`` on each chunk),
    and ``du_dp``/``dt_dp`` through per-sample ``args``."""
    u0 = np.stack([np.linspace(5.0, 20.0, N), np.zeros(N)])
    drag = np.linspace(0.5, 0.9, N)
    options = dict(event=height, sensitivity="u0", rtol=1e-9, atol=1e-9, saveat=(0.0, 1.0, 3))
    local = eagle.ode.solve(free_fall, u0, (0.0, 5.0), p=drag, **options)
    remote = eagle.ode.solve(free_fall, lazy(u0), (0.0, 5.0), p=lazy(drag), client=client,
                             chunks=3, **options)
    assert_same(local, remote)
    assert np.isfinite(remote.dt_du0.compute()).all()
    u0, p = lorenz_sweep()
    sigma_beta = np.array([10.0, 8.0 / 3.0])
    options = dict(event=x_crossing_by_args, sensitivity="p", rtol=1e-8, atol=1e-8)
    local = eagle.ode.solve(lorenz_by_args, u0, (0.0, 1.0), args=(sigma_beta, p[1]), **options)
    remote = eagle.ode.solve(lorenz_by_args, lazy(u0), (0.0, 1.0),
                             args=(sigma_beta, lazy(p[1])), client=client, chunks=3, **options)
    assert_same(local, remote)


@pytest.mark.parametrize("kind", ["one event", "two events backward"])
def test_pure_recordings_are_located_on_the_workers(client, kind):
    """``record_events`` with nothing acting on the events (a Poincaré section): each chunk's
    recorded steps located there (``event_location_kernel``), ``which_events`` filled there."""
    u0, p = lorenz_sweep()
    span = (0.0, 1.0)
    options = dict(event=x_crossing, terminal=False, direction=0, record_events=3,
                   rtol=1e-8, atol=1e-8)
    if kind == "two events backward":
        span = (np.linspace(1.0, 1.2, N), np.zeros(N))
        options["event"] = [x_crossing, y_crossing]
    local = eagle.ode.solve(lorenz, u0, span, p=p, **options)
    remote = eagle.ode.solve(lorenz, lazy(u0), tuple(lazy(v) if np.ndim(v) else v
                                                      for v in span),
                             p=lazy(p), client=client, chunks=3, **options)
    assert_same(local, remote)
    assert (local.which_events >= 0).any()


@pytest.mark.parametrize("method", ["dopri5", "rk4"])
def test_saveat_times_per_sample_beside_a_dask_u0(client, method):
    """``saveat`` ``(T, n)`` (a NumPy table read whole by every chunk); rk4 records ``t0``
    itself where a sample's first time is its start."""
    u0, p = lorenz_sweep()
    times = np.linspace(0.0, 0.9, 4)[:, None] * np.linspace(1.0, 1.1, N)
    options = dict(p=p, saveat=times) | (dict(method="rk4", dt=0.05) if method == "rk4"
                                         else dict(rtol=1e-8, atol=1e-8))
    local = eagle.ode.solve(lorenz, u0, (0.0, 1.0), **options)
    remote = eagle.ode.solve(lorenz, lazy(u0), (0.0, 1.0), client=client, chunks=3,
                             **{**options, "p": lazy(p)})
    assert_same(local, remote)
    assert isinstance(remote.ts, np.ndarray) and remote.ts.shape == (4, N)


def test_the_adjoint_over_the_cluster_gives_the_local_gradients(client):
    """``adjoint=True`` with NumPy inputs and ``client=``: the recording forward run on the
    workers, ``vjp`` here, the local solve's bits; ``loss_and_grad`` passes ``client`` on."""
    u0, p = lorenz_sweep()
    options = dict(p=p, saveat=(0.0, 1.0, 4), adjoint=True, rtol=1e-8, atol=1e-8)
    local = eagle.ode.solve(lorenz, u0, (0.0, 1.0), **options)
    remote = eagle.ode.solve(lorenz, u0, (0.0, 1.0), client=client, chunks=3, **options)
    assert_same(local, remote)
    du, dsaved = np.ones_like(u0), np.cos(np.nan_to_num(local.saved))
    here, there = local.vjp(du, dsaved), remote.vjp(du, dsaved)
    assert here.p.tobytes() == there.p.tobytes() and here.u0.tobytes() == there.u0.tobytes()
    data = np.nan_to_num(local.saved) * 1.01
    shared = np.array([10.0, 28.0, 8.0 / 3.0])
    fit = dict(saveat=(0.0, 1.0, 4), rtol=1e-8, atol=1e-8)
    loss, grad = eagle.ode.loss_and_grad(lorenz, u0, (0.0, 1.0), shared, data, **fit)
    loss_there, grad_there = eagle.ode.loss_and_grad(lorenz, u0, (0.0, 1.0), shared, data,
                                                     client=client, chunks=3, **fit)
    assert loss == loss_there and grad.tobytes() == grad_there.tobytes()


def test_what_a_dask_solve_still_cannot_serve_is_refused_by_name(client):
    u0, p = lorenz_sweep()
    lazy_u0, lazy_p = lazy(u0), lazy(p)
    refusals = [
        (dict(p=lazy_p, saveat=lazy(np.linspace(0.1, 0.9, 3)[:, None] * np.ones(N))),
         "saveat as a dask array: pass its times as a NumPy array"),
        (dict(args=(np.array([10.0, 8.0 / 3.0]), p[1])),
         r"args\[1\] of shape \(24,\) is per sample: beside a dask u0 pass it as a dask array"),
        (dict(args=(np.array([10.0, 8.0 / 3.0]), lazy(p[1])[:5])),
         r"args\[1\] as a dask array is per sample: its last axis must be u0's 24 samples"),
        (dict(p=lazy_p, rtol=np.full(N, 1e-6)),
         r"rtol must be a number or a dask array \(24,\) beside a dask u0"),
        (dict(p=lazy_p, atol=lazy(np.ones((2, N)))),
         r"atol as a dask array is per sample: it must have shape \(24,\)"),
        (dict(u0=u0, p=p, rtol=lazy(np.full(N, 1e-8))),
         "rtol is a dask array: pass u0 as a dask array too"),
        (dict(u0=u0, args=(lazy(p[0]), p[1]), client=None),
         r"args\[0\] is a dask array: pass client="),
    ]
    for given, message in refusals:
        f = lorenz_by_args if "args" in given else lorenz
        with pytest.raises(ValueError, match=message):
            eagle.ode.solve(f, t_span=(0.0, 1.0), **{"u0": lazy_u0, "client": client, **given})


@hawk.func
def decay_scalar(u, t, k):
    return -k * u


@hawk.func
def below_level(u, t, k):
    return u - 1.2


def test_a_pure_recording_of_a_column_u0_records_its_state_as_a_terminal_one_does(client):
    """``u0`` ``(1, n)`` (solved as ``(n,)``): the located events' states are ``(K, n)``, as
    the kernel records them for an event that acts (a local solve refused its own arrays
    before), and the cluster's are the same bits."""
    u0, k = np.linspace(1.0, 2.0, N)[None], np.linspace(0.5, 1.5, N)
    options = dict(p=k, event=below_level, terminal=False, direction=0, record_events=2)
    local = eagle.ode.solve(decay_scalar, u0, (0.0, 2.0), **options)
    acting = eagle.ode.solve(decay_scalar, u0, (0.0, 2.0), **{**options, "terminal": True})
    assert local.u_events.shape == acting.u_events.shape == (2, N)
    remote = eagle.ode.solve(decay_scalar, lazy(u0), (0.0, 2.0), client=client, chunks=3,
                             **{**options, "p": lazy(k)})
    assert_same(local, remote)


@hawk.func
def energy(q, k):
    return 0.5 * k * q.x * q.x + 0.25 * q.y * q.y * q.y * q.y


@hawk.func
def hamiltonian(u, t, k):
    """The force as ``hawk.grad`` of the energy, inside the model."""
    force = hawk.grad(energy, hawk.vec2(u.x, u.y), k)
    return hawk.vec4(u.z, u.w, -force.x, -force.y)


def test_a_model_differentiated_by_hawk_grad_with_the_adjoint_over_the_cluster(client):
    """``hawk.grad`` in ``f`` travels in the kernel's IR; with ``adjoint=True`` over the
    cluster (NumPy inputs) ``vjp`` gives the local gradients, and a dask solve the local
    states and, run on the workers, the local gradients."""
    u0 = np.stack([np.linspace(0.5, 1.0, N), np.zeros(N), np.zeros(N), np.ones(N)])
    k = np.linspace(1.0, 2.0, N)
    options = dict(p=k, saveat=(0.0, 2.0, 3), adjoint=True)
    local = eagle.ode.solve(hamiltonian, u0, (0.0, 2.0), **options)
    remote = eagle.ode.solve(hamiltonian, u0, (0.0, 2.0), client=client, chunks=3, **options)
    assert_same(local, remote)
    here, there = local.vjp(np.ones_like(u0)), remote.vjp(np.ones_like(u0))
    assert here.p.tobytes() == there.p.tobytes() and here.u0.tobytes() == there.u0.tobytes()
    kept = eagle.ode.solve(hamiltonian, lazy(u0), (0.0, 2.0), client=client, chunks=3,
                           **{**options, "p": lazy(k)})
    assert_same(local, kept)
    on_workers = kept.vjp(np.ones_like(u0))  # each chunk's backward pass on its worker
    assert here.p.tobytes() == on_workers.p.compute().tobytes()
    assert here.u0.tobytes() == on_workers.u0.compute().tobytes()
