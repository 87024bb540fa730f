"""The hand-written CUDA peers of ``benchmarks/gpu_ode_peers.py`` (``benchmarks/cuda_peers/``)
are right before a GPU ever runs them: built for the host from the same ``.cu`` text (a
prelude for ``__global__``, ``threadIdx``, ``blockIdx``, ``atomicAdd``; ``-ffp-contract=off``,
IEEE double as on a GPU with ``--fmad=false``), each takes eagle's accepted and rejected steps
on every trajectory and ends bit for bit where eagle's CPU backend ends (the same glibc ``pow``
and IEEE ``sqrt`` on both sides: the math library allows it here), saved rows included;
NVRTC compiles every file to an sm_90 cubin; and the benchmark's rehearsal runs its arms and
checks end to end and writes its JSON and table. Correctness only, never speed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import eagle
from eagle.bench import DT, MAX_STEPS, initial
from eagle.bench import oscillator as card_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gpu_ode_peers as gop  # noqa: E402
import handwritten_cuda as hc  # noqa: E402

if hc.host_compiler() is None:
    pytest.skip("no host C++ compiler to build the peers with", allow_module_level=True)

SIZES = {"lorenz": 12, "kepler": 10, "robertson": 8, "fpu16": 6}


@pytest.fixture(scope="module")
def device():
    return gop.Device(gpu=False)


@pytest.mark.parametrize("saveat", [False, True], ids=["end", "saveat"])
@pytest.mark.parametrize("name", list(SIZES))
def test_each_peer_takes_eagles_steps_and_ends_bit_for_bit(device, name, saveat):
    w = gop.WORKLOADS[name]
    u0, p = w.ensemble(SIZES[name], seed=11)
    ours = gop.eagle_arm(device, w, u0, p, saveat)
    peer = gop.cuda_arm(device, w, u0, p, saveat)
    for arm in (ours, peer):
        arm.once(device, timed=False)
    a, b = ours.fetch(), peer.fetch()
    assert (b.status == 1).all() and (a.status == 1).all()
    np.testing.assert_array_equal(b.accepted, a.accepted)
    np.testing.assert_array_equal(b.rejected, a.rejected)
    assert a.accepted.min() > 5  # a real run, not a step or two
    np.testing.assert_array_equal(b.u, a.u)
    if saveat:
        assert b.saved.shape == a.saved.shape == (gop.SAVES, *u0.shape)
        assert not np.isnan(a.saved).any()
        np.testing.assert_array_equal(b.saved, a.saved)
        np.testing.assert_array_equal(b.saved[-1], a.u)  # the last recorded time is t1


def test_the_card_peer_equals_eagle_in_one_launch_and_in_k_step_launches():
    """One launch of k = max_steps steps, and launches of 7 steps while a sample counts
    itself live (the device-side stop a WHILE node would read): both equal eagle's CPU run
    bit for bit, sample for sample, with eagle's step counts."""
    n = 200
    host = initial(n, "spread-1000")
    ours = {k: v.copy() for k, v in host.items()}
    eagle.simulate(card_kernel, max_steps=MAX_STEPS, device="cpu", dt=DT, **ours)
    peers = hc.HostPeers("oscillator.cu", hc.card_kernels())
    for k in (MAX_STEPS, 7):
        s = {key: v.copy() for key, v in host.items()}
        steps, live = np.zeros(n, dtype=np.int64), np.zeros(1, dtype=np.uint64)
        launches = 0
        while True:
            live[0] = 0
            peers.launch(hc.CARD_KERNEL, n, n, s["x"], s["v"], s["t"], s["omega"], s["t_end"],
                         DT, k, MAX_STEPS, steps, live)
            launches += 1
            if live[0] == 0:
                break
        for key in ("x", "v", "t"):
            np.testing.assert_array_equal(s[key], ours[key])
        np.testing.assert_array_equal(steps, np.rint(ours["t"] / DT).astype(np.int64))
        assert launches == (1 if k == MAX_STEPS else -(-1000 // 7))


@pytest.mark.parametrize("name", ["models.cu", "oscillator.cu"])
def test_nvrtc_compiles_each_peer_to_an_sm90_cubin(name):
    pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda import nvrtc

    try:
        nvrtc.nvrtc_version()
    except Exception as exc:  # noqa: BLE001 - no NVRTC library: nothing to check here
        pytest.skip(f"NVRTC unavailable: {exc}")
    data = hc.cubin(name, "sm_90")
    assert data[:4] == b"\x7fELF"
    source = hc.source(name)
    assert "#include \"" not in source  # inlined, so NVRTC needs no include path
    kernels = [*hc.ode_kernels()] if name == "models.cu" else [hc.CARD_KERNEL]
    for kernel in kernels:
        assert kernel.encode() in data


def test_the_rehearsal_runs_the_arms_and_checks_and_writes_json_and_table(tmp_path):
    code = gop.main(["--rehearse", "--out", str(tmp_path), "--workloads", "card", "lorenz",
                     "robertson", "--arms", "cuda"])
    assert code == 0
    result = json.loads((tmp_path / "gpu_ode_peers.json").read_text())
    table = (tmp_path / "gpu_ode_peers.md").read_text()
    assert result["rehearse"] and result["failures"] == [] and not result["skipped_cells"]
    cells = [c["cell"] for c in result["cells"]]
    assert cells == ["card spread-1000 n=300", "card uniform n=300", "lorenz n=40",
                     "lorenz n=40 saveat", "robertson n=16", "robertson n=16 saveat"]
    rows = [r for c in result["cells"] for r in c["rows"]]
    for row in rows:
        if row["workload"] == "card":
            assert row["exact"] is True and row["arm"] in ("eagle_graph", "cuda_loop")
        elif row["arm"] == "cuda":
            assert row["steps_equal"] == 1.0 and row["bit_identical"] is True
            assert row["vs_eagle"] == 0.0 and len(row["times_s"]) == 1
        else:
            assert row["arm"] == "eagle" and row["run_s"] > 0
            if not row["saveat"]:
                assert row["vs_reference"] < gop.BOUND
    assert "| lorenz | 40 |  | cuda |" in table and "Failures: none" in table


@pytest.mark.slow
def test_the_rehearsal_runs_diffrax_on_jax_cpu(tmp_path):
    pytest.importorskip("diffrax")
    code = gop.main(["--rehearse", "--out", str(tmp_path), "--workloads", "lorenz",
                     "--saveat", "both", "--arms", "diffrax"])
    assert code == 0
    rows = [r for c in json.loads((tmp_path / "gpu_ode_peers.json").read_text())["cells"]
            for r in c["rows"] if r["arm"] == "diffrax"]
    assert len(rows) == 2 and all(r["jax_platform"] == "cpu" for r in rows)
    assert all(r["vs_eagle"] < gop.BOUND and r["accepted_mean"] > 5 for r in rows)


def test_without_a_gpu_the_benchmark_says_so_and_writes_its_json(tmp_path):
    if gop.gpu_reason() is None:
        pytest.skip("a GPU is usable here: the benchmark would measure")
    assert gop.main(["--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "gpu_ode_peers.json").read_text())
    assert result["skipped"].startswith(("no GPU", "no CuPy"))


def test_a_peer_that_cannot_run_is_named_and_a_broken_cell_fails_alone(tmp_path, monkeypatch):
    """On the device nothing may sink the run: a peer whose first call raises is skipped with
    the reason (and, being ours, fails the run; a missing diffrax is only named), a cell that
    raises is a failure of its own, and the other cells are still measured and written."""
    def broken_peer(*args, **kwargs):
        def call():
            raise RuntimeError("no such kernel")

        return gop.Arm("cuda", call, lambda: None)

    monkeypatch.setattr(gop, "cuda_arm", broken_peer)
    real = gop.card_cell
    monkeypatch.setattr(gop, "card_cell", lambda device, n, config, args: (
        real(device, n, config, args) if config == "uniform" else 1 / 0))
    code = gop.main(["--rehearse", "--out", str(tmp_path), "--workloads", "card", "lorenz",
                     "--saveat", "off", "--arms", "cuda"])
    result = json.loads((tmp_path / "gpu_ode_peers.json").read_text())
    assert code == 1 and result["failures"] == [
        "card n=300 spread-1000: ZeroDivisionError: division by zero",
        "lorenz n=40: cuda did not run: its first call raised RuntimeError: no such kernel"]
    assert [c["cell"] for c in result["cells"]] == [
        "card n=300 spread-1000", "card uniform n=300", "lorenz n=40"]
    assert result["not_measured"] == [
        "cuda: its first call raised RuntimeError: no such kernel"]


def fake_cupy():
    """The few CuPy calls the peers' GPU path makes, on the host: arrays are NumPy arrays,
    ``RawKernel`` builds the named kernel of the ``.cu`` whose text it is given with the host
    compiler and checks its launch (grid, block, argument types), and a stream capture
    records launches into a graph that replays them."""
    import types

    capture: dict = {"calls": None}

    class RawKernel:
        def __init__(self, code, name, backend="nvrtc", options=()):
            assert backend == "nvrtc" and options in (("--fmad=false",), ("--fmad=true",))
            file = next(f for f in ("models.cu", "oscillator.cu") if hc.source(f) == code)
            kernels = hc.card_kernels() if file == "oscillator.cu" else hc.ode_kernels()
            assert name in kernels
            self.host, self.name = hc.HostPeers(file, kernels), name
            self.num_regs, self.local_size_bytes, self.max_threads_per_block = 40, 0, 256

        def __call__(self, grid, block, args):
            n = int(args[0])
            assert block == (hc.BLOCK,) and len(grid) == 1
            assert grid[0] * hc.BLOCK >= n > (grid[0] - 1) * hc.BLOCK
            assert all(isinstance(a, np.ndarray | np.int64 | np.float64) for a in args)

            def run():
                self.host.launch(self.name, n, *args)

            if capture["calls"] is not None:
                capture["calls"].append(run)
            else:
                run()

    class Graph:
        def __init__(self, calls):
            self.calls = calls

        def launch(self, stream=None):
            for call in self.calls:
                call()

    class Stream:
        def __init__(self, non_blocking=False):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def begin_capture(self):
            capture["calls"] = []

        def end_capture(self):
            graph, capture["calls"] = Graph(capture["calls"]), None
            return graph

        def synchronize(self):
            pass

    cp = types.ModuleType("cupy")
    cp.ndarray, cp.empty, cp.zeros, cp.full = np.ndarray, np.empty, np.zeros, np.full
    cp.asarray = cp.asnumpy = lambda a: np.array(a, copy=True)
    cp.RawKernel = RawKernel
    cp.cuda = types.SimpleNamespace(Stream=Stream, runtime=types.SimpleNamespace(
        deviceSynchronize=lambda: None))
    return cp


def test_the_gpu_path_of_the_peers_launches_and_captures_as_cupy_wants(monkeypatch):
    """The code the device runs for the ``cuda`` and ``cuda_loop`` arms (CuPy's RawKernel,
    its grid and argument types, the stream capture of the card's kernel and the graph's
    replay), over a stand-in CuPy that runs the kernels on the host: the same results as the
    host path and eagle."""
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    gpu, host = gop.Device(gpu=True), gop.Device(gpu=False)
    w = gop.WORKLOADS["kepler"]
    u0, p = w.ensemble(300, seed=5)  # two blocks of 256
    arms = [gop.cuda_arm(gpu, w, u0, p, True), gop.cuda_arm(host, w, u0, p, True)]
    for arm in arms:
        arm.once(gpu, timed=False)
    a, b = (arm.fetch() for arm in arms)
    np.testing.assert_array_equal(a.u, b.u)
    np.testing.assert_array_equal(a.saved, b.saved)
    np.testing.assert_array_equal(a.accepted, b.accepted)
    assert arms[0].info["num_regs"] == 40 and arms[0].info["bytes_per_trajectory"] > 0
    fmad = gop.cuda_arm(gpu, w, u0, p, False, fmad=True)
    fmad.once(gpu, timed=False)
    assert fmad.name == "cuda_fmad"

    card = initial(300, "spread-1000")
    loop = gop.cuda_loop_arm(gpu, card)
    assert loop.info["mode"] == "graph"
    ours = {k: v.copy() for k, v in card.items()}
    eagle.simulate(card_kernel, max_steps=MAX_STEPS, device="cpu", dt=DT, **ours)
    for _ in range(2):  # the graph replays from the reset arrays
        loop.reset()
        loop.once(gpu)
        np.testing.assert_array_equal(loop.fetch().u, np.stack([ours[k] for k in "xvt"]))
    assert len(loop.samples) == 2


def test_the_device_matrix_is_the_one_its_time_was_estimated_for():
    """The default device run: the card twice, Lorenz at 1e4..1e7 and the others at their
    headline size, each with and without saveat; diffrax (a compile of tens of seconds per
    shape) only at 1e5 and 1e6 without saveat: five compiles."""
    args = gop.parse([])
    plan = gop.plan_of(args)
    assert len(plan) == 16 and plan[:2] == [("card", 1_000_000, "spread-1000"),
                                            ("card", 1_000_000, "uniform")]
    assert [n for name, n, saveat in plan if name == "lorenz" and not saveat] == \
        [10_000, 100_000, 1_000_000, 10_000_000]
    diffrax = [(name, n) for name, n, saveat in plan if name != "card" and not saveat
               and n in args.diffrax_n and not args.diffrax_saveat]
    assert diffrax == [("lorenz", 100_000), ("lorenz", 1_000_000), ("kepler", 1_000_000),
                       ("robertson", 100_000), ("fpu16", 100_000)]
    assert args.rounds == 3 and args.budget_s == 170
