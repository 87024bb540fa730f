"""Ensembles sharded over a Dask LocalCluster (loopback, started and stopped here): the same
bits as one local run, a killed worker changes nothing, a failing chunk names itself."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

import eagle
from kernels import oscillator, spread_oscillator

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
ed = pytest.importorskip("eagle.distributed")


def cluster(**options):
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                    host="127.0.0.1", dashboard_address=":0", **options)


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


def local_run(kernel, bindings, max_steps):
    copy = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in bindings.items()}
    eagle.simulate(kernel, max_steps=max_steps, **copy)
    return copy


@pytest.mark.parametrize("kernel, make", [(oscillator, uniform), (spread_oscillator, spread)],
                         ids=["uniform", "spread"])
def test_sharded_run_equals_one_local_run(client, kernel, make):
    bindings = make(30_001)
    expected = local_run(kernel, bindings, 5000)
    result = ed.until_done(eagle.deploy(kernel, "cpu"), client, chunks=4, max_steps=5000,
                           compute=True, **bindings)
    for key in ("x", "v", "t"):
        np.testing.assert_array_equal(result.arrays[key], expected[key])
    assert result.arrays["terminated"].all()
    report = result.report
    assert report.done == 30_001 and not report.truncated and len(report.chunks) == 4
    assert [(c.start, c.stop) for c in report.chunks] == [(0, 7500), (7500, 15000),
                                                          (15000, 22501), (22501, 30001)]
    assert sum(len(v) for v in report.workers.values()) == 4


def test_dask_arrays_in_and_out(client):
    bindings = spread(20_000)
    expected = local_run(spread_oscillator, bindings, 5000)
    lazy = dict(bindings, omega=da.from_array(bindings["omega"], chunks=7000))
    result = ed.until_done(spread_oscillator, client, chunks=(5000, 15000), max_steps=5000,
                           **lazy)
    assert isinstance(result.arrays["x"], da.Array)
    np.testing.assert_array_equal(result.arrays["x"].compute(), expected["x"])
    np.testing.assert_array_equal(result.arrays["t"].compute(), expected["t"])


def test_bad_bindings_are_refused_before_anything_is_sent(client):
    with pytest.raises(eagle.BindingTypeError, match="unknown binding 'omgea'"):
        ed.until_done(spread_oscillator, client, chunks=2, max_steps=10,
                      **dict(spread(100), omgea=1.0))
    with pytest.raises(ValueError, match="chunks must be between 1 and the 100 samples"):
        ed.until_done(spread_oscillator, client, chunks=101, max_steps=10, **spread(100))


def test_a_failing_chunk_raises_its_own_error_with_its_index(client):
    def poison(block, block_info=None):
        if block_info[0]["chunk-location"][0] == 1:
            raise ValueError("bad omega block")
        return block

    bindings = spread(2000)
    lazy = dict(bindings, omega=da.from_array(bindings["omega"], chunks=1000).map_blocks(
        poison, dtype=float))
    with pytest.raises(ValueError, match="bad omega block") as info:
        ed.until_done(spread_oscillator, client, chunks=2, max_steps=10, **lazy)
    assert any("chunk 1 (samples 1000 to 1999)" in note for note in info.value.__notes__)


def test_a_worker_killed_mid_run_changes_nothing():
    bindings = spread(400_000, k=3000)
    expected = local_run(spread_oscillator, bindings, 5000)
    with cluster() as c, distributed.Client(c) as client:
        pids = client.run(os.getpid)
        killed = []

        def kill_a_busy_worker():
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not killed:
                busy = [w for w, keys in client.processing().items()
                        if any("eagle-chunk" in str(k) for k in keys)]
                if busy:
                    time.sleep(0.5)  # well into its chunk (compiling or stepping)
                    os.kill(pids[busy[0]], signal.SIGKILL)
                    killed.append(busy[0])
                time.sleep(0.02)

        killer = threading.Thread(target=kill_a_busy_worker)
        killer.start()
        result = ed.until_done(eagle.deploy(spread_oscillator, "cpu"), client, chunks=4,
                               max_steps=5000, compute=True, **bindings)
        killer.join()
    assert killed, "no worker was killed"
    for key in ("x", "v", "t"):
        np.testing.assert_array_equal(result.arrays[key], expected[key])
    assert result.report.done == 400_000
