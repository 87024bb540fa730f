"""The CPU backend's disk cache across processes, damaged entries, and concurrent use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import eagle
from kernels import oscillator

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"

# One run of the oscillator in a fresh process; prints what the test needs as JSON.
SCRIPT = f"""
import hashlib, json, sys
sys.path[:0] = [{str(TESTS)!r}, {str(SRC)!r}]
import numpy as np
import eagle
from kernels import oscillator
n = 2500
x, v, t = np.ones(n), np.zeros(n), np.zeros(n)
report = eagle.until_done(eagle.deploy(oscillator), max_steps=5000, x=x, v=v, t=t,
                          omega=np.linspace(1.0, 3.0, n), t_end=1.0, dt=1e-3).run()
print(json.dumps(dict(build_s=report.build_s, steps=report.steps, done=report.done,
                      x=hashlib.sha256(x.tobytes()).hexdigest())))
"""


def run_process(cache: Path) -> dict:
    env = {**os.environ, "EAGLE_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def entry_files(cache: Path, suffix: str) -> list[Path]:
    return sorted((cache / "cpu").rglob(f"*{suffix}"))


def test_second_process_loads_the_cache_without_recompiling(tmp_path):
    first = run_process(tmp_path)
    machine_code = entry_files(tmp_path, "run_blocks.o")
    assert machine_code, "no machine code was written"
    stamps = [p.stat().st_mtime_ns for p in machine_code]
    second = run_process(tmp_path)
    assert second == {**first, "build_s": second["build_s"]}
    assert second["build_s"] < first["build_s"]
    assert [p.stat().st_mtime_ns for p in entry_files(tmp_path, "run_blocks.o")] == stamps


def test_damaged_generated_source_is_rewritten(tmp_path):
    first = run_process(tmp_path)
    (source,) = entry_files(tmp_path, ".ll")
    good = source.read_text()
    source.write_text("define void @eagle_run_blocks() {\n  ret void\n}\n")  # plausible, wrong
    again = run_process(tmp_path)
    assert again["x"] == first["x"] and again["steps"] == first["steps"]
    assert source.read_text() == good


@pytest.mark.slow
def test_damaged_machine_code_is_rebuilt(tmp_path):
    first = run_process(tmp_path)
    for path in entry_files(tmp_path, "run_blocks.o"):
        path.write_bytes(b"\x00garbage" * 7)
    again = run_process(tmp_path)
    assert again["x"] == first["x"] and again["steps"] == first["steps"]


@pytest.mark.slow
def test_processes_compiling_the_same_kernel_at_once_agree(tmp_path):
    results = [None] * 3

    def worker(k):
        results[k] = run_process(tmp_path)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len({r["x"] for r in results}) == 1
    assert {r["done"] for r in results} == {2500}


def test_runners_in_several_threads_at_once_match_one_at_a_time():
    n, runs = 5000, 4

    def arrays(k):
        return dict(x=np.full(n, 1.0 + k), v=np.zeros(n), t=np.zeros(n),
                    omega=np.linspace(1.0, 3.0, n), t_end=1.0, dt=1e-3)

    plan = eagle.deploy(oscillator)
    expected = []
    for k in range(runs):
        a = arrays(k)
        eagle.until_done(plan, max_steps=5000, steps_per_launch=5, **a).run()
        expected.append(a["x"])
    together = [arrays(k) for k in range(runs)]
    errors = []

    def worker(k):
        try:
            eagle.until_done(plan, max_steps=5000, steps_per_launch=5, **together[k]).run()
        except BaseException as exc:  # reported below, on the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(runs)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    for k in range(runs):
        assert np.array_equal(together[k]["x"], expected[k])


def test_cache_is_private_to_the_user(tmp_path):
    import stat

    run_process(tmp_path / "cache")
    cache = tmp_path / "cache"
    folders = [cache, *[p for p in cache.rglob("*") if p.is_dir()]]
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert files
    for folder in folders:
        if folder.name != "__pycache__":  # written by Python's own import machinery
            assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0, folder
    for path in entry_files(cache, ".py"):
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path
