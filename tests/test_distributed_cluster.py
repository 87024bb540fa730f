"""eagle.distributed on a real cluster of separate processes: ``dask scheduler`` and
``dask worker`` started here on 127.0.0.1 (no nanny, so a killed worker stays dead), every
process counting the bytes through its TCP comms (``--preload eagle.distributed.traffic``).

Shown here: inputs made on the workers and results left there move a few kilobytes through
the client and the scheduler, the same at 20,000 and 400,000 samples, and give the bits of one
local run; a worker with another eagle version is refused by name; losing every worker is a
clear error after ``no_workers_timeout`` and a rerun on new workers resumes from the finished
chunks; a client killed mid-run leaves its finished chunks for the next client."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import eagle
from kernels import spread_oscillator

distributed = pytest.importorskip("distributed")
ed = pytest.importorskip("eagle.distributed")
from eagle.distributed import traffic  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: the bytes one number per sample adds between the byte-counting tests' two sizes (2,000 and
#: 40,000 samples): a quarter of it bounds what may grow with n through the scheduler
ONE_NUMBER_PER_SAMPLE = (40_000 - 2_000) * 8


def make_spread(lo, hi, n, k=1000):
    """``init``: samples lo..hi-1 of the spread ensemble of ``n`` samples, from their global
    indices alone."""
    i = np.arange(lo, hi)
    return dict(x=np.ones(hi - lo), v=np.zeros(hi - lo), t=np.zeros(hi - lo),
                omega=1.0 + 2.0 * i / (n - 1), t_end=1e-3 * (1 + (k - 1) * i / (n - 1)))


@functools.lru_cache(maxsize=2)
def local_run(n, k=1000):
    state = make_spread(0, n, n, k)
    eagle.simulate(spread_oscillator, max_steps=5000, dt=1e-3, **state)
    return state


class CliCluster:
    """A scheduler and workers as separate ``python -m dask ...`` processes on 127.0.0.1."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.file = folder / "scheduler.json"
        self.env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(ROOT / "src"), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]))
        self.workers: dict[str, subprocess.Popen] = {}
        self.scheduler = self._start("scheduler", "scheduler", "--host", "127.0.0.1",
                                     "--port", "0", "--no-dashboard",
                                     "--scheduler-file", str(self.file))
        deadline = time.monotonic() + 60
        while not self.file.exists():
            if time.monotonic() > deadline or self.scheduler.poll() is not None:
                raise RuntimeError("dask scheduler did not start: " + self.log("scheduler"))
            time.sleep(0.1)

    def _start(self, log: str, *args) -> subprocess.Popen:
        with open(self.folder / f"{log}.log", "ab") as out:
            return subprocess.Popen([sys.executable, "-m", "dask", *args, "--preload",
                                     "eagle.distributed.traffic"], env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT)

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text()[-3000:]

    def add_worker(self, name: str, *extra: str) -> subprocess.Popen:
        self.workers[name] = self._start(name, "worker", "--scheduler-file", str(self.file),
                                         "--host", "127.0.0.1", "--nthreads", "1",
                                         "--no-nanny", "--no-dashboard", "--name", name, *extra)
        return self.workers[name]

    def kill_worker(self, name: str) -> None:
        process = self.workers.pop(name)
        process.send_signal(signal.SIGKILL)
        process.wait()

    def close(self) -> None:
        for process in [*self.workers.values(), self.scheduler]:
            process.kill()  # nothing to save: a graceful close takes seconds per process
            process.wait()


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    traffic.install()  # this process is the client
    cluster = CliCluster(tmp_path_factory.mktemp("cli-cluster"))
    try:
        cluster.add_worker("w1")
        cluster.add_worker("w2")
        with distributed.Client(scheduler_file=str(cluster.file)) as client:
            client.wait_for_workers(2, timeout=120)
            yield cluster, client
    finally:
        cluster.close()


def bytes_now(client) -> dict[str, int]:
    """Bytes sent plus received so far by the client, the scheduler and all workers."""
    here = traffic.counts()
    scheduler = client.run_on_scheduler(traffic.counts)
    workers = client.run(traffic.counts).values()
    return {"client": here["sent"] + here["received"],
            "scheduler": scheduler["sent"] + scheduler["received"],
            "workers": sum(w["sent"] + w["received"] for w in workers)}


def test_inputs_and_results_stay_on_the_workers_and_the_bits_match(cli):
    cluster, client = cli
    moved = {}
    for n in (2_000, 20_000, 400_000):  # the first compiles the kernel on the workers
        before = bytes_now(client)
        result = ed.run_on_cluster(spread_oscillator, client, n_samples=n, chunks=4, max_steps=5000,
                                   init=functools.partial(make_spread, n=n), dt=1e-3)
        after = bytes_now(client)
        moved[n] = {k: after[k] - before[k] for k in after}
        final = result.gather()
        expected = local_run(n)
        for key in ("x", "v", "t"):
            np.testing.assert_array_equal(final[key], expected[key])
        assert final["terminated"].all() and result.report.done == n
        result.release()
    print(moved)
    state = 400_000 * 5 * 8  # the five per-sample arrays of the larger run, in bytes
    for n, m in moved.items():
        assert m["client"] < 150_000 and m["scheduler"] < 300_000, (n, m)
    small, large = moved[20_000], moved[400_000]
    for who in ("client", "scheduler"):
        # 20x the samples, the same few kilobytes (give or take a worker heartbeat or two)
        assert abs(large[who] - small[who]) < 20_000, moved
        assert large[who] < state / 200, moved


def wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_worker_with_another_eagle_version_is_refused_by_name(cli, tmp_path):
    cluster, client = cli
    preload = tmp_path / "other_version.py"
    preload.write_text("import eagle, hawk\n"
                       "hawk.__version__ = eagle.__version__ = '0.0.0+other'\n")
    cluster.add_worker("odd", "--preload", str(preload))
    try:
        client.wait_for_workers(3, timeout=120)
        odd = next(address for address, info in client.scheduler_info(n_workers=-1)
                   ["workers"].items() if info["name"] == "odd")
        with pytest.raises(ed.WorkerEnvironmentError) as info:
            ed.run_on_cluster(spread_oscillator, client, n_samples=1000, chunks=2, max_steps=10,
                              init=functools.partial(make_spread, n=1000), dt=1e-3)
        message = str(info.value)
        assert f"worker {odd} runs eagle 0.0.0+other (the client has {eagle.__version__})" \
            in message and "hawk 0.0.0+other" in message
        assert message.count("worker tcp://") == 1  # the two good workers are not named
    finally:
        cluster.kill_worker("odd")
        wait_for(lambda: len(client.nthreads()) == 2, 60, "the odd worker to leave")


N_FAULT, K_FAULT, CHUNKS_FAULT = 600_000, 3000, 12


def chunk_files(folder: Path) -> int:
    return len(list(folder.glob("chunk-*.npz")))


def fault_run(client, folder: Path, **options):
    return ed.run_on_cluster(spread_oscillator, client, n_samples=N_FAULT, chunks=CHUNKS_FAULT,
                             max_steps=5000, dt=1e-3, checkpoint=folder,
                             init=functools.partial(make_spread, n=N_FAULT, k=K_FAULT),
                             **options)


def check_resumed(client, folder: Path, finished_before: int) -> None:
    result = fault_run(client, folder)
    assert result.report.resumed >= finished_before >= 1
    assert result.report.resumed < CHUNKS_FAULT  # the rest did run here
    final = result.gather("x", "v", "t")
    expected = local_run(N_FAULT, K_FAULT)
    for key in ("x", "v", "t"):
        np.testing.assert_array_equal(final[key], expected[key])


@pytest.mark.slow
def test_every_worker_lost_is_a_clear_error_and_a_rerun_resumes(cli, tmp_path):
    cluster, client = cli
    folder = tmp_path / "chunks"

    def kill_every_worker():
        wait_for(lambda: chunk_files(folder) >= 3, 120, "three finished chunks")
        for name in list(cluster.workers):
            cluster.kill_worker(name)

    killer = threading.Thread(target=kill_every_worker)
    killer.start()
    start = time.monotonic()
    try:
        with pytest.raises(ed.NoWorkersLeft, match="no Dask worker is connected") as info:
            fault_run(client, folder, no_workers_timeout=2.0)
    finally:
        killer.join()
    assert time.monotonic() - start < 60
    assert f"is in {folder}; a rerun with the same checkpoint= skips them" in str(info.value)
    finished = chunk_files(folder)
    assert 3 <= finished < CHUNKS_FAULT
    cluster.add_worker("w3")
    cluster.add_worker("w4")
    client.wait_for_workers(2, timeout=120)
    check_resumed(client, folder, finished)


CLIENT_SCRIPT = """
import functools, sys
import distributed
import eagle.distributed as ed
from kernels import spread_oscillator
from test_distributed_cluster import make_spread
with distributed.Client(scheduler_file=sys.argv[1]) as client:
    ed.run_on_cluster(spread_oscillator, client, n_samples={n}, chunks={chunks}, max_steps=5000,
                      dt=1e-3, checkpoint=sys.argv[2],
                      init=functools.partial(make_spread, n={n}, k={k}))
"""


def test_a_client_killed_mid_run_leaves_its_finished_chunks_for_the_next(cli, tmp_path):
    cluster, client = cli
    folder = tmp_path / "chunks"
    script = tmp_path / "client.py"
    script.write_text(textwrap.dedent(CLIENT_SCRIPT.format(n=N_FAULT, chunks=CHUNKS_FAULT,
                                                           k=K_FAULT)))
    other = subprocess.Popen([sys.executable, str(script), str(cluster.file), str(folder)],
                             env=cluster.env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: chunk_files(folder) >= 3 or other.poll() is not None, 120,
                 "three finished chunks")
    finally:
        other.kill()
        other.wait()
    assert other.returncode == -signal.SIGKILL  # killed, not finished
    # chunks already running when it died still finish and are written: wait for the workers
    wait_for(lambda: not any(client.processing().values()), 60, "the workers to go idle")
    finished = chunk_files(folder)
    assert finished < CHUNKS_FAULT
    check_resumed(client, folder, finished)


LOCAL_MODULE = """
import numpy as np


def make(lo, hi):
    return dict(x=np.ones(hi - lo), v=np.zeros(hi - lo), t=np.zeros(hi - lo),
                omega=np.ones(hi - lo), t_end=np.full(hi - lo, 1e-2))


def same(block):
    return block
"""


def test_what_only_the_client_can_import_is_refused_by_name_with_its_cause(
        cli, tmp_path, monkeypatch):
    """An ``init`` from a module of the client's folder: the workers cannot read it, so the
    run is refused before it is submitted, naming each worker and the cause, not as 'chunk 1
    (samples ...)'; the scheduler need not read it (the spec passes it sealed). A dask input
    built with such a function does reach the scheduler, whose failure to read the graph is
    reported as the scheduler's, with the cause (issue 45, defect 2)."""
    cluster, client = cli
    da = pytest.importorskip("dask.array")
    (tmp_path / "client_only_helpers.py").write_text(LOCAL_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import client_only_helpers

    try:
        with pytest.raises(ed.WorkerEnvironmentError) as info:
            ed.run_on_cluster(spread_oscillator, client, n_samples=100, chunks=2, max_steps=10,
                              init=client_only_helpers.make, dt=1e-3, timeout=60)
        message = str(info.value)
        for worker in client.nthreads():
            assert f"Dask worker {worker} cannot read this run's tasks: ModuleNotFoundError: " \
                   "No module named 'client_only_helpers'" in message
        assert not any("chunk" in note for note in getattr(info.value, "__notes__", ()))

        lazy = da.ones(100, chunks=50).map_blocks(client_only_helpers.same, dtype=float)
        with pytest.raises(ed.WorkerEnvironmentError) as info:
            ed.run_on_cluster(spread_oscillator, client, chunks=2, max_steps=10, x=lazy,
                              v=np.zeros(100), t=np.zeros(100), omega=np.ones(100), t_end=1.0,
                              dt=1e-3, timeout=60)
        assert f"the Dask scheduler at {client.scheduler.address} could not read the run's " \
               "task graph: ModuleNotFoundError: No module named 'client_only_helpers'" \
               in str(info.value)
        assert not any("chunk" in note for note in getattr(info.value, "__notes__", ()))
    finally:
        sys.modules.pop("client_only_helpers", None)


def test_a_worker_whose_ir_format_differs_is_refused_by_name_before_any_work(
        cli, tmp_path, monkeypatch):
    """Same version strings, another IR format (as an edited hawk/ir.py): refused by name
    before the run is submitted, at once, never a stall until ``timeout`` (issue 45, defect
    3). Before, such a worker could not unpickle the chunk's kernel and the run waited for
    its ``timeout``."""
    cluster, client = cli
    preload = tmp_path / "edited_ir.py"
    preload.write_text("import hawk.wire\nhawk.wire.ir_format_digest = lambda: 'edited'\n")
    cluster.add_worker("edited", "--preload", str(preload))
    try:
        client.wait_for_workers(3, timeout=120)
        edited = next(address for address, info in client.scheduler_info(n_workers=-1)
                      ["workers"].items() if info["name"] == "edited")
        start = time.monotonic()
        with pytest.raises(ed.WorkerEnvironmentError) as info:
            ed.run_on_cluster(spread_oscillator, client, n_samples=1000, chunks=4,
                              max_steps=10, init=functools.partial(make_spread, n=1000),
                              dt=1e-3, timeout=120)
        assert time.monotonic() - start < 20
        message = str(info.value)
        assert f"worker {edited} runs hawk IR format edited (the client has " in message
        assert message.count("worker tcp://") == 1
        assert not client.processing()[edited]  # nothing was given to it

        # one that joins after the checks (skipped here) is refused by its first chunk, by
        # name and at once: it checks its environment before it opens the chunk's spec
        from eagle.distributed import _run

        monkeypatch.setattr(_run, "check_workers", lambda client, expected: [])
        monkeypatch.setattr(_run, "check_readable", lambda client, spec: None)
        start = time.monotonic()
        with pytest.raises(ed.WorkerEnvironmentError) as info:
            ed.run_on_cluster(spread_oscillator, client, n_samples=1000, chunks=12,
                              max_steps=10, init=functools.partial(make_spread, n=1000),
                              dt=1e-3, timeout=120, workers=[edited])
        assert time.monotonic() - start < 20  # not the timeout
        assert f"refusing to run on worker {edited}: it runs hawk IR format edited" \
            in str(info.value)
    finally:
        cluster.kill_worker("edited")
        wait_for(lambda: len(client.nthreads()) == 2, 60, "the edited worker to leave")


def test_an_ode_solve_moves_its_samples_around_the_scheduler_and_matches_a_local_one(cli):
    """``eagle.ode.solve(..., client=, chunks=)``: each chunk's inputs go from the client
    straight to a worker and its results straight back, so the scheduler's bytes do not grow
    with the samples (20x the samples, the same few kilobytes), and the Solution is the local
    solve's, bit for bit (issue 45)."""
    from ode_models import lorenz

    cluster, client = cli
    moved = {}
    for n in (2_000, 40_000):
        rho = np.linspace(20.0, 40.0, n)
        p = np.stack([np.full(n, 10.0), rho, np.full(n, 8.0 / 3.0)])
        u0 = np.stack([np.ones(n), np.ones(n), np.full(n, 20.0)])
        options = dict(p=p, saveat=(0.0, 0.5, 6), rtol=1e-6, atol=1e-6)
        local = eagle.ode.solve(lorenz, u0, (0.0, 0.5), **options)
        before = bytes_now(client)
        remote = eagle.ode.solve(lorenz, u0, (0.0, 0.5), client=client, chunks=4, **options)
        after = bytes_now(client)
        moved[n] = {k: after[k] - before[k] for k in after}
        for name in ("u", "t", "saved", "accepted", "rejected", "status"):
            assert getattr(local, name).tobytes() == getattr(remote, name).tobytes(), name
    print(moved)
    small, large = moved[2_000], moved[40_000]
    samples = 40_000 * 8 * (3 + 3 + 3 * 6)  # the larger run's u0, p and saved, in bytes
    assert large["client"] > samples  # the samples did go through the client...
    # ...not the scheduler: it carries the run's description (the kernel's IR, ~100 kB for
    # dopri5 on Lorenz with saveat, sent to every worker for the check before the run and
    # once in the graph) and reports, the same whatever n (0.56 MB at both n here)
    assert abs(large["scheduler"] - small["scheduler"]) < ONE_NUMBER_PER_SAMPLE // 4, moved
    assert large["scheduler"] < 1_500_000, moved


def test_an_ode_solve_over_dask_inputs_moves_no_samples_through_the_client(cli):
    """``eagle.ode.solve`` with ``u0`` and ``p`` as dask arrays made on the workers: neither
    the client's nor the scheduler's bytes grow with the samples (20x the samples), the
    results stay on the workers, and a reduction made there has the local solve's value."""
    from dask import array as da

    from ode_models import lorenz

    cluster, client = cli
    moved, means = {}, {}
    for n in (2_000, 40_000):
        chunks = n // 4
        rho = da.linspace(20.0, 40.0, n, chunks=chunks)
        p = da.stack([da.full(n, 10.0, chunks=chunks), rho,
                      da.full(n, 8.0 / 3.0, chunks=chunks)])
        u0 = da.stack([da.ones(n, chunks=chunks), da.ones(n, chunks=chunks),
                       da.full(n, 20.0, chunks=chunks)])
        options = dict(saveat=(0.0, 0.5, 6), rtol=1e-6, atol=1e-6)
        before = bytes_now(client)
        remote = eagle.ode.solve(lorenz, u0, (0.0, 0.5), p=p, client=client, **options)
        means[n] = remote.saved.mean(axis=-1).compute()  # (6, 3), made on the workers
        after = bytes_now(client)
        moved[n] = {k: after[k] - before[k] for k in after}
        local = eagle.ode.solve(lorenz, u0.compute(), (0.0, 0.5), p=p.compute(), **options)
        np.testing.assert_allclose(means[n], local.saved.mean(axis=-1), rtol=1e-12)
        assert remote.u.compute().tobytes() == local.u.tobytes()
    print(moved)
    small, large = moved[2_000], moved[40_000]
    samples = 40_000 * 8 * (3 + 3 + 3 * 6)  # the larger run's u0, p and saved, in bytes
    for who in ("client", "scheduler"):
        # any array of one number per sample would add 304 kB (38,000 more samples x 8 bytes);
        # what does grow is the workers' heartbeats and metrics over a longer run (44 kB once,
        # in a clean-clone CI run at load 4 beside other jobs)
        assert abs(large[who] - small[who]) < ONE_NUMBER_PER_SAMPLE // 4, moved
        assert large[who] < samples / 4, moved


def test_an_adjoint_over_dask_inputs_moves_no_samples_through_the_scheduler(cli):  # issue 45
    """``solve(..., adjoint=True)`` with ``u0`` and ``p`` as dask arrays made on the workers,
    then ``Solution.vjp`` from a ``dsaved`` made there from the dask ``saved``: the recorded
    steps stay on the workers, each chunk's backward pass runs beside them, and the shared
    ``p``'s gradient comes back as its 3 numbers, the local solve's bits; neither the client's
    nor the scheduler's bytes grow with the samples (20x the samples)."""
    import dask
    from dask import array as da

    from ode_models import lorenz

    cluster, client = cli
    moved = {}
    shared = np.array([10.0, 28.0, 8.0 / 3.0])
    options = dict(saveat=(0.0, 0.5, 6), rtol=1e-6, atol=1e-6, adjoint=True,
                   adjoint_steps=100)
    for n in (2_000, 40_000):
        chunks = n // 4
        u0 = da.stack([da.ones(n, chunks=chunks), da.linspace(0.9, 1.1, n, chunks=chunks),
                       da.full(n, 20.0, chunks=chunks)])
        before = bytes_now(client)
        remote = eagle.ode.solve(lorenz, u0, (0.0, 0.5), p=shared, client=client, **options)
        gradients = remote.vjp(dsaved=da.cos(remote.saved))  # made on the workers
        p_bar, u0_mean = dask.compute(gradients.p, gradients.u0.mean(axis=-1))
        after = bytes_now(client)
        moved[n] = {k: after[k] - before[k] for k in after}
        local = eagle.ode.solve(lorenz, u0.compute(), (0.0, 0.5), p=shared, **options)
        here = local.vjp(dsaved=np.cos(local.saved))
        assert p_bar.tobytes() == here.p.tobytes()
        np.testing.assert_allclose(u0_mean, here.u0.mean(axis=-1), rtol=1e-12)
        del remote, gradients
    print(moved)
    small, large = moved[2_000], moved[40_000]
    for who in ("client", "scheduler"):
        assert abs(large[who] - small[who]) < ONE_NUMBER_PER_SAMPLE // 4, moved
    # nor between workers: each chunk's backward pass ran where its recording is (moving one
    # would be 100 rows of 5 numbers per sample; 0.8 MB more moved here at 38,000 more samples,
    # the chunks' first recorded times and u0's blocks)
    assert large["workers"] - small["workers"] < 10 * ONE_NUMBER_PER_SAMPLE, moved
