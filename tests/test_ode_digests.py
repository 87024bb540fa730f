"""Golden IR digests of every ODE kernel the library builds, held in ``tests/golden/ode-ir.json``.

A kernel's digest is ``Program.digest()``: the SHA-256 of its IR as ``python -m hawk ir`` prints
it (float64, after ``hawk.passes.optimize``), the key every compilation cache uses. Equal
digests mean the same ops, in the same order, on the same constants: the same bits on every
backend. The kernels are the ones ``eagle.ode.solve`` builds: each case below calls it with the
runtime replaced by a recorder (nothing is compiled or run), and records every kernel handed to
``simulate`` (the first step's kernel, a terminal event's location after the run and its
sensitivity correction: the recorder's run leaves every sample at ``STATUS_LOCATING``) and to
``deploy`` (the integrator), by name and digest. The cases cover each method of the registry
``hawk.ode.METHODS``, scalar and vector states, plain, with ``saveat``, backward in time, and
for the adaptive methods with an event, several recorded events, stops with a kick, forward
sensitivities (with and without a terminal event) and, for the Rosenbrock methods, a user's
Jacobian.

This is the net under a refactor of ``hawk.ode`` that must not change a bit: it fails on any
change to any of those kernels. A deliberate change updates the file in its own commit:
``EAGLE_UPDATE_GOLDEN=1 python -m pytest tests/test_ode_digests.py``, with the reason, and the
every-backend tests green.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import eagle.ode
import eagle.ode.solver
import hawk
from ode_models import bounce, decay, free_fall, height, kick, lorenz

GOLDEN = Path(__file__).resolve().parent / "golden" / "ode-ir.json"


@hawk.func
def two_heights(u, t, p):
    """A vector-valued event: the height, and the height less a quarter."""
    return hawk.vec2(u.x, u.x - 0.25)


@hawk.func
def decay_jacobian(u, t, k):
    return -k + 0.0 * u


@hawk.func
def lorenz_jacobian(u, t, p):
    return hawk.matrix((-p.x, p.x, 0.0), (p.y - u.z, -1.0, -u.x), (u.y, u.x, -p.z))


@hawk.func
def noise(u, t, p):
    return 0.1 + 0.0 * u


def _cases(method: str, adaptive: bool, implicit: bool) -> dict:
    """The solve calls of one method, by case name: ``(f, u0, t_span, options)``."""
    n = 2
    scalar = np.ones(n)
    vector = np.ones((3, n))
    fall = np.vstack([np.ones(n), np.zeros(n)])
    p3 = (10.0, 28.0, 8.0 / 3.0)
    step = {} if adaptive else {"dt": 0.1}
    if hawk.ode.METHODS[method].stochastic:
        step = {"dt": 0.1, "noise": noise, "seed": 1}
    cases = {
        "scalar": (decay, scalar, (0.0, 1.0), dict(p=1.0, **step)),
        "vector": (lorenz, vector, (0.0, 1.0), dict(p=p3, **step)),
        "vector-saveat": (lorenz, vector, (0.0, 1.0), dict(p=p3, saveat=(0.0, 1.0, 5), **step)),
    }
    if not hawk.ode.METHODS[method].stochastic:
        cases["vector-backward"] = (lorenz, vector, (1.0, 0.0), dict(p=p3, **step))
    if not adaptive:
        return cases
    cases.update({
        "event": (free_fall, fall, (0.0, 1.0), dict(p=0.9, event=height)),
        "event-bounce": (free_fall, fall, (0.0, 1.0), dict(p=0.9, event=height,
                                                            on_event=bounce)),
        "events-recorded": (free_fall, fall, (0.0, 1.0),
                            dict(p=0.9, event=two_heights, terminal=(True, False),
                                 direction=(-1, 0), record_events=2)),
        "event-backward": (free_fall, fall, (1.0, 0.0), dict(p=0.9, event=height)),
        "stops": (decay, scalar, (0.0, 1.0), dict(p=1.0, tstops=(0.25, 0.25), on_stop=kick)),
        "sensitivity-p": (decay, scalar, (0.0, 1.0), dict(p=1.0, sensitivity="p")),
        "sensitivity-u0-saveat": (decay, scalar, (0.0, 1.0),
                                  dict(p=1.0, sensitivity="u0", saveat=(0.0, 1.0, 3))),
        "sensitivity-event": (free_fall, fall, (0.0, 1.0),
                              dict(p=0.9, sensitivity="u0", event=height)),
        "sensitivity-backward": (decay, scalar, (1.0, 0.0), dict(p=1.0, sensitivity="p")),
    })
    if implicit:
        cases["scalar-jac"] = (decay, scalar, (0.0, 1.0), dict(p=1.0, jac=decay_jacobian))
        cases["vector-jac-backward"] = (lorenz, vector, (1.0, 0.0),
                                        dict(p=p3, jac=lorenz_jacobian))
    return cases


def all_cases() -> dict:
    """Every case of every method: ``"method/case" -> (method, f, u0, t_span, options)``."""
    out = {}
    for method, entry in hawk.ode.METHODS.items():
        for case, (f, u0, span, options) in _cases(method, entry.adaptive, entry.implicit).items():
            out[f"{method}/{case}"] = (method, f, u0, span, options)
    return out


def built_kernels(monkeypatch, method, f, u0, span, options) -> list[list[str]]:
    """``[name, digest]`` of each kernel ``eagle.ode.solve`` builds for the call, in order."""
    seen = []

    def record(kernel, *args, **kwargs):
        seen.append([kernel.name, kernel.program.digest()])
        return _FakeRunner(u0)

    def until_done(plan, *args, **kwargs):
        if "status" in kwargs:  # every sample's step crossed: a left location is taken too
            kwargs["status"][...] = hawk.ode.STATUS_LOCATING
        return plan

    monkeypatch.setattr(eagle.ode.solver, "simulate", record)
    monkeypatch.setattr(eagle.ode.solver, "deploy", record)
    monkeypatch.setattr(eagle.ode.solver, "until_done", until_done)
    eagle.ode.solve(f, u0, span, method=method, **options)
    return seen


class _FakeRunner:
    """What ``solve`` reads of a runner and its report, for a run that did not happen."""

    def __init__(self, u0):
        self.n = self.done = np.shape(u0)[-1]
        self.truncated = False

    def run(self, progress=False):
        return self


CASES = all_cases()


def _golden() -> dict:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


def test_every_case_is_in_the_golden_file_and_no_other():
    """The file holds exactly the cases built here (a method added or removed updates it)."""
    if os.environ.get("EAGLE_UPDATE_GOLDEN") == "1":
        pytest.skip("updating the golden file")
    assert sorted(_golden()) == sorted(CASES)


@pytest.mark.parametrize("case", list(CASES))
def test_the_kernels_ir_digests_are_the_golden_ones(monkeypatch, case):
    method, f, u0, span, options = CASES[case]
    digests = built_kernels(monkeypatch, method, f, u0, span, options)
    assert digests, "solve built no kernel"
    if os.environ.get("EAGLE_UPDATE_GOLDEN") == "1":
        golden = _golden()
        golden[case] = digests
        rows = (f"{json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(golden.items()))
        GOLDEN.write_text("{\n" + ",\n".join(rows) + "\n}\n")
        return
    expected = _golden().get(case)
    assert expected is not None, f"{case} is not in {GOLDEN.name}: run with EAGLE_UPDATE_GOLDEN=1"
    assert digests == expected, (
        f"{case}: the IR of a kernel eagle.ode.solve builds changed ({expected} -> {digests}); "
        "if deliberate, rerun with EAGLE_UPDATE_GOLDEN=1 and say why in the commit")
