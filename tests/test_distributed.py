"""Ensembles sharded over a Dask LocalCluster (loopback, started and stopped here): the same
bits as one local run, inputs made on the workers, results left there, written to Zarr or
reduced there, a killed worker changes nothing, a failing chunk names itself.

The real command-line cluster (``dask scheduler`` + ``dask worker``), the bytes it moves and
the faults that need separate processes are in ``test_distributed_cluster.py``."""

from __future__ import annotations

import os
import random
import signal
import threading
import time

import numpy as np
import pytest

import eagle
import hawk
from hawk import Mutable, Out, Param, Scalar, Terminated
from hawk.kernel import ProgramKernel
from kernels import falling, oscillator, spread_oscillator

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
ed = pytest.importorskip("eagle.distributed")

N_SPREAD = 20_000
KILL_TRIALS = 3  # workers killed, each at a random moment of its own run


def cluster(**options):
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                    host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                    **options)


@pytest.fixture(scope="module")
def client():
    with cluster() as c, distributed.Client(c) as dask_client:
        yield dask_client


def spread(n, k=1000):
    dt = 1e-3
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=dt * (1 + (k - 1) * np.arange(n) / (n - 1)), dt=dt)


def uniform(n):
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=1.0, dt=1e-3)


def make_spread(lo, hi, n=N_SPREAD, k=1000):
    """``init`` for the spread ensemble: samples lo..hi-1 of ``spread(n, k)``, made from their
    global indices alone (so any chunking gives the same values)."""
    i = np.arange(lo, hi)
    return dict(x=np.ones(hi - lo), v=np.zeros(hi - lo), t=np.zeros(hi - lo),
                omega=1.0 + 2.0 * i / (n - 1), t_end=1e-3 * (1 + (k - 1) * i / (n - 1)))


def local_run(kernel, bindings, max_steps):
    copy = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in bindings.items()}
    eagle.simulate(kernel, max_steps=max_steps, **copy)
    return copy


@pytest.mark.parametrize("kernel, make", [(oscillator, uniform), (spread_oscillator, spread)],
                         ids=["uniform", "spread"])
def test_sharded_run_equals_one_local_run(client, kernel, make):
    bindings = make(30_001)
    expected = local_run(kernel, bindings, 5000)
    result = ed.run_on_cluster(eagle.deploy(kernel, "cpu"), client, chunks=4, max_steps=5000,
                               **bindings)
    final = result.gather()
    for key in ("x", "v", "t"):
        np.testing.assert_array_equal(final[key], expected[key])
    assert final["terminated"].all()
    report = result.report
    assert report.done == 30_001 and not report.truncated and len(report.chunks) == 4
    assert [(c.start, c.stop) for c in report.chunks] == [(0, 7500), (7500, 15000),
                                                          (15000, 22501), (22501, 30001)]
    assert sum(len(v) for v in report.workers.values()) == 4
    # each worker was started with one thread, so each chunk's host team has one
    assert [c.threads for c in report.chunks] == [1, 1, 1, 1]


def test_inputs_made_on_the_workers_and_results_left_there(client):
    expected = local_run(spread_oscillator, dict(make_spread(0, N_SPREAD), dt=1e-3), 5000)
    result = ed.run_on_cluster(spread_oscillator, client, n_samples=N_SPREAD, chunks=3,
                               max_steps=5000, init=make_spread, dt=1e-3)
    # only what the kernel writes comes back, as dask arrays over the workers' results
    assert sorted(result.arrays) == ["t", "terminated", "v", "x"]
    assert all(isinstance(a, da.Array) and a.shape == (N_SPREAD,)
               for a in result.arrays.values())
    assert result.arrays["x"].numblocks == (3,)
    for key in ("x", "v", "t"):
        np.testing.assert_array_equal(result.arrays[key].compute(), expected[key])
    assert result.reduced is None and result.report.done == N_SPREAD
    result.release()
    with pytest.raises(KeyError, match="kept no arrays"):
        result.gather("x")


def test_reduce_on_the_workers_keeps_only_the_reduction(client):
    def histogram(arrays, lo, hi):
        return np.histogram(arrays["x"], bins=8, range=(-1.0, 1.0))[0]

    expected = local_run(spread_oscillator, dict(make_spread(0, N_SPREAD), dt=1e-3), 5000)
    result = ed.run_on_cluster(spread_oscillator, client, n_samples=N_SPREAD, chunks=(5000, 15000),
                               max_steps=5000, init=make_spread, dt=1e-3, reduce=histogram,
                               keep=False)
    assert result.arrays == {} and len(result.reduced) == 2
    np.testing.assert_array_equal(
        result.reduced[0], np.histogram(expected["x"][:5000], bins=8, range=(-1.0, 1.0))[0])
    np.testing.assert_array_equal(sum(result.reduced),
                                  np.histogram(expected["x"], bins=8, range=(-1.0, 1.0))[0])


def test_results_written_to_zarr_from_the_workers(client, tmp_path):
    zarr = pytest.importorskip("zarr")
    expected = local_run(spread_oscillator, dict(make_spread(0, N_SPREAD), dt=1e-3), 5000)
    result = ed.run_on_cluster(spread_oscillator, client, n_samples=N_SPREAD, chunks=4,
                               max_steps=5000, init=make_spread, dt=1e-3)
    url = result.to_zarr(tmp_path / "run.zarr", "x", "t")
    store = zarr.open(url, mode="r")
    np.testing.assert_array_equal(store["x"][:], expected["x"])
    np.testing.assert_array_equal(store["t"][:], expected["t"])
    assert "v" not in store


def test_dask_arrays_in_one_submission_and_out(client, monkeypatch):
    bindings = spread(20_000)
    expected = local_run(spread_oscillator, bindings, 5000)
    lazy = dict(bindings, omega=da.from_array(bindings["omega"], chunks=7000),
                x=da.ones(20_000, chunks=3000))
    calls = []
    for method in ("compute", "submit", "map", "scatter", "persist"):
        original = getattr(client, method)
        monkeypatch.setattr(client, method, lambda *a, _m=method, _o=original, **k:
                            calls.append(_m) or _o(*a, **k))
    result = ed.run_on_cluster(spread_oscillator, client, chunks=(5000, 15000),
                               max_steps=5000, **lazy)
    assert calls == ["compute"]  # the whole run, every chunk and its dask inputs, at once
    assert isinstance(result.arrays["x"], da.Array) and "omega" not in result.arrays
    np.testing.assert_array_equal(result.arrays["x"].compute(), expected["x"])
    np.testing.assert_array_equal(result.arrays["t"].compute(), expected["t"])


@pytest.mark.slow
def test_vector_state_from_strided_dask_blocks(client):
    n = 3000
    rng = np.random.default_rng(18)
    position = np.ascontiguousarray(rng.uniform(1.0, 2.0, (3, n)))
    velocity = np.ascontiguousarray(rng.uniform(-0.1, 0.1, (3, n)))
    uniforms = dict(mu=1.0, dt=1e-3, r_min=0.5)
    with pytest.warns(eagle.TruncationWarning):  # every sample still falls at max_steps
        expected = local_run(falling, dict(position=position, velocity=velocity, **uniforms),
                             400)
    lazy_position = da.from_array(position, chunks=(1, 1000))  # rows apart: views, strided
    result = ed.run_on_cluster(falling, client, chunks=(700, 2300), max_steps=400,
                               position=lazy_position, velocity=velocity, **uniforms)
    final = result.gather("position", "velocity")
    np.testing.assert_array_equal(final["position"], expected["position"])
    np.testing.assert_array_equal(final["velocity"], expected["velocity"])
    assert result.arrays["position"].shape == (3, n) and result.report.truncated


def test_huge_dask_inputs_are_checked_without_a_full_size_array(client):
    n = 10**13  # 80 TB of float64 per array: only its metadata may be touched
    huge = dict(x=da.ones(n, chunks=10**11), v=da.zeros(n, chunks=10**11),
                t=da.zeros(n, chunks=10**11), omega=da.ones(n, chunks=10**11), t_end=1.0)
    with pytest.raises(eagle.BindingTypeError, match="'dt' is a Param"):
        ed.run_on_cluster(spread_oscillator, client, max_steps=10, dt=np.ones(3), **huge)


def spread_from(lo, hi, omega, t_end):
    """``init`` from its inputs' blocks: the spread ensemble's per-sample values as given."""
    return dict(x=np.ones(hi - lo), v=np.zeros(hi - lo), t=np.zeros(hi - lo), omega=omega,
                t_end=t_end)


def test_init_makes_each_chunk_from_its_blocks_of_init_inputs(client):
    """``init_inputs=``: a dask array's blocks (computed on the workers, cut to the run's
    chunks) and a NumPy array's slices are passed to ``init``; the bits are one local run's."""
    bindings = spread(2_000)
    expected = local_run(spread_oscillator, bindings, 5000)
    omega = da.from_array(bindings["omega"], chunks=700)  # not the run's chunks
    result = ed.run_on_cluster(spread_oscillator, client, chunks=3, max_steps=5000,
                               init=spread_from, dt=1e-3,
                               init_inputs=dict(omega=omega, t_end=bindings["t_end"]))
    assert result.report.n == 2_000 and len(result.report.chunks) == 3
    for key in ("x", "v", "t"):
        assert result.arrays[key].compute().tobytes() == expected[key].tobytes(), key
    with pytest.raises(TypeError, match="init_inputs are init's inputs: pass init= too"):
        ed.run_on_cluster(spread_oscillator, client, chunks=2, max_steps=10,
                          init_inputs=dict(omega=omega), **spread(2_000))
    with pytest.raises(eagle.BindingValueError, match="disagree on the number of samples"):
        ed.run_on_cluster(spread_oscillator, client, chunks=2, max_steps=10, dt=1e-3,
                          init=spread_from, init_inputs=dict(omega=omega,
                                                             t_end=np.ones(99)))


def test_bad_bindings_and_options_are_refused_before_anything_is_sent(client):
    with pytest.raises(eagle.BindingTypeError, match="unknown binding 'omgea'"):
        ed.run_on_cluster(spread_oscillator, client, chunks=2, max_steps=10,
                          **dict(spread(100), omgea=1.0))
    with pytest.raises(ValueError, match="chunks must be between 1 and the 100 samples"):
        ed.run_on_cluster(spread_oscillator, client, chunks=101, max_steps=10, **spread(100))
    with pytest.raises(eagle.BindingValueError, match="pass n_samples="):
        ed.run_on_cluster(spread_oscillator, client, chunks=2, max_steps=10,
                          init=make_spread, dt=1e-3)
    with pytest.raises(eagle.BindingTypeError, match="'omega' is both bound and made by init"):
        ed.run_on_cluster(spread_oscillator, client, n_samples=100, chunks=2, max_steps=10,
                          init=make_spread, dt=1e-3, omega=np.ones(100))
    with pytest.raises(eagle.BindingValueError, match="disagree on the number of samples"):
        ed.run_on_cluster(spread_oscillator, client, n_samples=99, chunks=2, max_steps=10,
                          **spread(100))
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        ed.run_on_cluster(spread_oscillator, client, chunks=2, max_steps=10, timeout=0,
                          **spread(100))
    with pytest.raises(TypeError, match="init must be a function"):
        ed.run_on_cluster(spread_oscillator, client, n_samples=100, chunks=2, max_steps=10,
                          init={"x": 1}, dt=1e-3)


def test_the_old_name_still_works_and_warns(client):
    bindings = spread(2000)
    expected = local_run(spread_oscillator, bindings, 5000)
    with pytest.warns(DeprecationWarning, match="use eagle.distributed.run_on_cluster"):
        result = ed.until_done(spread_oscillator, client, chunks=2, max_steps=5000,
                               compute=True, **bindings)
    np.testing.assert_array_equal(result.arrays["x"], expected["x"])
    assert result.arrays["omega"] is bindings["omega"]  # the caller's own, not a copy back
    assert result.report.done == 2000


def test_a_failing_chunk_raises_its_own_error_with_its_index(client):
    def poison(block, block_info=None):
        if block_info[0]["chunk-location"][0] == 1:
            raise ValueError("bad omega block")
        return block

    bindings = spread(2000)
    lazy = dict(bindings, omega=da.from_array(bindings["omega"], chunks=1000).map_blocks(
        poison, dtype=float))
    with pytest.raises(ValueError, match="bad omega block") as info:
        ed.run_on_cluster(spread_oscillator, client, chunks=2, max_steps=10, **lazy)
    assert any("chunk 1 (samples 1000 to 1999)" in note for note in info.value.__notes__)


def test_a_failing_init_names_its_chunk_and_worker_at_once(client):
    def init(lo, hi):
        if lo >= 3000:
            raise RuntimeError("no data for these samples")
        return make_spread(lo, hi, n=4000)

    start = time.monotonic()
    with pytest.raises(RuntimeError, match="no data for these samples") as info:
        ed.run_on_cluster(spread_oscillator, client, n_samples=4000, chunks=4, max_steps=5000,
                          init=init, dt=1e-3)
    notes = " ".join(info.value.__notes__)
    assert "chunk 3 (samples 3000 to 3999)" in notes
    assert any(f"on Dask worker {w}" in notes for w in client.nthreads())
    assert time.monotonic() - start < 30


def test_the_plan_device_and_fmad_reach_the_worker(monkeypatch):
    from eagle.distributed import _chunk

    seen = []
    real_deploy = eagle.plan.deploy

    def deploy(kernel, device=None, *, fmad=False):
        seen.append((device, fmad))
        return real_deploy(kernel, device, fmad=fmad)

    monkeypatch.setattr(eagle.plan, "deploy", deploy)
    program = spread_oscillator.specialize({})
    spec = _chunk.ChunkSpec(kernel=ProgramKernel(program),
                            device="cpu", fmad=True, max_steps=5000, steps_per_launch=None,
                            uniforms={"dt": 1e-3}, written=("x", "v", "t", "terminated"),
                            init=make_spread, reduce=None, keep=True, checkpoint=None, token="",
                            environment=ed.environment())
    output = _chunk.run_chunk(spec, 0, 0, 100, {})
    assert seen == [("cpu", True)]
    assert output.report.device == "cpu" and output.report.done == 100


@pytest.mark.slow
def test_workers_killed_at_random_moments_change_nothing():
    n = 200_000
    rng = random.Random(18)
    expected = local_run(spread_oscillator, dict(make_spread(0, n, n=n, k=3000), dt=1e-3), 5000)

    def init(lo, hi):
        return make_spread(lo, hi, n=n, k=3000)

    killed = []
    for trial in range(KILL_TRIALS):  # a fresh cluster each time: no waiting on restarts
        with cluster() as c, distributed.Client(c) as client:
            pids = client.run(os.getpid)
            delay = rng.uniform(0.0, 0.6)

            def kill_a_busy_worker(delay=delay, pids=pids, trial=trial, client=client):
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    busy = [w for w, keys in client.processing().items()
                            if any("eagle-chunk" in str(k) for k in keys) and w in pids]
                    if busy:
                        time.sleep(delay)
                        os.kill(pids[busy[0]], signal.SIGKILL)
                        killed.append((trial, busy[0], delay))
                        return
                    time.sleep(0.01)

            killer = threading.Thread(target=kill_a_busy_worker)
            killer.start()
            result = ed.run_on_cluster(spread_oscillator, client, n_samples=n, chunks=4,
                                       max_steps=5000, init=init, dt=1e-3)
            final = result.gather()
            killer.join()
            for key in ("x", "v", "t"):
                np.testing.assert_array_equal(final[key], expected[key])
            assert result.report.done == n
    assert len(killed) == KILL_TRIALS, killed


def test_progress_across_the_cluster_counts_every_sample(client, capsys):
    result = ed.run_on_cluster(spread_oscillator, client, n_samples=N_SPREAD, chunks=4,
                               max_steps=5000, init=make_spread, dt=1e-3, progress=True)
    err = capsys.readouterr().err
    assert "spread_oscillator (4 chunks)" in err and "100%" in err and "20.0k/20.0k" in err
    assert result.report.done == N_SPREAD


@pytest.mark.slow
def test_a_run_past_its_timeout_stops_and_says_so(client):
    def slow(lo, hi):
        if hi - lo > 1:  # not the client's one-sample probe: never done within the timeout
            time.sleep(30)
        return make_spread(lo, hi, n=1000)

    start = time.monotonic()
    with pytest.raises(TimeoutError, match="2 of 2 chunks not finished after timeout=1.0 s; "
                                           "pass checkpoint=folder"):
        ed.run_on_cluster(spread_oscillator, client, n_samples=1000, chunks=2, max_steps=10,
                          init=slow, dt=1e-3, timeout=1.0)
    assert time.monotonic() - start < 20
    client.restart()  # the sleeping chunks cannot be interrupted; fresh workers for the rest


def test_a_chunk_refuses_a_worker_whose_environment_differs():
    from eagle.distributed import _chunk

    other = dict(ed.environment(), llvmlite="0.1.0")
    spec = _chunk.ChunkSpec(kernel=ProgramKernel(spread_oscillator.specialize({})),
                            device="cpu", fmad=False, max_steps=10, steps_per_launch=None,
                            uniforms={"dt": 1e-3}, written=("x",), init=make_spread,
                            reduce=None, keep=True, checkpoint=None, token="",
                            environment=other)
    with pytest.raises(ed.WorkerEnvironmentError,
                       match=r"refusing to run on worker .*: it runs llvmlite "
                             r"\S+ \(the client has 0.1.0\)"):
        _chunk.run_chunk(spec, 0, 0, 10, {})


@hawk.kernel
def brownian(drift: Param, barrier: Param, terminated: Terminated, x: Mutable[Scalar],
             first_u: Out[Scalar]):
    x += drift + hawk.normal()
    first_u = hawk.uniform()
    terminated = x > barrier


@pytest.mark.slow
def test_random_draws_do_not_depend_on_the_chunks(client):
    """A draw is keyed by the sample's global index: the same seed gives the same bits on one
    machine and cut into any chunks (issue 14)."""
    n = 5003
    bindings = dict(x=np.zeros(n), first_u=np.zeros(n), terminated=np.zeros(n, bool),
                    drift=0.05, barrier=8.0)
    expected = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in bindings.items()}
    eagle.simulate(brownian, max_steps=300, seed=11, **expected)
    for chunks in (3, [1, 2500, 2502]):
        result = ed.run_on_cluster(eagle.deploy(brownian, "cpu"), client, chunks=chunks,
                                   max_steps=300, seed=11, **bindings)
        final = result.gather()
        for key in ("x", "first_u", "terminated"):
            np.testing.assert_array_equal(final[key], expected[key])
    other = ed.run_on_cluster(brownian, client, chunks=2, max_steps=300, seed=12,
                              **bindings).gather()
    assert not np.array_equal(other["x"], expected["x"])
    with pytest.raises(eagle.BindingTypeError, match="seed"):
        ed.run_on_cluster(brownian, client, chunks=2, max_steps=300, **bindings)


def test_matrices_and_shared_matrices_are_cut_by_sample_and_shared_whole(client):
    """A per-sample Matrix[3, 3] (3, 3, n) is cut along its sample axis; a Param[Matrix[2, 3]]
    and a Param[Vec3] are sent whole to every chunk (never cut, though they are arrays)."""
    from test_matrices import linear, linear_bindings

    bindings = linear_bindings(3000)
    expected = local_run(linear, bindings, 50)
    result = ed.run_on_cluster(eagle.deploy(linear, "cpu"), client, chunks=3, max_steps=50,
                               **bindings)
    final = result.gather()
    for key in ("m", "x", "d", "k", "hist"):
        np.testing.assert_array_equal(final[key], expected[key])
    assert final["m"].shape == (3, 3, 3000) and len(result.report.chunks) == 3


def test_a_table_goes_whole_to_every_chunk(client):
    """A table as long as the ensemble is not cut along the samples: every chunk reads all of
    it, and the sharded run equals one local run; a dask table is refused before anything is
    sent."""
    from table_kernels import falling as tabulated

    n = 40
    mach = np.linspace(0.0, 3.0, n)
    bindings = dict(dt=0.01, g=9.81, k=np.linspace(1e-4, 1e-3, n), mach_points=mach,
                    cd_points=0.3 + 0.2 * np.exp(-(mach - 1.0) ** 2 * 4),
                    v=np.linspace(0.0, 1000.0, n), t=np.zeros(n))
    expected = local_run(tabulated, bindings, 500)
    result = ed.run_on_cluster(eagle.deploy(tabulated, "cpu"), client, chunks=4, max_steps=500,
                               **bindings)
    final = result.gather()
    np.testing.assert_array_equal(final["v"], expected["v"])
    assert "cd_points" not in final and len(result.report.chunks) == 4
    with pytest.raises(eagle.BindingTypeError, match=r"'cd_points' \(Table\) is a dask array"):
        ed.run_on_cluster(eagle.deploy(tabulated, "cpu"), client, chunks=4, max_steps=500,
                          **{**bindings, "cd_points": da.from_array(bindings["cd_points"])})
