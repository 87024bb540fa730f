"""Checkpoint files are trusted only as far as they are checked: every metadata field against
its schema (``CheckpointError`` naming the field, never a ``KeyError``/``TypeError`` or a
silently wrong run); temporaries of killed writes are cleaned up by the next write; the rename
is followed by a folder flush; a large state is streamed to disk, not built in memory."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import tracemalloc
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import eagle
from eagle.checkpoint import CheckpointError, load
from kernels import spread_oscillator

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"
N = 500
HOST = "".join(c if c.isalnum() else "-" for c in socket.gethostname())

# --- trial counts (docs/reliability.md includes these lines) ---
KILLED_WRITES = 3  # checkpoint writers killed mid-write, each followed by a clean write
KILLED_UNREAPED = 12  # writers killed at random moments and left unreaped (zombies), per phase
# --- end of trial counts ---


def bindings(n=N):
    dt = 1e-3
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=dt * (1 + 99 * np.arange(n) / (n - 1)), dt=dt)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A valid checkpoint of a run stopped half way (so every field has a real value)."""
    runner = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=50,
                              steps_per_launch=8, **bindings())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # it is truncated on purpose
        runner.run()
    path = runner.checkpoint(tmp_path_factory.mktemp("good") / "run.npz")
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def write(path, entries: dict, meta=None) -> Path:
    entries = dict(entries)
    if meta is not None:
        text = meta if isinstance(meta, str) else json.dumps(meta)
        entries["meta"] = np.frombuffer(text.encode(), dtype=np.uint8)
    np.savez(path, **entries)
    return path


def meta_of(entries) -> dict:
    return json.loads(bytes(entries["meta"]).decode())


def changed(**fields):
    def change(meta):
        meta.update(fields)
    return change


def without(field):
    def change(meta):
        del meta[field]
    return change


def uniform(name, entry):
    def change(meta):
        meta["uniforms"][name] = entry
    return change


def dtype_of(name, value):
    def change(meta):
        meta["dtypes"][name] = value
    return change


CRAFTED_META = {
    "negative steps": (changed(steps=-5), "'steps'"),
    "steps as text": (changed(steps="5"), "'steps'"),
    "steps as bool": (changed(steps=True), "'steps'"),
    "fractional steps": (changed(steps=2.5), "'steps'"),
    "huge steps": (changed(steps=2**70), "'steps'"),
    "negative launches": (changed(launches=-1), "'launches'"),
    "live beyond n": (changed(live=10**30), "'live'"),
    "negative live": (changed(live=-1), "'live'"),
    "n disagreeing with the arrays": (changed(n=N + 1), "'n'"),
    "n zero": (changed(n=0), "'n'"),
    "zero max_steps": (changed(max_steps=0), "'max_steps'"),
    "negative max_steps": (changed(max_steps=-3), "'max_steps'"),
    "max_steps as null": (changed(max_steps=None), "'max_steps'"),
    "zero steps_per_launch": (changed(steps_per_launch=0), "'steps_per_launch'"),
    "unknown dtype": (dtype_of("x", "complex128"), "'dtypes'"),
    "dtypes not an object": (changed(dtypes=["float64"]), "'dtypes'"),
    "uniforms not an object": (changed(uniforms=3), "'uniforms'"),
    "uniform of the wrong type": (uniform("dt", ["float64", "fast"]), "'uniforms'.*'dt'"),
    "uniform dtype unlike dtypes": (uniform("dt", ["int64", 1]), "'uniforms'.*'dt'"),
    "uniform not a pair": (uniform("dt", 0.001), "'uniforms'.*'dt'"),
    "kernel not a string": (changed(kernel=5), "'kernel'"),
    "digest null": (changed(digest=None), "'digest'"),
    "device empty": (changed(device=""), "'device'"),
    "missing field": (without("launches"), "'launches' is missing"),
    "unknown field": (changed(surprise=1), "unknown checkpoint field 'surprise'"),
}


@pytest.mark.parametrize("case", list(CRAFTED_META))
def test_crafted_metadata_is_refused_naming_the_field(saved, tmp_path, case):
    change, words = CRAFTED_META[case]
    meta = meta_of(saved)
    change(meta)
    path = write(tmp_path / "crafted.npz", saved, meta)
    with pytest.raises(CheckpointError, match=words):
        load(path)
    with pytest.raises(CheckpointError, match=words):
        eagle.Runner.restore(path, eagle.deploy(spread_oscillator))


CRAFTED_ARRAYS = {
    "flags of shape (1,)": (dict(flags=np.zeros(1, bool)), "flags .*shape \\(500,\\)"),
    "flags as numbers": (dict(flags=np.zeros(N)), "flags .*bool"),
    "array shorter than n": ({"array:x": np.ones(N - 1)}, "'x' has shape \\(499,\\).*'n'"),
    "array of another dtype": ({"array:x": np.ones(N, np.float32)}, "'x' has dtype float32"),
    "array of an unknown name": ({"array:nope": np.ones(N)}, "'nope'"),
}


@pytest.mark.parametrize("case", list(CRAFTED_ARRAYS))
def test_arrays_that_disagree_with_the_metadata_are_refused(saved, tmp_path, case):
    change, words = CRAFTED_ARRAYS[case]
    path = write(tmp_path / "crafted.npz", {**saved, **change})
    with pytest.raises(CheckpointError, match=words):
        eagle.Runner.restore(path, eagle.deploy(spread_oscillator))


@pytest.mark.parametrize("meta", ["[1, 2]", "null", '"text"'])
def test_metadata_that_is_not_an_object_is_refused(saved, tmp_path, meta):
    path = write(tmp_path / "crafted.npz", saved, meta)
    with pytest.raises(CheckpointError, match="metadata must be an object"):
        eagle.Runner.restore(path, eagle.deploy(spread_oscillator))


def test_a_missing_array_is_refused_naming_it(saved, tmp_path):
    entries = {k: v for k, v in saved.items() if k != "array:v"}
    path = write(tmp_path / "crafted.npz", entries)
    with pytest.raises(CheckpointError, match="'v'"):
        eagle.Runner.restore(path, eagle.deploy(spread_oscillator))


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def finished_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_orphan_temporaries_are_removed_by_the_next_write(tmp_path):
    runner = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=5, **bindings())
    target = tmp_path / "run.npz"
    dead = finished_pid()
    orphans = [".run.npz.k3j_x9aq.tmp",  # eagle.cache.write_atomic's naming (earlier eagle)
               f".run.npz.eagle-{HOST}-{dead}-0badc0de.tmp"]  # a writer that has exited
    sleeping = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    keep = [f".run.npz.eagle-{HOST}-{sleeping.pid}-00c0ffee.tmp",  # a write that may be going on
            ".run.npz.eagle-elsewhere-1-00c0ffee.tmp",  # another host's: not ours to judge
            ".other.npz.abcdefgh.tmp"]  # another checkpoint's
    try:
        for name in orphans + keep:
            (tmp_path / name).write_bytes(b"partial")
        runner.checkpoint(target)
    finally:
        sleeping.kill()
        sleeping.wait()
    assert temporaries(tmp_path) == sorted(keep)
    restored = eagle.Runner.restore(target, eagle.deploy(spread_oscillator))  # and it is whole
    assert restored.steps == 0 and restored.n == N


def looping_writer(n: int) -> str:
    """A script that writes checkpoints of ``n`` samples to ``argv[1]`` until it is killed."""
    return f"""
import sys
sys.path[:0] = [{str(TESTS)!r}, {str(SRC)!r}]
import numpy as np, eagle
from kernels import spread_oscillator
n = {n}
runner = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=5, x=np.ones(n),
                          v=np.zeros(n), t=np.zeros(n), omega=np.ones(n), t_end=np.ones(n),
                          dt=1e-3)
print("ready", flush=True)
while True:
    runner.checkpoint(sys.argv[1])
"""


KILLED_WRITER = looping_writer(4_000_000)  # each write long enough for a kill to land in it


def test_writes_killed_mid_way_leave_nothing_behind_after_the_next_write(tmp_path):
    target = tmp_path / "big.npz"
    for trial in range(KILLED_WRITES):
        child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(target)],
                                 stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout.readline().strip() == "ready"
            deadline = time.monotonic() + 60
            while not temporaries(tmp_path) and time.monotonic() < deadline:
                time.sleep(0.001)
            assert temporaries(tmp_path), f"trial {trial}: the writer never started a write"
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        assert temporaries(tmp_path), f"trial {trial}: the kill should land mid-write"
        runner = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=5,
                                  **bindings())
        runner.checkpoint(target)
        assert temporaries(tmp_path) == [], f"trial {trial}"
        assert load(target)[0]["n"] == N


LOOPING_WRITER = looping_writer(300_000)  # writes of a few tens of ms, back to back


def kill_writers_at_random_moments(target: Path, count: int, seed: int) -> list:
    """``count`` processes writing checkpoints to ``target`` in a loop, each SIGKILLed at a
    random moment of its writes (the last one mid-write, so an orphan is surely left) and not
    reaped: they stay zombies, as under a parent that reaps late (a shell, a job runner, a test
    harness). The caller reaps them."""
    rng = np.random.default_rng(seed)
    children = []
    for k in range(count):
        before = set(temporaries(target.parent))
        child = subprocess.Popen([sys.executable, "-c", LOOPING_WRITER, str(target)],
                                 stdout=subprocess.PIPE, text=True)
        children.append(child)
        assert child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 60
        while not set(temporaries(target.parent)) - before and time.monotonic() < deadline:
            time.sleep(0.0005)  # a write of its own has begun
        if k < count - 1:
            time.sleep(rng.uniform(0.0, 0.08))
        child.send_signal(signal.SIGKILL)
    for child in children:  # dead, not reaped: a zombie whose files the kernel has closed
        deadline = time.monotonic() + 30
        while not _dead(child.pid) and time.monotonic() < deadline:
            time.sleep(0.005)
    return children


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _dead(pid: int) -> bool:
    """Exited, reaped or not, and its files released: the kernel drops a killed process's file
    locks a few milliseconds after its main thread shows Z."""
    if _state(pid) not in ("Z", "X", None):
        return False
    try:
        holders = {line.split()[4] for line in Path("/proc/locks").read_text().splitlines()}
    except (OSError, IndexError):
        return True
    return str(pid) not in holders


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states in /proc")
def test_writers_killed_at_random_moments_leave_nothing_even_unreaped(tmp_path):
    target = tmp_path / "run.npz"
    plan = eagle.deploy(spread_oscillator)
    left = {}
    for phase in ("next write", "restore"):
        children = kill_writers_at_random_moments(target, KILLED_UNREAPED, len(left))
        try:
            left[phase] = len(temporaries(tmp_path))
            assert left[phase] > 0, "no kill landed mid-write: the test tests nothing"
            if phase == "next write":
                runner = eagle.until_done(plan, max_steps=5, **bindings())
                runner.checkpoint(target)
            else:
                eagle.Runner.restore(target, plan)
            assert temporaries(tmp_path) == [], (phase, [
                (name, [(c.pid, _state(c.pid)) for c in children if f"-{c.pid}-" in name])
                for name in temporaries(tmp_path)])
        finally:
            for child in children:
                child.wait()
    print(f"orphans before clean-up: {left}, after: 0")


def test_the_folder_is_flushed_after_the_rename(tmp_path, monkeypatch):
    runner = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=5, **bindings())
    flushed = []
    real_fsync = os.fsync

    def fsync(fd):
        flushed.append((stat.S_ISDIR(os.fstat(fd).st_mode), (tmp_path / "run.npz").exists()))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    runner.checkpoint(tmp_path / "run.npz")
    assert (True, True) in flushed, "no flush of the folder after the file was in place"


def test_a_large_state_is_streamed_not_built_in_memory(tmp_path):
    n = 4_000_000
    b = dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.ones(n), t_end=np.ones(n),
             dt=1e-3)
    runner = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=5, **b)
    state = sum(a.nbytes for a in runner.arrays.values())
    tracemalloc.start()
    try:
        runner.checkpoint(tmp_path / "big.npz")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < state / 4, f"checkpoint of {state >> 20} MiB peaked at {peak >> 20} MiB"
    with zipfile.ZipFile(tmp_path / "big.npz") as z:
        assert z.getinfo("array:x.npy").file_size > 8 * n
    with np.load(tmp_path / "big.npz") as data:
        np.testing.assert_array_equal(data["array:t_end"], b["t_end"])
