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
