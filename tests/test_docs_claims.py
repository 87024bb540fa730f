"""What the documentation says stays true of the code (issue 43, item 7).

The FAQ named three limitations the code had outgrown (no automatic differentiation, "not an ODE
solver", a GPU path never run on a GPU); ``LIMITATIONS`` pairs each such sentence with the fact
that makes it false, so the sentence cannot come back while the fact holds. And what a page
prints reads as English: a ``Report`` of one launch said "1 launches" on the landing page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import eagle
import hawk
from eagle.runner import Report

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _compatibility_lists_a_gpu_run() -> bool:
    page = (DOCS / "compatibility.md").read_text()
    return bool(re.search(r"^\| an NVIDIA \w+ .*scripts/gpu-check", page, re.M))


#: a sentence a page must not say (a regular expression, case-insensitive) -> what makes it
#: false
LIMITATIONS = {
    r"no automatic differentiation|does\s+not\s+differentiate": lambda: callable(hawk.jvp)
    and callable(hawk.jacobian),
    r"not an ODE solver": lambda: callable(eagle.ode.solve),
    r"(has )?not (yet )?been run on a (real )?GPU|never (been )?run on a GPU":
        _compatibility_lists_a_gpu_run,
}


@pytest.mark.parametrize("sentence", list(LIMITATIONS))
def test_no_page_names_a_limitation_the_code_no_longer_has(sentence):
    assert LIMITATIONS[sentence](), f"the fact behind {sentence!r} no longer holds: update it"
    pages = [p for p in DOCS.rglob("*.md") if "_build" not in p.parts]
    saying = [str(p.relative_to(DOCS)) for p in pages
              if re.search(sentence, re.sub(r"\s+", " ", p.read_text()), re.I)]
    assert not saying, f"{saying} say {sentence!r}, which the code no longer supports"


def test_a_report_counts_in_english():
    one = Report(build_s=0.1, launches=1, steps=1, done=2, n=2, truncated=False, wall_s=0.2,
                 device="cpu", mode="host-loop", threads=1, steps_per_launch=1)
    assert "after 1 step in 1 launch on cpu (host-loop, 1 thread)" in str(one)
    many = Report(build_s=0.1, launches=6, steps=250, done=2, n=2, truncated=False, wall_s=0.2,
                  device="cpu", mode="host-loop", threads=2, steps_per_launch=64)
    assert "after 250 steps in 6 launches on cpu (host-loop, 2 threads)" in str(many)


def test_a_cluster_report_counts_in_english():
    from eagle.distributed import ChunkReport, DistributedReport

    chunk = ChunkReport(index=0, start=0, stop=10, worker="tcp://w", device="cpu", launches=1,
                        steps=1, done=10, build_s=0.0, wall_s=0.1, threads=1)
    one = DistributedReport(n=10, done=10, truncated=False, wall_s=0.1, chunks=(chunk,))
    assert "done in 1 chunk on 1 worker: " in str(one)
    assert str(one).endswith("1 launch in all, slowest sample 1 step")
