"""What an executed cell of the documentation may show (issue 43, item 7): no path of the
machine that built the site (this checkout, its Python environment, a home folder) and no
Python warning on stderr. ``scripts/check_docs_html.py`` fails ``make docs`` on either; here it
is checked on small HTML snippets as myst-nb renders outputs, and the two sources the built
site had are stopped where they start: ``run(progress=True)`` in a Jupyter kernel without
ipywidgets (tqdm.auto warned ``TqdmWarning: IProgress not found`` with the path of tqdm's file
in the build's venv) and ``python -m eagle info`` (it printed the cache folder under the
builder's home).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _checker():
    spec = importlib.util.spec_from_file_location("check_docs_html",
                                                  ROOT / "scripts" / "check_docs_html.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check = _checker()


def output(kind: str, text: str) -> str:
    """One executed cell's output as myst-nb and Sphinx write it (``kind``: ``stream`` for
    stdout, ``stderr``, ``text_plain``)."""
    return (f'<div class="cell_output docutils container"><div class="output {kind} '
            f'highlight-myst-ansi notranslate"><div class="highlight"><pre><span></span>{text}\n'
            "</pre></div>\n</div></div>")


def source(text: str) -> str:
    return (f'<div class="cell_input docutils container"><div class="highlight-ipython3 '
            f'notranslate"><div class="highlight"><pre><span></span>{text}</pre></div></div>'
            "</div>")


ROOTS = ["/build/checkout", "/opt/envs/docs"]

LEAKS = {
    "home cache folder": output("stream", "cache: /root/.cache/eagle (6.4 MiB)"),
    "a user's home": output("text_plain", "PosixPath(&#39;/home/ci/.cache/eagle&#39;)"),
    "venv tqdm warning": output(
        "stderr", "/work/main/.venv/lib/python3.11/site-packages/tqdm/auto.py:21: "
                  "TqdmWarning: IProgress not found. Please update jupyter and ipywidgets."),
    "the checkout": output("stream", "wrote /build/checkout/docs/guide/card.png"),
    "the environment": output("stream", "python: /opt/envs/docs/bin/python"),
    "a warning on stderr": output(
        "stderr", "/tmp/ipykernel_4295/41689.py:3: RuntimeWarning: overflow encountered"),
}

CLEAN = {
    "a tqdm bar on stderr": output("stderr", "count: 100%|##########| 1000/1000 [00:00&lt;00:00]"),
    "a warning's name printed on purpose": output(
        "stream", "truncated: True | warned: [&#39;TruncationWarning&#39;]"),
    "the cache under ~": output("stream", "cache: ~/.cache/eagle (6.4 MiB)"),
    "a temporary folder": output("stream", "[&#39;/tmp/tmpab12/run.zarr&#39;]"),
    "a path in a cell's source": source("sys.path.insert(0, &#39;/root/.cache&#39;)"),
}


@pytest.mark.parametrize("case", list(LEAKS))
def test_the_checker_finds_the_build_machine_in_an_output(case):
    assert check.leaks("<html>" + LEAKS[case] + "</html>", ROOTS), case


@pytest.mark.parametrize("case", list(CLEAN))
def test_the_checker_passes_what_a_reader_may_see(case):
    assert check.leaks("<html>" + CLEAN[case] + "</html>", ROOTS) == [], case


def test_the_checker_fails_a_built_site_with_a_leak_and_passes_a_clean_one(tmp_path, capsys):
    site = tmp_path / "html"
    (site / "guide").mkdir(parents=True)
    (site / "index.html").write_text("".join(CLEAN.values()))
    assert check.main(str(site)) == 0
    (site / "guide" / "many-machines.html").write_text(LEAKS["venv tqdm warning"])
    assert check.main(str(site)) == 1
    printed = capsys.readouterr().err
    assert "many-machines.html: a build-machine path" in printed
    assert "many-machines.html: a Python warning in a cell's stderr" in printed


def test_the_checker_knows_this_machine():
    roots = check.machine_roots()
    assert str(ROOT) in roots
    if sys.prefix != sys.base_prefix:
        assert sys.prefix in roots


def test_a_progress_bar_in_jupyter_without_ipywidgets_warns_nothing():
    """In a Jupyter kernel (``ipykernel.zmqshell`` loaded) where ipywidgets is missing, the
    bar is tqdm's text bar and no warning is raised. Before: ``tqdm.auto`` warned
    ``TqdmWarning: IProgress not found``, naming its file in the venv."""
    pytest.importorskip("IPython")
    script = """
import sys, types, warnings
sys.modules["ipykernel.zmqshell"] = types.ModuleType("ipykernel.zmqshell")
sys.modules["ipywidgets"] = None  # not installed
import IPython
import numpy as np
import eagle
from kernels import oscillator
n = 64
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    report = eagle.simulate(oscillator, max_steps=2000, progress=True, x=np.ones(n),
                            v=np.zeros(n), t=np.zeros(n), omega=np.ones(n), t_end=1.0, dt=1e-3)
print(report.done, [w.category.__name__ for w in caught])
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "64 []"
    assert "Warning" not in done.stderr and "64/64" in done.stderr


def test_info_shows_a_cache_under_home_as_tilde(tmp_path, monkeypatch, capsys):
    from eagle.__main__ import info

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("EAGLE_CACHE_DIR", str(tmp_path / ".cache" / "eagle"))
    # no native library: loaded here without the stand-in libcuda, it would stay so for the
    # process, and the GPU suites' native-door cases after this one would skip (native_door)
    monkeypatch.setenv("EAGLE_CUDA_LIBRARY", str(tmp_path / "no-libeagle_cuda.so"))
    assert info() == 0
    printed = capsys.readouterr().out
    assert "cache: ~/.cache/eagle (" in printed and str(tmp_path) not in printed


def test_paths_in_the_checkout_are_shown_relative_and_others_as_they_are(tmp_path, monkeypatch):
    """``eagle.paths.shown``: a path sharing the current folder's checkout is written relative
    to it (a docs cell runs in docs/, the cache and the native library are in the checkout:
    the clean-clone docs build printed /work/<clone>/... before), the home as ``~``, and a
    path elsewhere (``/`` the only common folder) as it is."""
    from eagle.paths import shown

    checkout = tmp_path / "work" / "clone"
    (checkout / "docs").mkdir(parents=True)
    monkeypatch.chdir(checkout / "docs")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert shown(checkout / ".ci-cache" / "eagle") == "../.ci-cache/eagle"
    assert shown(checkout / "build" / "native" / "lib.so") == "../build/native/lib.so"
    assert shown(tmp_path / "home" / ".cache" / "eagle") == "~/.cache/eagle"
    assert shown("/proc/self") == "/proc/self"
