"""The source of the ``gravity.ptx`` fixture: a two-body point-mass acceleration.

Each launch adds ``-mu * position / |position|^3`` into ``out`` (``accumulate=True``), so k
replays of one launch give k times the single-launch answer. Regenerate the fixture (PTX and its
sidecar ``gravity.json``) from the repository root with::

    python -m eagle compile docs/guide/_fixtures/gravity.py:gravity --target ptx --arch sm_80 \\
        -o docs/guide/_fixtures/gravity.ptx

which writes PTX ISA 9.0 (``--ptx-isa``'s default: what nvJitLink 13.0, the oldest the
``[cuda]`` extra installs, reads), so the spec's cell links on every supported toolchain.
``tests/test_artifacts.py`` checks that the checked-in files are what this command writes.
"""

import hawk
from hawk import Out, Param, Terminated, Vec3


@hawk.kernel(accumulate=True)
def gravity(mu: Param, terminated: Terminated, position: Vec3, out: Out[Vec3]):
    r = hawk.length(position)
    out = -mu * position / (r * r * r)  # noqa: F841 (a hawk kernel assigns its outputs)
