"""``scripts/gpu-check`` and ``benchmarks/gpu_loop.py`` rehearsed on a machine without a GPU:
the script gets through every step with platformdirs, pyelftools and dask hidden (the device
machine has none of them), but says first that no GPU is usable and exits 1, fails a step
that skipped GPU tests (for want of a GPU or of time), keeps to its time limits and writes at
most 11 files; the benchmark's arms run end to end on the emulated GPU."""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gpu-check"

pytest.importorskip("cuda.bindings.driver")
from eagle.cuda import driver as driver_module  # noqa: E402

if driver_module.is_available():
    pytest.skip("a real GPU is present: run scripts/gpu-check itself", allow_module_level=True)


def gpu_check(tmp_path: Path, *arguments: str, **environment: str):
    env = dict(os.environ, OUT=str(tmp_path / "out"), PYTHON=sys.executable,
               EAGLE_CACHE_DIR=str(tmp_path / "cache"), **environment)
    env.pop("PYTHONPATH", None)
    done = subprocess.run(["bash", str(SCRIPT), *arguments], env=env, capture_output=True,
                          text=True, timeout=240)
    files = {p.name: p.read_text(errors="replace") for p in (tmp_path / "out").iterdir()}
    return done, files


@pytest.mark.slow
def test_gpu_check_gets_through_every_step_without_platformdirs_pyelftools_dask(tmp_path):
    done, files = gpu_check(tmp_path, "--rehearse", GPU_CHECK_TESTS="tests/test_gpu.py")
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    summary = files["summary.txt"]
    assert done.stdout.startswith("no usable GPU: ") and summary.startswith("no usable GPU: ")
    assert "hidden (their import fails): platformdirs elftools dask" in summary
    assert "=== seed: ok" in summary, summary
    # the page's CPU cells ran; its GPU cells could not, which fails the step
    assert "=== page: FAILED (exit 1)" in summary, summary
    assert "run_page: 4 of 8 cells of what-a-graph-is.md ran, 4 skipped for want of a GPU" \
        in files["page.log"]
    assert "=== probe: FAILED: it found no GPU to probe" in summary, summary
    # green only where the GPU was used: the GPU tests skipped, the benchmark's arms too
    assert re.search(r"=== tests: FAILED: (\d+) of \1 tests skipped \(\1 for 'needs a GPU'\)",
                     summary), summary
    assert "=== bench: FAILED: no GPU" in summary, summary
    assert "=== peers: FAILED: no GPU" in summary, summary
    table = summary.split("step         time  result\n", 1)[1]
    assert [line.split()[0] for line in table.splitlines()[:6]] == \
        ["probe", "tests", "seed", "page", "bench", "peers"]
    assert table.splitlines()[-1].startswith("gpu-check: FAILED") and "no usable GPU" in table
    assert len(files) <= 11 and {"tests.xml", "gpu_loop.json", "gpu_ode_peers.json",
                                 "gpu_ode_peers.md"} <= set(files)
    assert json.loads(files["gpu_ode_peers.json"])["skipped"].startswith("no GPU")
    versions = files["probe.log"].splitlines()  # the versions first
    assert versions[1].startswith("python ") and versions[2].startswith("GPU: none")
    assert versions[3].startswith("NVRTC 13.") and versions[4].startswith("nvJitLink 13.")
    assert "probe: no GPU" in files["probe.log"]
    assert "needs a GPU" in files["tests.log"] and "errors=\"0\"" in files["tests.xml"]
    assert json.loads(files["gpu_loop.json"])["skipped"].startswith("no GPU")
    assert "the kernel fired" in files["seed.log"]  # the spec's cell, on the CPU here


@pytest.mark.slow
def test_gpu_check_stops_a_hanging_step_shows_where_and_keeps_its_limit(tmp_path):
    hang = tmp_path / "test_hang.py"
    hang.write_text("import time\n\n\ndef test_hangs_here():\n    time.sleep(600)\n")
    done, files = gpu_check(tmp_path, GPU_CHECK_TESTS=str(hang), GPU_CHECK_TOTAL="40")
    assert done.returncode == 1
    summary = files["summary.txt"]
    assert "=== tests: TIMED OUT" in summary, summary
    assert "test_hangs_here" in files["tests.log"]  # the stack dump names the hung test
    assert "skipped, the overall limit of 40 s is spent" in summary
    assert "gpu-check: FAILED" in summary


@pytest.mark.slow
def test_gpu_check_skips_tests_that_would_outlast_the_step_and_keeps_the_xml(tmp_path):
    slow = tmp_path / "test_slow.py"
    slow.write_text("import time\n\nimport pytest\n\n\n@pytest.mark.parametrize('k', range(40))"
                    "\ndef test_one_second(k):\n    time.sleep(1)\n")
    done, files = gpu_check(tmp_path, GPU_CHECK_TESTS=str(slow), GPU_CHECK_TOTAL="30")
    # the tests the deadline skipped were not run: the step fails, saying so
    assert re.search(r"=== tests: FAILED: \d+ of 40 tests skipped \(\d+ for 'this step's time "
                     r"is spent'\)", files["summary.txt"]), files["summary.txt"]
    xml = files["tests.xml"]
    ran = int(re.search(r'tests="(\d+)"', xml).group(1))
    skipped = int(re.search(r'skipped="(\d+)"', xml).group(1))
    assert ran == 40 and 10 <= skipped < 40 and "this step's time is spent" in xml


def load_benchmark():
    spec = importlib.util.spec_from_file_location("gpu_loop", ROOT / "benchmarks" /
                                                  "gpu_loop.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # import-safe: no GPU, no CuPy needed
    return module


def test_the_benchmark_says_no_gpu_and_writes_its_json(tmp_path):
    bench = load_benchmark()
    assert bench.main(["--quick", "--json", str(tmp_path / "g.json")]) == 0
    assert json.loads((tmp_path / "g.json").read_text())["skipped"].startswith("no GPU")


@pytest.fixture
def gpu(tmp_path_factory):
    from host_cuda import compiler

    if compiler() is None:
        pytest.skip("no host C++ compiler to emulate the GPU with")
    from emulated_gpu import EmulatedDriver
    from fake_driver import installed

    with installed(EmulatedDriver(tmp_path_factory.mktemp("emulated")),
                   compiler=lambda source, arch="sm_90", **_: source.encode() + b"\0") as d:
        yield d


def cupy_on(driver):
    """The few CuPy calls the benchmark makes, over the emulated GPU's memory."""
    from fake_driver import GpuArray

    class Array(GpuArray):
        def copy(self):
            return Array(driver, self.get())

        def __setitem__(self, key, value):
            assert key is Ellipsis and value.shape == self.shape
            ctypes.memmove(self.address, value.address, value.get().nbytes)

    return SimpleNamespace(asarray=lambda a: Array(driver, a), ndarray=Array,
                           asnumpy=lambda a: a.get(),
                           cuda=SimpleNamespace(runtime=SimpleNamespace(
                               deviceSynchronize=lambda: None)))


@pytest.mark.slow
def test_the_benchmark_arms_run_on_the_emulated_gpu(gpu):
    bench = load_benchmark()
    cp = cupy_on(gpu)
    rows = bench.card_rows(cp, 400, "spread-1000", 2, 1e12, check_cpu=True)
    by_arm = {r["arm"]: r for r in rows}
    assert list(by_arm) == list(bench.CARD_ARMS)
    for name in bench.EXACT_ARMS:  # equal to eagle's CPU backend, bit for bit
        assert by_arm[name]["exact"] is True and by_arm[name]["steps"] == 1000
    assert by_arm["eager_loop"]["launches"] == 1000
    assert by_arm["graph_fixed64"]["launches"] == 16 and by_arm["eagle_graph"]["launches"] < 16
    from eagle.bench import DT, initial

    t_end, t, steps = initial(400, "spread-1000")["t_end"], np.zeros(400), np.zeros(400, int)
    while (live := ~(t >= t_end)).any():  # the steps each sample takes, counted here
        t = np.where(live, t + DT, t)
        steps += live
    for row in rows:
        assert len(row["runs_s"]) == 2 and row["run_s"] > 0 and row["build_s"] >= 0
        assert row["sample_steps"] == steps.sum()
        assert row["fp64_limit_fraction"] == pytest.approx(
            row["sample_steps"] * bench.FP64_OPS_PER_STEP / 1e12 / row["run_s"])
    assert by_arm["eagle_graph"]["build_s"] > 0 and by_arm["eager_loop"]["build_s"] == 0
    tail = bench.tail_rows(cp, 300, 1, 1e12)  # 3 samples of 10,000 steps, 297 of 100
    assert [(r["config"], r["arm"]) for r in tail] == [
        ("tail-scattered", "eagle_graph"), ("tail-scattered", "graph_no_compaction"),
        ("tail-sorted", "eagle_graph"), ("tail-sorted", "graph_no_compaction")]
    assert all(r["sample_steps"] == 3 * 10_000 + 297 * 100 for r in tail)
    assert all(r["steps"] == 10_000 and r["vs_eagle_graph"] > 0 for r in tail)
    lorenz = bench.lorenz_rows(cp, 64, 20, 1, 1e12)
    assert lorenz[0]["arm"] == "eagle_graph" and lorenz[0]["launches"] >= 1
    if len(lorenz) == 2 and "skipped" not in lorenz[1]:  # JAX present (on the CPU here)
        assert lorenz[1]["max_abs_diff_vs_eagle"] < 1e-9


def test_the_probe_runs_every_probe_on_the_emulated_gpu(gpu, monkeypatch, capsys):
    """The emulated GPU runs CUDA source, not machine code: NVRTC's cubins and nvJitLink's
    links are replaced by the source they were made from; everything else is the probe."""
    from eagle.cuda import nvrtc, probe
    from eagle.cuda.emit import emit_cuda

    real = nvrtc.compile_source

    def compile_source(source, arch="sm_90", target="cubin", **options):
        return real(source, arch, target=target, **options) if target == "ptx" \
            else source.encode() + b"\0"

    gravity = emit_cuda(probe.gravity.specialize({})).encode() + b"\0"
    monkeypatch.setattr(nvrtc, "compile_source", compile_source)
    monkeypatch.setattr(nvrtc, "ptx_to_cubin", lambda ptx, arch: gravity)
    assert probe.main(["--each", "60"]) == 0
    out = capsys.readouterr().out
    for name in probe.PROBES:
        assert f"probe {name}: ok" in out, out
    assert "equal to NumPy bit for bit" in out and "5 of 5 passed" in out
    assert out.splitlines()[1].startswith("driver 13.0; GPU 0: Fake GPU")


def test_stage_pydeps_copies_diffrax_where_gpu_check_finds_it(tmp_path):
    """``scripts/stage-pydeps`` copies diffrax and its pure-Python dependencies with their
    metadata; on PYTHONPATH they import from there (``gpu-check`` appends ``.pydeps``)."""
    pytest.importorskip("diffrax")
    dest = tmp_path / "pydeps"
    done = subprocess.run(["bash", str(ROOT / "scripts" / "stage-pydeps"), str(dest)],
                          env=dict(os.environ, PYTHON=sys.executable), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    size = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())
    assert size < 16e6 and (dest / "diffrax" / "__init__.py").is_file()
    probe = subprocess.run([sys.executable, "-c", "import diffrax, importlib.metadata as m; "
                            "print(diffrax.__file__, m.version('equinox'))"],
                           env=dict(os.environ, PYTHONPATH=str(dest)), capture_output=True,
                           text=True, timeout=120, cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.startswith(str(dest / "diffrax"))
    assert '[ -d "$PWD/.pydeps" ]' in SCRIPT.read_text()
