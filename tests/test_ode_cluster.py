"""``eagle.ode.solve(..., client=client, chunks=K)`` on a real local cluster (a scheduler and two
worker processes on loopback): the same ``Solution`` as a local solve of the same ensemble, bit
for bit, for every kind of solve (issue 45): dopri5 with ``saveat``, events and recorded
events, a terminal event in backward time with a table, rodas5p on Robertson, a sensitivity
solve with its event-time correction, fixed steps and an SDE's random draws; the workers need
neither the models' file nor its module (the kernels travel as IR)."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

import eagle
import hawk
from ode_models import bounce, free_fall, height, lorenz

distributed = pytest.importorskip("distributed")

FIELDS = ("u", "t", "status", "accepted", "rejected", "events", "saved", "ts", "du_dp",
          "du_du0", "dt_dp", "dt_du0", "saved_sensitivity", "t_events", "u_events",
          "which_events")


def local_cluster():
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                    host="127.0.0.1", dashboard_address="127.0.0.1:0")


@pytest.fixture(scope="module")
def client():
    with local_cluster() as c, distributed.Client(c) as dask_client:
        yield dask_client


def assert_same(local, remote):
    """Every array of the two Solutions equal, bit for bit (NaN where NaN), shapes and dtypes
    included; the cluster's report counts every sample."""
    for name in FIELDS:
        a, b = getattr(local, name), getattr(remote, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert a.shape == b.shape and a.dtype == b.dtype, name
            np.testing.assert_array_equal(a, b, err_msg=name)
            assert a.tobytes() == b.tobytes(), name  # -0.0 and NaN payloads too
    assert remote.runner is None and remote.report.n == local.report.n
    assert remote.report.done == local.report.done


def lorenz_sweep(n):
    """Lorenz members whose rho sweeps 20..40 (a parameter sweep), from nearby starts."""
    rho = np.linspace(20.0, 40.0, n)
    p = np.stack([np.full(n, 10.0), rho, np.full(n, 8.0 / 3.0)])
    u0 = np.stack([np.ones(n), np.linspace(0.9, 1.1, n), np.full(n, 20.0)])
    return u0, p


@hawk.func
def x_crossing(u, t, p):
    return u.x


def test_dopri5_with_saveat_and_recorded_events_over_8_chunks(client):
    u0, p = lorenz_sweep(403)
    options = dict(p=p, saveat=(0.0, 2.0, 9), event=x_crossing, terminal=False,
                   direction=0, record_events=4, rtol=1e-8, atol=1e-8)
    local = eagle.ode.solve(lorenz, u0, (0.0, 2.0), **options)
    remote = eagle.ode.solve(lorenz, u0, (0.0, 2.0), client=client, chunks=8, **options)
    assert_same(local, remote)
    assert len(remote.report.chunks) == 8 and (remote.events > 0).any()
    assert {c.stop - c.start for c in remote.report.chunks} == {50, 51}
    assert len(remote.report.workers) == 2


@hawk.func
def robertson(u, t, k):
    r1 = k[0] * u[0]
    r2 = k[1] * u[1] * u[1]
    r3 = k[2] * u[1] * u[2]
    return hawk.vec3(-r1 + r3, r1 - r2 - r3, r2)


def test_rodas5p_on_robertson_with_per_sample_rates(client):
    n = 96
    rng = np.random.default_rng(45)
    k = np.stack([0.04 * rng.uniform(0.5, 2.0, n), 3e7 * rng.uniform(0.5, 2.0, n),
                  1e4 * rng.uniform(0.5, 2.0, n)])
    u0 = np.vstack([np.ones(n), np.zeros(n), np.zeros(n)])
    options = dict(p=k, method="rodas5p", rtol=1e-6, atol=1e-10, saveat=(0.0, 1e3, 4))
    local = eagle.ode.solve(robertson, u0, (0.0, 1e3), **options)
    remote = eagle.ode.solve(robertson, u0, (0.0, 1e3), client=client, chunks=8, **options)
    assert_same(local, remote)
    assert (remote.status == 1).all()


def test_sensitivity_solves_with_a_terminal_event_correction(client):
    """Forward sensitivities to u0 with the event time's derivative (``dt_du0``, computed on
    the client after the cluster's integration, as a local solve does), and to a per-sample
    p with saved sensitivities."""
    n = 64
    u0 = np.stack([np.linspace(5.0, 20.0, n), np.zeros(n)])
    drag = np.linspace(0.5, 0.9, n)  # per-sample restitution, unused by free_fall's motion
    options = dict(p=drag, event=height, sensitivity="u0", rtol=1e-9, atol=1e-9,
                   saveat=(0.0, 1.0, 3))
    local = eagle.ode.solve(free_fall, u0, (0.0, 5.0), **options)
    remote = eagle.ode.solve(free_fall, u0, (0.0, 5.0), client=client, chunks=8, **options)
    assert_same(local, remote)
    assert remote.du_du0.shape == (2, 2, n) and np.isfinite(remote.dt_du0).all()
    u0, p = lorenz_sweep(40)
    by_p = dict(p=p, sensitivity="p", saveat=(0.0, 1.0, 3), rtol=1e-8, atol=1e-8)
    local = eagle.ode.solve(lorenz, u0, (0.0, 1.0), **by_p)
    remote = eagle.ode.solve(lorenz, u0, (0.0, 1.0), client=client, chunks=8, **by_p)
    assert_same(local, remote)
    assert remote.du_dp.shape == (3, 3, 40) and remote.saved_sensitivity.shape == (3, 3, 3, 40)


def test_backward_time_with_a_bounce_and_shared_p(client):
    """Backward in time (t_end < t0), an ``on_event`` bounce, p shared by every sample (sent
    whole to every chunk)."""
    n = 40

    options = dict(p=0.8, event=height, on_event=bounce, direction=0, record_events=2,
                   rtol=1e-8,
                   atol=1e-8, saveat=(0.0, -2.0, 5))
    u0 = np.stack([np.linspace(1.0, 4.0, n), np.zeros(n)])
    local = eagle.ode.solve(free_fall, u0, (0.0, -2.0), **options)
    remote = eagle.ode.solve(free_fall, u0, (0.0, -2.0), client=client, chunks=8, **options)
    assert_same(local, remote)
    assert (remote.t == -2.0).all() and (remote.events > 0).any()


@hawk.func
def tabulated_decay(u, t, k, times, rates):
    return -k * hawk.interp(t, times, rates) * u


def test_fixed_steps_with_tables_and_an_sdes_draws_follow_the_global_sample_index(client):
    """rk4 with ``saveat`` (t0 itself recorded on the client) and two tables sent whole to
    every chunk; euler_maruyama's draws keyed by each sample's global index."""
    n = 50
    u0 = np.ones(n)
    times, rates = np.linspace(0.0, 1.0, 4), np.array([1.0, 2.0, 0.5, 1.5])
    fixed = dict(p=np.linspace(0.1, 1.0, n), method="rk4", dt=0.01, saveat=(0.0, 1.0, 5),
                 tables=(times, rates))
    assert_same(eagle.ode.solve(tabulated_decay, u0, (0.0, 1.0), **fixed),
                eagle.ode.solve(tabulated_decay, u0, (0.0, 1.0), client=client, chunks=8,
                                **fixed))
    noisy = dict(p=0.5, method="euler_maruyama", dt=0.01, noise=height_noise, seed=7)
    assert_same(eagle.ode.solve(decay_scalar, u0, (0.0, 1.0), **noisy),
                eagle.ode.solve(decay_scalar, u0, (0.0, 1.0), client=client, chunks=8,
                                **noisy))


@hawk.func
def decay_scalar(u, t, k):
    return -k * u


@hawk.func
def height_noise(u, t, k):
    return 0.3 * u


def test_options_the_cluster_cannot_serve_are_refused_by_name(client):
    u0, p = lorenz_sweep(10)
    with pytest.raises(ValueError, match="chunks= splits a solve over a Dask cluster: pass "
                                         "client= too"):
        eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, chunks=2)
    with pytest.raises(ValueError, match="chunks must be a positive int"):
        eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, client=client, chunks=0)
    with pytest.raises(ValueError, match="chunks must be at most the 10 samples, got 11"):
        eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, client=client, chunks=11)
    with pytest.raises(TypeError, match="client must be a distributed.Client"):
        eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, client="tcp://127.0.0.1:8786")


def _worker_killer(client, killed: list) -> threading.Thread:
    """A started thread that SIGKILLs the first worker seen running a chunk (at once: a chunk
    of 7,500 members runs for a fraction of a second) and notes it in ``killed``."""
    pids = client.run(os.getpid)

    def kill_a_busy_worker():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            busy = [w for w, keys in client.processing().items()
                    if any("eagle-chunk" in str(k) for k in keys) and w in pids]
            if busy:
                os.kill(pids[busy[0]], signal.SIGKILL)
                killed.append(busy[0])
            time.sleep(0.01)

    killer = threading.Thread(target=kill_a_busy_worker)
    killer.start()
    return killer


def test_a_worker_killed_mid_run_changes_nothing(monkeypatch):
    """A worker killed while it runs a chunk (its scattered inputs lost with it): the solve
    sends the inputs again and finishes with the local solve's bits."""
    from eagle.distributed import _scattered

    sent = []
    scatter = _scattered.scatter
    monkeypatch.setattr(_scattered, "scatter", lambda *a: sent.append(1) or scatter(*a))
    u0, p = lorenz_sweep(60_000)
    local = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p)
    killed = []
    with local_cluster() as c, distributed.Client(c) as client:
        killer = _worker_killer(client, killed)
        try:
            remote = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, client=client, chunks=8)
        finally:
            killer.join()
    assert killed and len(sent) == 2  # the inputs were sent again, once
    assert_same(local, remote)


# --- dask inputs: made, integrated and kept on the workers ---------------------------------

def dask_lorenz_sweep(n, chunks):
    """``lorenz_sweep`` as dask arrays built from graphs (computed on the workers)."""
    from dask import array as da

    rho = da.linspace(20.0, 40.0, n, chunks=chunks)
    p = da.stack([da.full(n, 10.0, chunks=chunks), rho, da.full(n, 8.0 / 3.0, chunks=chunks)])
    u0 = da.stack([da.ones(n, chunks=chunks), da.linspace(0.9, 1.1, n, chunks=chunks),
                   da.full(n, 20.0, chunks=chunks)])
    return u0, p


def assert_same_lazy(local, remote):
    """``assert_same`` for a Solution of dask arrays: each a dask array, cut as the chunks,
    whose computed bits are the local solve's."""
    import dask

    names = [name for name in FIELDS if getattr(remote, name) is not None and name != "ts"]
    for name in names:
        assert type(getattr(remote, name)).__module__.startswith("dask"), name
    computed = dask.compute(*(getattr(remote, name) for name in names))
    assert_same(local, remote.__class__(**{**vars(remote), **dict(zip(names, computed,
                                                                        strict=True))}))


def test_dask_inputs_solve_on_the_workers_and_the_results_stay_there(client):
    """u0 and a per-sample p as dask arrays (never whole on the client): the Solution's
    arrays are dask arrays over the chunks' results, with the local solve's bits for the same
    numbers (dopri5 with saveat); a reduction runs on the workers."""
    import dask

    u0, p = dask_lorenz_sweep(403, chunks=60)
    options = dict(saveat=(0.0, 2.0, 9), rtol=1e-8, atol=1e-8)
    remote = eagle.ode.solve(lorenz, u0, (0.0, 2.0), p=p, client=client, **options)
    assert remote.u.chunks == ((3,), (60,) * 6 + (43,))  # u0's own chunks
    assert len(remote.report.chunks) == 7 and remote.report.done == 403
    here_u0, here_p = dask.compute(u0, p)
    local = eagle.ode.solve(lorenz, here_u0, (0.0, 2.0), p=here_p, **options)
    assert_same_lazy(local, remote)
    np.testing.assert_allclose(remote.u.mean(axis=-1).compute(), local.u.mean(axis=-1),
                               rtol=1e-12)
    assert remote.ts.shape == (9,) and isinstance(remote.ts, np.ndarray)


@pytest.mark.parametrize("kind", ["rodas5p", "bounce backward", "rk4 tables", "sde",
                                  "sensitivity", "column", "shared p", "sequence p"])
def test_dask_inputs_give_the_local_solves_bits(client, kind):
    """Every kind of solve with a dask u0 (and p where per sample), in ``chunks=8`` that are
    not u0's own: the local solve's bits for the same numbers."""
    from dask import array as da

    n = 48
    rng = np.random.default_rng(45)
    if kind == "rodas5p":
        k = np.stack([0.04 * rng.uniform(0.5, 2.0, n), 3e7 * rng.uniform(0.5, 2.0, n),
                      1e4 * rng.uniform(0.5, 2.0, n)])
        f, u0, span = robertson, np.vstack([np.ones(n), np.zeros(n), np.zeros(n)]), (0.0, 1e3)
        options = dict(p=k, method="rodas5p", rtol=1e-6, atol=1e-10, saveat=(0.0, 1e3, 4))
    elif kind == "bounce backward":  # on_event, recorded events, a shared p
        f, u0, span = free_fall, np.stack([np.linspace(1.0, 4.0, n), np.zeros(n)]), (0.0, -2.0)
        options = dict(p=0.8, event=height, on_event=bounce, direction=0, record_events=2,
                       rtol=1e-8, atol=1e-8, saveat=(0.0, -2.0, 5))
    elif kind == "rk4 tables":  # t0 itself recorded on each worker
        f, u0, span = tabulated_decay, np.ones(n), (0.0, 1.0)
        options = dict(p=np.linspace(0.1, 1.0, n), method="rk4", dt=0.01,
                       saveat=(0.0, 1.0, 5),
                       tables=(np.linspace(0.0, 1.0, 4), np.array([1.0, 2.0, 0.5, 1.5])))
    elif kind == "sde":  # each sample draws the stream of its global index
        f, u0, span = decay_scalar, np.ones(n), (0.0, 1.0)
        options = dict(p=0.5, method="euler_maruyama", dt=0.01, noise=height_noise, seed=7)
    elif kind == "sensitivity":
        u0, p = lorenz_sweep(n)
        f, span = lorenz, (0.0, 1.0)
        options = dict(p=p, sensitivity="p", saveat=(0.0, 1.0, 3), rtol=1e-8, atol=1e-8)
    elif kind == "column":  # u0 (1, n): solved as (n,), given back as (1, n)
        f, u0, span = decay_scalar, np.linspace(1.0, 2.0, n)[None], (0.0, 1.0)
        options = dict(p=np.linspace(0.5, 1.5, n), saveat=(0.0, 1.0, 3))
    else:  # one Vector[3] for every sample (Param), or 3 numbers (a Vector[3] per sample)
        u0, p = lorenz_sweep(n)
        f, span = lorenz, (0.0, 1.0)
        shared = np.array([10.0, 28.0, 8.0 / 3.0])
        options = dict(p=shared if kind == "shared p" else tuple(shared), rtol=1e-8,
                       atol=1e-8)
    local = eagle.ode.solve(f, u0, span, **options)
    lazy = dict(options)
    if isinstance(options["p"], np.ndarray) and options["p"].shape[-1] == n:
        lazy["p"] = da.from_array(options["p"], chunks=(*options["p"].shape[:-1], 10))
    remote = eagle.ode.solve(f, da.from_array(u0, chunks=(*u0.shape[:-1], 10)), span,
                             client=client, chunks=8, **lazy)
    assert len(remote.report.chunks) == 8
    assert_same_lazy(local, remote)


def test_what_a_dask_solve_cannot_serve_is_refused_by_name(client):
    from dask import array as da

    u0, p = lorenz_sweep(10)
    lazy_u0, lazy_p = da.from_array(u0, chunks=(3, 5)), da.from_array(p, chunks=(3, 5))
    refusals = [
        (dict(u0=lazy_u0, p=p, client=None), "u0 is a dask array: pass client="),
        (dict(u0=u0, p=lazy_p), "p is a dask array: pass u0 as a dask array too"),
        (dict(u0=lazy_u0, p=p), r"p of shape \(3, 10\) is per sample: beside a dask u0 pass "
                                "it as a dask array too"),
        (dict(u0=lazy_u0, p=lazy_p, rtol=np.full(10, 1e-6)), "rtol must be a number or a "
                                                              "dask array"),
        (dict(u0=lazy_u0, p=lazy_p[:, :5]), "p as a dask array is per sample: its last axis "
                                            "must be u0's 10 samples"),
    ]
    for given, message in refusals:
        arguments = {"client": client, **given}
        with pytest.raises(ValueError, match=message):
            eagle.ode.solve(lorenz, t_span=(0.0, 1.0), **arguments)
    with pytest.raises(ValueError, match="checkpoint= keeps a cluster solve's finished chunks: "
                                         "pass client= too"):
        eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, checkpoint="folder")


def test_checkpointed_chunks_are_resumed_after_every_worker_restarts(client, tmp_path):
    """``checkpoint=``: a rerun after every worker was restarted (their memory gone) reads
    the finished chunks back instead of running them, and runs the one that was lost (its
    file removed), with the same bits; for dask inputs and for NumPy ones."""
    from dask import array as da

    u0, p = lorenz_sweep(400)
    options = dict(p=p, saveat=(0.0, 1.0, 3), rtol=1e-8, atol=1e-8)
    local = eagle.ode.solve(lorenz, u0, (0.0, 1.0), **options)
    lazy = dict(options, p=da.from_array(p, chunks=(3, 100)))
    lazy_u0 = da.from_array(u0, chunks=(3, 100))
    for name, start, given in (("dask", lazy_u0, lazy), ("numpy", u0, options)):
        folder = tmp_path / name
        eagle.ode.solve(lorenz, start, (0.0, 1.0), client=client, chunks=4,
                        checkpoint=folder, **given)
        written = sorted(folder.glob("chunk-*.npz"))
        assert len(written) == 4
        written[1].unlink()  # a chunk the first run did not finish
        client.restart()  # every worker killed and started again
        again = eagle.ode.solve(lorenz, start, (0.0, 1.0), client=client, chunks=4,
                                checkpoint=folder, **given)
        resumed = [chunk.resumed for chunk in again.report.chunks]
        assert resumed == [True, False, True, True], name
        if name == "dask":
            assert_same_lazy(local, again)
        else:
            assert_same(local, again)


@pytest.mark.slow
def test_a_worker_killed_mid_run_of_a_dask_solve_changes_nothing():
    """A worker killed while it runs a chunk of a dask-input solve: Dask makes the chunk's
    blocks again elsewhere and the Solution keeps the local solve's bits."""
    import dask

    u0, p = dask_lorenz_sweep(60_000, chunks=7_500)
    here_u0, here_p = dask.compute(u0, p)
    local = eagle.ode.solve(lorenz, here_u0, (0.0, 1.0), p=here_p)
    killed = []
    with local_cluster() as c, distributed.Client(c) as client:
        killer = _worker_killer(client, killed)
        try:
            remote = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, client=client)
            assert killed
            assert_same_lazy(local, remote)
        finally:
            killer.join()


CHECKPOINTED_RUN = """
import sys
import distributed
from dask import array as da
import eagle
from test_ode_cluster import lorenz, lorenz_sweep, local_cluster

if __name__ == "__main__":
    u0, p = lorenz_sweep(400)
    with local_cluster() as c, distributed.Client(c) as client:
        eagle.ode.solve(lorenz, da.from_array(u0, chunks=(3, 100)), (0.0, 1.0),
                        p=da.from_array(p, chunks=(3, 100)), client=client,
                        checkpoint=sys.argv[1], saveat=(0.0, 1.0, 3), rtol=1e-8, atol=1e-8)
"""


@pytest.mark.slow
def test_a_new_client_process_resumes_the_checkpointed_chunks_of_a_dask_solve(tmp_path):
    """The client restarts: a solve checkpointed by another process (its own client, cluster
    and string hashing) is read back whole by this one, with the local solve's bits."""
    import subprocess
    import sys
    from pathlib import Path

    from dask import array as da

    tests = Path(__file__).parent
    script = tmp_path / "checkpointed_run.py"
    script.write_text(CHECKPOINTED_RUN)
    env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=os.pathsep.join(
        [str(tests.parent / "src"), str(tests), os.environ.get("PYTHONPATH", "")]))
    subprocess.run([sys.executable, str(script), str(tmp_path / "chunks")], env=env,
                   check=True, timeout=300, capture_output=True)
    assert len(list((tmp_path / "chunks").glob("chunk-*.npz"))) == 4
    u0, p = lorenz_sweep(400)
    options = dict(saveat=(0.0, 1.0, 3), rtol=1e-8, atol=1e-8)
    local = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, **options)
    with local_cluster() as c, distributed.Client(c) as client:
        again = eagle.ode.solve(lorenz, da.from_array(u0, chunks=(3, 100)), (0.0, 1.0),
                                p=da.from_array(p, chunks=(3, 100)), client=client,
                                checkpoint=tmp_path / "chunks", **options)
        assert [chunk.resumed for chunk in again.report.chunks] == [True] * 4
        assert_same_lazy(local, again)
