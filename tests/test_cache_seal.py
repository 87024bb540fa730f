"""What runs is what was compiled for it: a cache entry's code is sealed to the entry.

Each case fills a cache in one process, plants something in an entry (another kernel's object
code with the same interface or with other parameters, a header whose symbol names another
function, a code bit flipped with its SHA-256 recomputed, a link to ``/dev/zero``, a FIFO, a
temporary a killed write left), then runs fresh processes on it: every one must give the
kernel's own answer, finish, and leave the entry rebuilt from regular files. Before the seal
(``eagle.cache.seal``), the planted code ran in every later process (another kernel's results)
or crashed it; a FIFO hung it and a link to ``/dev/zero`` read without end.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from eagle import cache
from eagle.cpu import native

SRC = Path(__file__).resolve().parent.parent / "src"
N = 1000

KERNELS = '''
import hawk
from hawk import Mutable, Param, Scalar, Terminated


@hawk.kernel
def spring(omega: Scalar, t_end: Param, dt: Param, terminated: Terminated,
           x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    x0, v0 = x, v
    x = x0 + dt * v0
    v = v0 - dt * omega * omega * x0
    t += dt
    terminated = t >= t_end


@hawk.kernel
def twin(omega: Scalar, t_end: Param, dt: Param, terminated: Terminated,
         x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    x0, v0 = x, v
    x = x0 + 2.0 * dt * v0
    v = v0 - dt * omega * x0
    t += dt
    terminated = t >= t_end


@hawk.kernel
def other(a: Scalar, b: Scalar, c: Param, terminated: Terminated, y: Mutable[Scalar]):
    y = y * a + b * c
    terminated = True
'''

CHILD = f"""
import hashlib, json, sys
sys.path[:0] = [sys.argv[1], {str(SRC)!r}]
import numpy as np
import eagle
import planted_kernels as k
out = {{}}
for name in sys.argv[2].split(","):
    if name == "other":
        y = np.ones({N})
        eagle.simulate(k.other, max_steps=1, a=np.full({N}, 2.0), b=np.ones({N}), c=3.0, y=y)
        out[name] = hashlib.sha256(y.tobytes()).hexdigest()
        continue
    x = np.ones({N})
    eagle.until_done(eagle.deploy(getattr(k, name)), max_steps=2000, x=x, v=np.zeros({N}),
                     t=np.zeros({N}), omega=np.linspace(1.0, 3.0, {N}), t_end=1.0,
                     dt=1e-3).run()
    out[name] = hashlib.sha256(x.tobytes()).hexdigest()
print(json.dumps(out))
"""


def run(cache_dir: Path, names: str, count: int = 1) -> list[dict]:
    """``count`` fresh processes at once, each running the kernels ``names`` on the cache."""
    env = {**os.environ, "EAGLE_CACHE_DIR": str(cache_dir)}
    module = cache_dir.parent
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(module), names], env=env,
                                 text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                for _ in range(count)]
    results = []
    for child in children:
        try:
            out, err = child.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            child.kill()
            out, err = child.communicate()
            results.append({"error": "hung (killed after 240 s)", "stderr": err})
            continue
        if child.returncode != 0:
            results.append({"error": f"exit {child.returncode}", "stderr": err})
        else:
            results.append(json.loads(out.strip().splitlines()[-1]))
    return results


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> tuple[Path, dict]:
    """A cache that one process filled with the three kernels' entries, and their answers."""
    base = tmp_path_factory.mktemp("sealed")
    (base / "planted_kernels.py").write_text(KERNELS)
    (answers,) = run(base / "cache", "spring,twin,other")
    assert "error" not in answers, answers["stderr"]
    assert answers["spring"] != answers["twin"]
    return base / "cache", answers


@pytest.fixture
def fresh(filled, tmp_path) -> tuple[Path, dict]:
    """A copy of the filled cache (and the kernels' module) for one case to damage."""
    source, answers = filled
    shutil.copytree(source.parent, tmp_path / "case", symlinks=True)
    return tmp_path / "case" / "cache", answers


def entry_of(cache_dir: Path, kernel: str) -> Path:
    (found,) = [p.parent for p in (cache_dir / "cpu").glob(f"*/eagle_cpu_{kernel}_*.ll")]
    return found


def assert_rebuilt(cache_dir: Path, kernel: str, code_before: bytes) -> None:
    """The entry holds regular files again, and its object code is its own."""
    folder = entry_of(cache_dir, kernel)
    for path in folder.iterdir():
        assert path.is_file() and not path.is_symlink(), path
    assert (folder / "run_blocks.o").read_bytes() == code_before


def plant(target: Path, source: Path) -> None:
    """``source``'s object code in ``target``'s entry, and the ``.ll`` beside it rewritten to
    the entry's own text (so the entry looks consistent)."""
    shutil.copyfile(source / "run_blocks.o", target / "run_blocks.o")


@pytest.mark.parametrize("donor", ["twin", "other"])
def test_another_kernels_object_code_is_never_run(fresh, donor):
    """Another kernel's ``run_blocks.o``, whole, with a valid header, copied into an entry:
    every later process (four at once here) runs the entry's own kernel. Before: ``twin``'s
    results in every process, and a crash for ``other``'s (other parameters)."""
    cache_dir, answers = fresh
    own = (entry_of(cache_dir, "spring") / "run_blocks.o").read_bytes()
    plant(entry_of(cache_dir, "spring"), entry_of(cache_dir, donor))
    results = run(cache_dir, "spring", count=4)
    assert [r.get("spring", r.get("error")) for r in results] == [answers["spring"]] * 4, \
        [r.get("stderr", "")[-2000:] for r in results]
    assert_rebuilt(cache_dir, "spring", own)


def _header_symbol_changed(path: Path) -> None:
    data = path.read_bytes()
    meta = native.header(data)
    code = native.unpack(data)[0]
    path.write_bytes(native.pack(code, "eagle_visit", meta["source"], meta["seal"]))


def _code_bit_flipped(path: Path) -> None:
    """One bit of the code flipped, and the code's SHA-256 in the header recomputed."""
    data = path.read_bytes()
    meta = native.header(data)
    code = bytearray(native.unpack(data)[0])
    code[len(code) // 2] ^= 0x10
    path.write_bytes(native.pack(bytes(code), meta["symbol"], meta["source"], meta["seal"]))


def _unsealed_copy(path: Path) -> None:
    """The entry's own code packed as eagle wrote it before the seal (no seal)."""
    data = path.read_bytes()
    meta = native.header(data)
    path.write_bytes(native.pack(native.unpack(data)[0], meta["symbol"], meta["source"]))


@pytest.mark.parametrize("damage", [_header_symbol_changed, _code_bit_flipped, _unsealed_copy],
                         ids=lambda f: f.__name__.strip("_"))
def test_an_edited_object_is_rebuilt_not_run(fresh, damage):
    cache_dir, answers = fresh
    folder = entry_of(cache_dir, "spring")
    own = (folder / "run_blocks.o").read_bytes()
    damage(folder / "run_blocks.o")
    results = run(cache_dir, "spring", count=2)
    assert [r.get("spring", r.get("error")) for r in results] == [answers["spring"]] * 2, \
        [r.get("stderr", "")[-2000:] for r in results]
    assert_rebuilt(cache_dir, "spring", own)


def test_a_planting_thread_never_gets_its_code_run(fresh):
    """A thread keeps copying ``twin``'s object into ``spring``'s entry while four processes
    start at once and run ``spring``: each gives ``spring``'s answer."""
    cache_dir, answers = fresh
    target, donor = entry_of(cache_dir, "spring"), entry_of(cache_dir, "twin")
    stop = threading.Event()

    def keep_planting():
        while not stop.is_set():
            try:
                plant(target, donor)
            except OSError:
                pass
            time.sleep(0.002)

    planter = threading.Thread(target=keep_planting)
    planter.start()
    try:
        results = run(cache_dir, "spring", count=4)
    finally:
        stop.set()
        planter.join()
    assert [r.get("spring", r.get("error")) for r in results] == [answers["spring"]] * 4, \
        [r.get("stderr", "")[-2000:] for r in results]


@pytest.mark.parametrize("name", ["run_blocks.o", "ll"])
@pytest.mark.parametrize("special", ["link to /dev/zero", "fifo"])
def test_special_files_in_an_entry_are_never_read(fresh, name, special):
    """A link to ``/dev/zero`` or a FIFO in place of the object or the ``.ll``: the process
    finishes (before: a MemoryError, or a hang), and the entry is regular files again."""
    cache_dir, answers = fresh
    folder = entry_of(cache_dir, "spring")
    own = (folder / "run_blocks.o").read_bytes()
    path = folder / "run_blocks.o" if name != "ll" else next(folder.glob("*.ll"))
    path.unlink()
    if special == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    (result,) = run(cache_dir, "spring")
    assert result.get("spring") == answers["spring"], result
    assert_rebuilt(cache_dir, "spring", own)


def test_temporaries_that_killed_writes_left_are_removed(fresh):
    """Temporaries in an entry whose writers are gone (``tempfile``'s naming of earlier
    eagle, and a dead process's) are removed by the next process to use the entry; one of
    another file name too. Before: never removed."""
    cache_dir, answers = fresh
    folder = entry_of(cache_dir, "spring")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    host = __import__("eagle.atomic_files").atomic_files._HOST
    left = [".run_blocks.o.k3j_x9aq.tmp", f".run_blocks.o.eagle-{host}-{dead}-0badc0de.tmp",
            ".planted.abcdefgh.tmp"]
    for name in left:
        (folder / name).write_bytes(b"partial")
    (result,) = run(cache_dir, "spring")
    assert result.get("spring") == answers["spring"], result
    assert not [name for name in left if (folder / name).exists()]


def test_read_file_reads_only_bounded_regular_files(tmp_path):
    regular = tmp_path / "f"
    regular.write_bytes(b"x" * 100)
    assert cache.read_file(regular) == b"x" * 100
    assert cache.read_file(regular, limit=99) is None
    (tmp_path / "link").symlink_to(regular)
    assert cache.read_file(tmp_path / "link") is None
    os.mkfifo(tmp_path / "fifo")
    assert cache.read_file(tmp_path / "fifo") is None  # and returns at once
    assert cache.read_file(tmp_path) is None
    assert cache.read_file(tmp_path / "missing") is None


def test_seals_bind_the_entry_the_role_and_every_byte(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLE_CACHE_DIR", str(tmp_path / "c"))
    digest = cache.seal("entry", "run_blocks.o", b"symbol", b"code")
    assert cache.sealed(digest, "entry", "run_blocks.o", b"symbol", b"code")
    for other in [("entry2", "run_blocks.o", b"symbol", b"code"),
                  ("entry", "kernel.cubin", b"symbol", b"code"),
                  ("entry", "run_blocks.o", b"symbo", b"lcode"),
                  ("entry", "run_blocks.o", b"symbol", b"code!")]:
        assert not cache.sealed(digest, *other)
    assert digest != hashlib.sha256(b"code").hexdigest()
    key = tmp_path / "c" / "seal.key"
    assert key.stat().st_mode & 0o777 == 0o600 and key.stat().st_size == 32


def test_a_cubin_copied_from_another_entry_is_compiled_again(tmp_path, monkeypatch):
    """NVRTC's cache entries are sealed too: another source's cubin and seal copied into an
    entry are not returned for this source (before: its ``.sha256`` beside it verified)."""
    pytest.importorskip("cuda.bindings")
    from eagle.cuda import nvrtc

    monkeypatch.setenv("EAGLE_CACHE_DIR", str(tmp_path / "c"))
    first = 'extern "C" __global__ void k(double *x) { x[0] = 1.0; }'
    second = 'extern "C" __global__ void k(double *x) { x[0] = 2.0; }'
    try:
        one = nvrtc.compile_source(first, "sm_80", "cubin", name="k.cu")
    except Exception as exc:  # no NVRTC in this environment
        pytest.skip(f"NVRTC is not usable here: {exc}")
    two = nvrtc.compile_source(second, "sm_80", "cubin", name="k.cu")
    assert one != two
    entries = {p.parent for p in (tmp_path / "c" / "cuda").rglob("kernel.cubin")}
    (first_entry,) = [e for e in entries if (e / "kernel.cubin").read_bytes() == one]
    (second_entry,) = entries - {first_entry}
    for name in ("kernel.cubin", "kernel.seal"):
        shutil.copyfile(second_entry / name, first_entry / name)
    assert nvrtc.compile_source(first, "sm_80", "cubin", name="k.cu") == one
    assert (first_entry / "kernel.cubin").read_bytes() == one
