"""The compile cache heals itself, runs only what it verified, and a compile survives Ctrl-C.

Every case runs in fresh processes with ``EAGLE_CACHE_DIR`` pointing to a temporary folder: the
cache is damaged between processes (or while one compiles), and the next process must run, give
the right answer and leave the entry rebuilt, so that the one after it loads it as it is.
Processes that do not depend on each other run at the same time to keep the suite quick.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import eagle
from eagle.cpu import native
from kernels import oscillator

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"
N = 2500

# One run of the oscillator (and, with argument 2, of its float32 version too) in a fresh
# process; prints a JSON line: the result's hash, the build time and the cache's warnings.
CHILD = f"""
import hashlib, json, sys, warnings
sys.path[:0] = [{str(TESTS)!r}, {str(SRC)!r}]
import numpy as np
import eagle
from kernels import oscillator
out = dict(x=[], build_s=[])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for dtype in (np.float64, np.float32)[:int(sys.argv[1])]:
        x = np.ones({N}, dtype)
        report = eagle.until_done(eagle.deploy(oscillator), max_steps=5000, x=x,
                                  v=np.zeros({N}, dtype), t=np.zeros({N}, dtype),
                                  omega=np.linspace(1.0, 3.0, {N}).astype(dtype),
                                  t_end=1.0, dt=1e-3).run()
        out["x"].append(hashlib.sha256(x.tobytes()).hexdigest())
        out["build_s"].append(report.build_s)
out["warnings"] = [str(w.message) for w in caught if "EAGLE_CACHE_DIR" in str(w.message)]
print(json.dumps(out))
"""


def expected_hash(dtype=np.float64) -> str:
    import hashlib

    x = np.ones(N, dtype)
    eagle.until_done(eagle.deploy(oscillator), max_steps=5000, x=x, v=np.zeros(N, dtype),
                     t=np.zeros(N, dtype), omega=np.linspace(1.0, 3.0, N).astype(dtype),
                     t_end=1.0, dt=1e-3).run()
    return hashlib.sha256(x.tobytes()).hexdigest()


def start(cache: Path, kernels: int = 1) -> subprocess.Popen:
    env = {**os.environ, "EAGLE_CACHE_DIR": str(cache)}
    return subprocess.Popen([sys.executable, "-c", CHILD, str(kernels)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(child: subprocess.Popen) -> dict:
    """The child's JSON line, or {"error": its stderr} if it failed."""
    out, err = child.communicate(timeout=300)
    if child.returncode != 0:
        return {"error": err.strip().splitlines()[-1:] or [f"exit {child.returncode}"],
                "stderr": err}
    return {**json.loads(out.strip().splitlines()[-1]), "stderr": err}


def run_all(caches: list[Path], kernels: int = 1) -> list[dict]:
    """One child per cache folder, all at once; their results in order."""
    return [finish(child) for child in [start(c, kernels) for c in caches]]


def entry(cache: Path) -> Path:
    (folder,) = [p for p in (cache / "cpu").iterdir()]
    return folder


def listing(cache: Path) -> dict[str, str]:
    """Every path under the cache's one CPU entry, with its kind."""
    folder = entry(cache)
    return {str(p.relative_to(folder)): _kind(p) for p in sorted(folder.rglob("*"))}


def _kind(path: Path) -> str:
    if not path.is_dir():
        return "file"
    return "folder others may write" if path.stat().st_mode & 0o022 else "folder"


def machine_code_stamps(cache: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in (cache / "cpu").rglob("run_blocks.o")}


@pytest.fixture(scope="module")
def warm(tmp_path_factory) -> Path:
    """A cache that one process has filled with the oscillator's entry."""
    cache = tmp_path_factory.mktemp("warm") / "cache"
    (result,) = run_all([cache])
    assert "error" not in result, result["stderr"]
    return cache


def _replace_by_file(path: Path) -> None:
    shutil.rmtree(path)
    path.write_bytes(b"not a folder")


def _replace_by_folder(path: Path) -> None:
    path.unlink()
    (path / "inside").mkdir(parents=True)


def _rename_symbol(path: Path) -> None:
    """The object code whole (its digest verifies) but the symbol to call one it lacks."""
    code, _ = native.unpack(path.read_bytes())
    path.write_bytes(native.pack(code, "no_such_function"))


def _each(pattern: str, action):
    def damage(folder: Path) -> None:
        paths = sorted(folder.rglob(pattern))
        assert paths, pattern
        for path in paths:
            action(path)
    return damage


# --- trial counts (docs/reliability.md includes this block)
DAMAGE_DURING_COMPILE_TRIALS = 2  # processes compiling while another damages their cache
CTRL_C_EVENLY_SPACED = 4  # Ctrl-C at 0, 1/4, 2/4, 3/4 of a cached start (import, load, run)
CTRL_C_RANDOM_CACHED = 1  # and at a random moment of it
CTRL_C_RANDOM_COLD = 2  # at random moments of a first compile
# Shapes of damage; the last five leave no usable machine code, so the process compiles anew.
DAMAGE = {
    ".ll replaced by a folder": _each("*.ll", _replace_by_folder),
    ".ll missing": _each("*.ll", Path.unlink),
    "null bytes in the .ll": _each("*.ll", lambda p: p.write_bytes(b"\x00" * 64)),
    "entry folder replaced by a file": _replace_by_file,
    "a folder everyone may write in the entry": lambda f: (f / "stray").mkdir(mode=0o777),
    "object code replaced by a folder": _each("run_blocks.o", _replace_by_folder),
    "object code missing": _each("run_blocks.o", Path.unlink),
    "one object code byte flipped": _each("run_blocks.o", lambda p: _flip(p)),
    "object code cut short": _each("run_blocks.o", lambda p: p.write_bytes(p.read_bytes()[:999])),
    "object code calling a symbol it lacks": _each("run_blocks.o", _rename_symbol),
}
# --- end of trial counts


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.slow
def test_damage_of_every_shape_is_rebuilt_and_the_next_process_loads_it(warm, tmp_path):
    expected = expected_hash()
    good = listing(warm)
    source = {p.name: p.read_bytes() for p in entry(warm).glob("*.ll")}
    caches = {}
    for name, damage in DAMAGE.items():
        cache = tmp_path / name.replace(" ", "_")
        shutil.copytree(warm, cache)
        damage(entry(cache))
        caches[name] = cache
    problems = {}
    healed = dict(zip(caches, run_all(list(caches.values())), strict=True))
    for name, result in healed.items():
        cache = caches[name]
        if "error" in result:
            problems[name] = result["error"]
        elif result["warnings"]:
            problems[name] = result["warnings"]
        elif result["x"] != [expected]:
            problems[name] = "wrong result"
        elif listing(cache) != good:
            problems[name] = f"entry not rebuilt: {listing(cache)}"
        elif {p.name: p.read_bytes() for p in entry(cache).glob("*.ll")} != source:
            problems[name] = "source not rewritten"
    assert not problems, problems
    stamps = {name: machine_code_stamps(cache) for name, cache in caches.items()}
    for name, result in zip(caches, run_all(list(caches.values())), strict=True):
        cache = caches[name]
        if "error" in result or result["x"] != [expected]:
            problems[name] = f"next process: {result.get('error', 'wrong result')}"
        elif machine_code_stamps(cache) != stamps[name]:
            problems[name] = "next process compiled again instead of loading the rebuilt entry"
    assert not problems, problems


@pytest.mark.slow
def test_damage_while_a_process_compiles_never_crashes_it(tmp_path):
    expected = expected_hash()
    rng = random.Random(16)
    failures = []
    for trial in range(DAMAGE_DURING_COMPILE_TRIALS):
        cache = tmp_path / f"trial{trial}"
        child = start(cache)
        damager = _Damager(cache, rng)
        damager.start()
        try:
            result = finish(child)
        finally:
            damager.stop.set()
            damager.join()
        assert damager.done > 0, "the damage should land while the child compiles"
        if "error" in result or result["x"] != [expected]:
            failures.append(result.get("error", "wrong result"))
    assert not failures, failures


class _Damager(threading.Thread):
    """Damages the cache at random moments until told to stop."""

    def __init__(self, cache: Path, rng: random.Random):
        super().__init__()
        self.cache, self.rng, self.stop, self.done = cache, rng, threading.Event(), 0

    def run(self):
        while not self.stop.is_set():
            self.done += _damage_once(self.cache, self.rng)
            time.sleep(self.rng.uniform(0, 0.004))


def _damage_once(cache: Path, rng: random.Random) -> int:
    """One random act of damage to whatever of the cache exists now; 1 if one was done."""
    try:
        folders = list((cache / "cpu").iterdir())
        if not folders:
            return 0
        folder = folders[0]
        shape = rng.randrange(5)
        sources = list(folder.glob("*.ll"))
        if shape == 0 and sources:
            sources[0].write_bytes(b"\x00" * 32)
        elif shape == 1 and sources:
            sources[0].unlink()
            sources[0].mkdir()
        elif shape == 2:
            (folder / "run_blocks.o").unlink()
        elif shape == 3:
            (folder / "run_blocks.o").write_bytes(b"garbage")
        else:
            for path in folder.iterdir():
                if path.is_dir():
                    path.rmdir()
        return 1
    except OSError:
        return 0  # the child changed the folder under us: try again


def _immutable(path: Path, on: bool) -> bool:
    """Make a folder unwritable even for root (chattr +i); False where that is not possible."""
    flag = "+i" if on else "-i"
    done = subprocess.run(["chattr", flag, str(path)], capture_output=True)
    return done.returncode == 0


@pytest.mark.slow
def test_an_unusable_cache_location_compiles_in_memory_with_one_warning(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    read_only = tmp_path / "read-only"
    read_only.mkdir(mode=0o700)
    if os.geteuid() == 0:
        if not _immutable(read_only, True):
            pytest.skip("as root, a read-only folder needs chattr +i")
    else:
        read_only.chmod(0o500)
    # Two kernels under the file: still one warning.
    locations = {"a file": (a_file, 2), "read-only": (read_only, 1),
                 "under a file": (a_file / "cache", 1)}
    try:
        children = {name: start(path, k) for name, (path, k) in locations.items()}
        results = {name: finish(child) for name, child in children.items()}
    finally:
        if os.geteuid() == 0:
            _immutable(read_only, False)
        read_only.chmod(0o700)
    expected = [expected_hash(np.float64), expected_hash(np.float32)]
    for name, result in results.items():
        assert "error" not in result, (name, result["stderr"])
        assert result["x"] == expected[:locations[name][1]], name
        assert len(result["warnings"]) == 1, (name, result["warnings"])
        assert "EAGLE_CACHE_DIR" in result["warnings"][0], name
    assert list(read_only.iterdir()) == []
    assert a_file.read_text() == "not a folder"


@pytest.mark.slow
def test_a_cache_root_others_may_write_or_own_is_not_used(tmp_path):
    roots = {}
    for name, mode in (("group-writable", 0o770), ("world-writable", 0o1777)):
        roots[name] = tmp_path / name
        roots[name].mkdir()
        roots[name].chmod(mode)
    if os.geteuid() == 0:  # only root can give a folder away
        roots["another user's"] = tmp_path / "other"
        roots["another user's"].mkdir(mode=0o700)
        os.chown(roots["another user's"], 65534, 65534)
    before = {name: root.stat() for name, root in roots.items()}
    results = dict(zip(roots, run_all(list(roots.values())), strict=True))
    expected = expected_hash()
    for name, result in results.items():
        assert "error" not in result, (name, result["stderr"])
        assert result["x"] == [expected], name
        assert len(result["warnings"]) == 1 and "EAGLE_CACHE_DIR" in result["warnings"][0], \
            (name, result["warnings"])
        assert list(roots[name].iterdir()) == [], f"{name}: the cache root was written to"
        now = roots[name].stat()
        assert (now.st_mode, now.st_uid) == (before[name].st_mode, before[name].st_uid), name


# Ctrl-C during the first compile of a process, then run() again in the same process.
INTERRUPTED = f"""
import hashlib, json, os, signal, sys, threading, time
sys.path[:0] = [{str(TESTS)!r}, {str(SRC)!r}]
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in an interactive session
import numpy as np
import eagle
from kernels import oscillator
x = np.ones({N})
runner = eagle.until_done(eagle.deploy(oscillator), max_steps=5000, x=x, v=np.zeros({N}),
                          t=np.zeros({N}), omega=np.linspace(1.0, 3.0, {N}), t_end=1.0,
                          dt=1e-3)
delay = float(sys.argv[1])
timer = threading.Timer(max(delay, 0), os.kill, (os.getpid(), signal.SIGINT))
interrupted, build_s = None, None
start = time.perf_counter()
try:
    if delay >= 0:
        timer.start()
    build_s = runner.run().build_s
    if delay >= 0:
        timer.join()
        time.sleep(0.2)  # a signal that came after the run lands here
except KeyboardInterrupt:
    interrupted = time.perf_counter() - start
steps = runner.steps
runner.run()
print(json.dumps(dict(interrupted=interrupted, steps_then=steps, build_s=build_s,
                      x=hashlib.sha256(x.tobytes()).hexdigest())))
"""


def _interrupted(cache: Path, delay: float) -> subprocess.Popen:
    env = {**os.environ, "EAGLE_CACHE_DIR": str(cache)}
    return subprocess.Popen([sys.executable, "-c", INTERRUPTED, f"{delay:.4f}"], env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.slow
def test_ctrl_c_during_the_first_compile_then_run_again_is_bit_identical(tmp_path):
    warm = tmp_path / "warm"
    clean = finish(_interrupted(warm, -1.0))  # also fills the warm cache
    assert "error" not in clean and clean["interrupted"] is None, clean.get("stderr")
    cold_s = clean["build_s"]  # Numba's import and compile, and writing the cache
    loaded = finish(_interrupted(warm, -1.0))
    assert "error" not in loaded, loaded["stderr"]
    warm_s = loaded["build_s"]  # Numba's import and loading the cache
    rng = random.Random(5)
    trials = [(warm, warm_s * k / CTRL_C_EVENLY_SPACED) for k in range(CTRL_C_EVENLY_SPACED)]
    trials += [(warm, rng.uniform(0, warm_s)) for _ in range(CTRL_C_RANDOM_CACHED)]
    trials += [(tmp_path / f"cold{k}", rng.uniform(0, cold_s)) for k in range(CTRL_C_RANDOM_COLD)]
    failures, in_compile = [], 0
    for pair in range(0, len(trials), 2):  # two at a time
        children = [(delay, _interrupted(cache, delay)) for cache, delay in trials[pair:pair + 2]]
        for delay, child in children:
            result = finish(child)
            if "error" in result:
                failures.append((delay, result["error"]))
            elif result["x"] != clean["x"]:
                failures.append((delay, "not bit-identical to a clean run"))
            elif result["interrupted"] is not None and result["steps_then"] == 0:
                in_compile += 1
    assert not failures, failures
    assert in_compile >= 3, "the interrupts should land before the first launch"
