"""The performance card can be trusted as published (issue 17): repeated runs with their spread
and raw samples, the machine and versions named in the JSON and as the caption of the table and
the figure, a linear chart whose bars encode the ratios, progress on stderr only, and its
arguments validated with one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def bench(*args):
    return subprocess.run([sys.executable, "-m", "eagle", "bench", *args], capture_output=True,
                          text=True, timeout=600, env=os.environ.copy())


@pytest.fixture(scope="module")
def card(tmp_path_factory):
    out = tmp_path_factory.mktemp("card")
    done = bench("--quick", "--cpu-only", "--n", "2000", "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out, done


@pytest.mark.slow
def test_every_arm_is_timed_five_times_with_its_spread_and_raw_samples(card):
    out, _ = card
    rows = json.loads((out / "card.json").read_text())["rows"]
    assert len(rows) == 6
    for row in rows:
        assert row["runs"] >= 5 and len(row["samples_s"]) == row["runs"]
        assert row["min_s"] == min(row["samples_s"]) and row["max_s"] == max(row["samples_s"])
        assert row["min_s"] <= row["median_s"] <= row["max_s"]


def test_the_json_names_the_machine_versions_date_and_commit(card):
    out, _ = card
    meta = json.loads((out / "card.json").read_text())["meta"]
    import llvmlite
    import numpy

    assert meta["cpu_model"] and meta["os"] and meta["machine"]
    assert meta["numpy"] == numpy.__version__ and meta["llvmlite"] == llvmlite.__version__
    assert meta["threads"] >= 1 and meta["cpu_cores"] >= 1 and meta["repeats"] == 5
    assert meta["date"].endswith("UTC") and meta["date"][:2] == "20"
    assert "commit" in meta  # None for an installed copy, the git commit in a checkout


def test_the_table_carries_the_spread_and_the_caption(card):
    out, done = card
    table = (out / "card.md").read_text()
    meta = json.loads((out / "card.json").read_text())["meta"]
    assert "| Arm | What it does | Wall time |" in table
    graph = next(line for line in table.splitlines() if line.startswith("| eagle_graph"))
    assert "ms (" in graph and "\u2013" in graph  # median (min-max)
    assert meta["cpu_model"] in table and "median of 5 runs" in table
    assert f"NumPy {meta['numpy']}" in table and meta["date"] in table


def test_progress_goes_to_stderr_and_the_card_to_stdout(card):
    _, done = card
    assert "eagle bench: cpu uniform numpy_eager (N = 2,000): run 5/5" in done.stderr
    assert "eagle bench:" not in done.stdout and "| eagle_graph |" in done.stdout


def test_the_chart_is_linear_and_labels_each_bar_with_its_ratio():
    pytest.importorskip("matplotlib")
    from eagle.bench import figure

    rows = [dict(device="cpu", config="uniform", arm=arm, n=1000, median_s=s, min_s=s * 0.9,
                 max_s=s * 1.1) for arm, s in (("eager_loop", 0.21), ("eagle_graph", 0.01))]
    fig = figure(rows, None)
    ax = fig.axes[0]
    assert ax.get_xscale() == "linear" and ax.get_xlim()[0] == 0
    labels = [text.get_text() for text in ax.texts]
    assert any("\u00d721.0" in label for label in labels)
    assert any("\u00d71.0" in label for label in labels)
    widths = sorted(patch.get_width() for patch in ax.patches)
    assert widths[-1] / widths[0] == pytest.approx(21.0)


@pytest.mark.parametrize("value", ["0", "-5", "many"])
def test_a_bad_n_is_one_line_naming_it(value, tmp_path):
    done = bench("--n", value, "--out", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--n" in done.stderr and repr(value) in done.stderr
    assert "Traceback" not in done.stderr and not list(tmp_path.iterdir())
