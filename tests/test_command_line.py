"""``python -m eagle`` (bench, info, cache clear): they run, write what they say, agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def run(*args, env=None):
    done = subprocess.run([sys.executable, "-m", "eagle", *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, **(env or {})})
    return done


def test_bench_writes_the_card_and_its_arms_agree(tmp_path):
    done = run("bench", "--quick", "--cpu-only", "--n", "3000", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "all arms agree bit for bit" in done.stdout
    card = json.loads((tmp_path / "card.json").read_text())
    arms = {(r["config"], r["arm"]) for r in card["rows"]}
    assert arms == {(c, a) for c in ("uniform", "spread-1000")
                    for a in ("numpy_eager", "eager_loop", "eagle_graph")}
    graph = next(r for r in card["rows"] if r["arm"] == "eagle_graph")
    eager = next(r for r in card["rows"] if r["arm"] == "eager_loop")
    assert eager["launches"] == 1000 and graph["launches"] < 50
    table = (tmp_path / "card.md").read_text()
    assert "| Arm | What it does | Wall time |" in table and "eager_loop" in table
    pytest.importorskip("matplotlib")
    assert (tmp_path / "card.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_info_names_versions_devices_and_cache(tmp_path):
    done = run("info", env={"EAGLE_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    for words in ("eagle 0.", "host team:", "GPU", "NVRTC", f"cache: {tmp_path}"):
        assert words in done.stdout


def test_cache_clear_empties_the_cache(tmp_path):
    (tmp_path / "cpu" / "entry").mkdir(parents=True)
    (tmp_path / "cpu" / "entry" / "kernel.py").write_text("x = 1\n")
    done = run("cache", "clear", env={"EAGLE_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 0 and "cleared" in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_unknown_command_prints_usage():
    done = run("frobnicate")
    assert done.returncode == 2 and "usage: python -m eagle" in done.stderr
    assert "frobnicate" in done.stderr and "bench" in done.stderr


def test_cache_clear_on_a_file_says_so_and_deletes_nothing(tmp_path):
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("mine\n")
    done = run("cache", "clear", env={"EAGLE_CACHE_DIR": str(not_a_folder)})
    assert done.returncode == 2 and "not a folder" in done.stderr and "Traceback" not in done.stderr
    assert not_a_folder.read_text() == "mine\n"


def run_module(module, *args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("module", ["eagle", "hawk"])
def test_version_prints_the_version(module):
    import eagle

    done = run_module(module, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{module} {eagle.__version__}")


def test_info_help_exits_0():
    done = run("info", "--help")
    assert done.returncode == 0 and "usage: python -m eagle info" in done.stdout


BAD_KERNEL = """\
import hawk
from hawk import Mutable, Scalar


@hawk.kernel
def k(x: Mutable[Scalar]):
    x = x.foo
"""

GOOD_KERNEL = """\
import hawk
from hawk import Mutable, Param, Scalar


@hawk.kernel
def k(x: Mutable[Scalar], dt: Param):
    x = x + dt
"""


def user_error(done):
    """The one-message, exit-2 form every user error of the command lines takes."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr


@pytest.mark.parametrize("command", [["hawk", "ir"], ["eagle", "compile", "--target", "cuda",
                                                      "-o", "out.cu"]])
def test_a_kernel_that_does_not_compile_prints_its_compile_error(tmp_path, command):
    (tmp_path / "bad.py").write_text(BAD_KERNEL)
    module, *args = command
    stderr = user_error(run_module(module, *args, "bad.py:k", cwd=tmp_path))
    assert stderr.startswith(f"{module}: attribute 'foo' of float64 is not supported")
    assert 'bad.py", line 7, in k' in stderr and "x = x.foo" in stderr


@pytest.mark.parametrize("command", [["hawk", "ir"], ["eagle", "compile", "--target", "cuda",
                                                      "-o", "out.cu"]])
def test_a_dtype_option_names_what_would_do(tmp_path, command):
    (tmp_path / "good.py").write_text(GOOD_KERNEL)
    module, *args = command
    stderr = user_error(run_module(module, *args, "good.py:k", "--dtype", "x=float16",
                                   cwd=tmp_path))
    assert "'float16'" in stderr
    assert "bool, int32, int64, uint32, uint64, float32, float64" in stderr
    assert len(stderr.strip().splitlines()) == 1
    stderr = user_error(run_module(module, *args, "good.py:k", "--dtype", "bogus=float32",
                                   cwd=tmp_path))
    assert "no parameter 'bogus'" in stderr and "parameters are x, dt" in stderr
    assert len(stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out.cu").exists()


def test_more_threads_than_cpus_are_clamped_with_one_warning():
    code = ("import os, warnings; warnings.simplefilter('always'); import eagle; "
            "print(eagle.get_num_threads(), len(os.sched_getaffinity(0)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "EAGLE_NUM_THREADS": "4096"})
    assert done.returncode == 0, done.stderr
    threads, cpus = done.stdout.split()
    assert threads == cpus
    assert done.stderr.count("RuntimeWarning") == 1 and "EAGLE_NUM_THREADS=4096" in done.stderr


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5"])
def test_a_thread_count_that_is_not_a_positive_integer_is_refused(value):
    done = subprocess.run([sys.executable, "-c", "import eagle"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "EAGLE_NUM_THREADS": value})
    assert done.returncode != 0
    assert f"$EAGLE_NUM_THREADS={value!r}: expected a positive whole number" in done.stderr
