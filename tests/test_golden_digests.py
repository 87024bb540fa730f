"""Golden digests that prove a refactoring of the lowering or of the CPU emitter changes no bit:
the IR digest (``Program.digest``, what ``python -m hawk ir`` prints, the cache's key) of a broad
set of kernels, and the SHA-256 of the CPU backend's LLVM IR text (``emit_launch``) of those
``tests/test_golden.py`` covers plus wide-vector, matrix, Philox-drawing and table kernels,
compared with ``tests/golden/ir-digests.json`` and ``tests/golden/llvm-sha256.json``.

The kernels: the test kernel files (``kernels``, ``coverage_kernels``, ``pass_kernels``,
``table_kernels``, ``numerics_kernels``, ``golden_kernels``), the module-level kernels of the
language, func, matrix, derivative, wide-vector, random-number, Series and integer tests, and
ODE kernels ``hawk.ode`` builds (each adaptive method plain, dopri5 with ``saveat``, an event
and sensitivities, the fixed-step and SDE kernels, the adjoint's and a pure recording's),
each at its default dtypes and a few at float32.

A deliberate change to what the frontend or an emitter produces updates the files in the same
commit: ``EAGLE_UPDATE_GOLDEN=1 python -m pytest tests/test_golden_digests.py``; the diff of
the JSON names the kernels whose code changed. A kernel added to one of the test modules later
is not compared until then, so adding a test does not fail this one; changing or removing one
does.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

import coverage_kernels
import golden_kernels
import hawk
import kernels
import numerics_kernels
import ode_models
import pass_kernels
import table_kernels
import test_cpu_lanes
import test_derivatives
import test_elementwise_helpers
import test_hawk_funcs
import test_hawk_language
import test_integer_types
import test_matrices
import test_passes
import test_random_numbers
import test_series
import test_stiff
import test_vector_widths
import test_wide_vectors
from eagle.cpu.emit import emit_launch
from hawk import Scalar, Vec2, Vec3
from hawk.ode import dopri5_kernel, fixed_step_kernel, rosenbrock23_kernel, sde_kernel
from hawk.ode.adjoint import backward_kernel, recording_kernel
from hawk.ode.recorded import event_location_kernel, event_value_kernel

GOLDEN = Path(__file__).resolve().parent / "golden"
IR_FILE = GOLDEN / "ir-digests.json"
LLVM_FILE = GOLDEN / "llvm-sha256.json"
UPDATE = os.environ.get("EAGLE_UPDATE_GOLDEN") == "1"


def _module_kernels(module) -> dict:
    return {f"{module.__name__}.{name}": value for name, value in vars(module).items()
            if isinstance(value, hawk.Kernel) and value.__module__ == module.__name__}


def _ode_kernels() -> dict:
    """ODE kernels of ``hawk.ode``, built on the test models (``ode_models``)."""
    lorenz, decay, height = ode_models.lorenz, ode_models.decay, ode_models.height
    found = {f"ode.{method}.lorenz": dopri5_kernel(lorenz, Vec3, Vec3, method=method)
             for method in ("dopri5", "tsit5", "vern7", "vern9", "rodas5p")}
    found["ode.rosenbrock23.lorenz"] = rosenbrock23_kernel(lorenz, Vec3, Vec3)
    found["ode.dopri5.decay.saveat"] = dopri5_kernel(decay, Scalar, Scalar, saveat=True)
    found["ode.tsit5.lorenz.saveat"] = dopri5_kernel(lorenz, Vec3, Vec3, method="tsit5",
                                                     saveat=True)
    found["ode.dopri5.falling.event"] = dopri5_kernel(ode_models.free_fall, Vec2, Scalar,
                                                      event=height, on_event=ode_models.bounce)
    sensitivities = hawk.ode.forward_sensitivity(lorenz, 3, 3, True)
    found["ode.dopri5.lorenz.sensitivity"] = dopri5_kernel(
        sensitivities, hawk.Vector[12], Vec3)
    found["ode.rk4.lorenz.saveat"] = fixed_step_kernel(lorenz, "rk4", Vec3, Vec3, saveat=True)
    found["ode.euler.decay"] = fixed_step_kernel(decay, "euler", Scalar, Scalar)
    found["ode.sde.decay"] = sde_kernel(decay, decay, Scalar, Scalar)
    found.update(_recording_kernels())
    return found


@hawk.func
def fall_jacobian(u, t, restitution):
    """``ode_models.free_fall``'s Jacobian in ``u``."""
    return hawk.matrix((0.0, 1.0), (0.0, 0.0))


def _recording_kernels() -> dict:
    """The kernels that record as they integrate, pinned before ``hawk.ode`` shared their step
    with ``dopri5_kernel``'s: the adjoint's forward (plain, ``saveat``, a terminal event, a
    Rosenbrock method) and backward kernels, a pure recording of events (``dopri5_kernel``
    with nothing terminal, with and without stops) and the kernels that locate its events
    after the run and start its carried event."""
    lorenz, decay, height = ode_models.lorenz, ode_models.decay, ode_models.height
    fall = ode_models.free_fall
    found = {
        "ode.adjoint.dopri5.lorenz.recording": recording_kernel(lorenz, Vec3, Vec3),
        "ode.adjoint.tsit5.decay.saveat.recording": recording_kernel(
            decay, Scalar, Scalar, method="tsit5", saveat=True),
        "ode.adjoint.dopri5.falling.event.recording": recording_kernel(
            fall, Vec2, Scalar, event=height),
        "ode.adjoint.rosenbrock23.lorenz.recording": recording_kernel(
            lorenz, Vec3, Vec3, method="rosenbrock23"),
        "ode.adjoint.dopri5.lorenz.backward": backward_kernel(lorenz, Vec3, Vec3),
        "ode.adjoint.tsit5.decay.saveat.backward": backward_kernel(
            decay, Scalar, Scalar, method="tsit5", saveat=True),
        "ode.adjoint.dopri5.falling.event.backward": backward_kernel(
            fall, Vec2, Scalar, event=height),
    }
    for method in ("dopri5", "rosenbrock23"):
        for stops in (False, True):
            suffix = ".stops" if stops else ""
            found[f"ode.{method}.falling.recorded{suffix}"] = dopri5_kernel(
                fall, Vec2, Scalar, event=height, direction=0, terminal=False,
                record_events=True, tstops=stops, method=method)
            found[f"ode.{method}.falling.locate{suffix}"] = event_location_kernel(
                fall, Vec2, Scalar, event=height, direction=0, method=method, tstops=stops)
    found["ode.rodas5p.falling.recorded.jac"] = dopri5_kernel(
        fall, Vec2, Scalar, event=height, direction=0, terminal=False, record_events=True,
        method="rodas5p", jac=fall_jacobian)
    found["ode.rodas5p.falling.locate.jac"] = event_location_kernel(
        fall, Vec2, Scalar, event=height, direction=0, method="rodas5p", jac=fall_jacobian)
    found["ode.falling.event_value"] = event_value_kernel(height, Vec2, Scalar)
    return found


def _ir_kernels() -> dict:
    found = {}
    for module in (kernels, coverage_kernels, pass_kernels, table_kernels, numerics_kernels,
                   golden_kernels,
                   test_matrices, test_derivatives, test_wide_vectors, test_random_numbers,
                   test_series, test_integer_types, test_cpu_lanes, test_hawk_language,
                   test_hawk_funcs, test_elementwise_helpers, test_passes, test_stiff,
                   test_vector_widths):
        found.update(_module_kernels(module))
    found.update(_ode_kernels())
    return found


#: the kernels whose LLVM IR text is pinned: test_golden's, then wide vectors, matrices, Philox
#: draws, tables, Series, integers, derivatives and one ODE kernel
LLVM_KERNELS = ["kernels.oscillator", "kernels.falling", "kernels.bouncing",
                "kernels.transcendental", "kernels.accumulate_force",
                "coverage_kernels.every_op", "coverage_kernels.more_ops",
                "test_wide_vectors.orbit", "test_wide_vectors.chain", "test_wide_vectors.sliced",
                "test_matrices.linear", "test_matrices.rotated",
                "test_random_numbers.draws", "test_cpu_lanes.drawing",
                "table_kernels.lookup", "table_kernels.falling", "table_kernels.read3",
                "test_series.record", "test_series.edges", "test_integer_types.masked_walk",
                "test_derivatives.derivatives", "test_hawk_funcs.vdp_rk4",
                "ode.dopri5.decay.saveat"]
#: kernels also pinned at float32 throughout
FLOAT32 = ["kernels.oscillator", "kernels.falling", "test_wide_vectors.orbit",
           "test_random_numbers.draws"]


def _programs() -> dict:
    found = _ir_kernels()
    programs = {name: k.specialize({}) for name, k in found.items()}
    for name in FLOAT32:
        k = found[name]
        programs[f"{name}@float32"] = k.specialize(
            {p.name: "float32" for p in k.params if p.dtype.is_float})
    return programs


@pytest.fixture(scope="module")
def programs() -> dict:
    return _programs()


def _compare(path: Path, digests: dict) -> None:
    if UPDATE:
        path.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
        return
    assert path.exists(), f"{path} is missing: run with EAGLE_UPDATE_GOLDEN=1 to create it"
    expected = json.loads(path.read_text())
    changed = sorted(k for k in expected.keys() & digests.keys() if expected[k] != digests[k])
    missing = sorted(expected.keys() - digests.keys())
    # a kernel added to a test module since the file was written is not compared (it has no
    # digest from before); it is recorded at the next deliberate update
    new = sorted(digests.keys() - expected.keys())
    assert not (changed or missing), (
        f"{path.name}: changed {changed}, no longer built {missing} (not recorded yet: {new}); "
        "if the change is deliberate, rerun with EAGLE_UPDATE_GOLDEN=1 and commit the file")


def test_ir_digests_match_the_golden_file(programs):
    assert len(programs) > 100  # a broad set, not a handful
    _compare(IR_FILE, {name: program.digest() for name, program in programs.items()})


def test_llvm_ir_text_matches_the_golden_file(programs):
    names = LLVM_KERNELS + [f"{name}@float32" for name in FLOAT32]
    _compare(LLVM_FILE, {name: hashlib.sha256(emit_launch(programs[name]).encode()).hexdigest()
                         for name in names})
