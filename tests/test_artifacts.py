"""Artifacts: the sidecar format round-trips, tampering is refused, the gravity fixture is
reproducible from its hawk source, and LoadedVector refuses bad files before touching a GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import eagle
from kernels import accumulate_force, falling

pytest.importorskip("cuda.bindings.nvrtc")
from eagle.cuda.artifact import ArtifactError, read_artifact, write_artifact  # noqa: E402
from eagle.cuda.nvrtc import nvrtc_version  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "docs" / "guide" / "_fixtures"


@pytest.fixture
def artifact(tmp_path):
    path, _ = write_artifact(accumulate_force.specialize({}), "ptx", tmp_path / "force.ptx",
                             "sm_80")
    return path


def test_sidecar_round_trips(artifact):
    loaded = read_artifact(artifact)
    program = accumulate_force.specialize({})
    assert loaded.params == program.params and loaded.accumulate
    meta = loaded.meta
    assert meta["ptx_isa"] and meta["ptx_target"] == "sm_80" and meta["entry"] == "eagle_step"
    assert [p["layout"] for p in meta["parameters"]] == ["scalar", "(3, n) SoA", "(3, n) SoA"]
    assert meta["ir_digest"] == program.digest()


def test_tampered_ptx_is_refused(artifact):
    data = bytearray(artifact.read_bytes())
    data[len(data) // 2] ^= 1
    artifact.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="SHA-256"):
        read_artifact(artifact)


@pytest.mark.parametrize("change, words", [
    (lambda m: m.update(format="eagle-artifact/99"), "this eagle reads"),
    (lambda m: m.pop("parameters"), "missing parameters"),
    (lambda m: m["parameters"][0].update(role="Sometimes"), "malformed parameter list"),
    (lambda m: m["arguments"].pop(), "argument list does not match"),
    (lambda m: m.update(target="cubin"), "is not one"),
])
def test_tampered_sidecar_is_refused(artifact, change, words):
    sidecar = artifact.with_suffix(".json")
    meta = json.loads(sidecar.read_text())
    change(meta)
    sidecar.write_text(json.dumps(meta))
    with pytest.raises(ArtifactError, match=words):
        read_artifact(artifact)


def test_missing_or_garbled_sidecar_is_refused(artifact):
    sidecar = artifact.with_suffix(".json")
    sidecar.write_text("{not json")
    with pytest.raises(ArtifactError, match="not valid JSON"):
        read_artifact(artifact)
    sidecar.write_bytes(b'{"format": "\xff\xfe"}')
    with pytest.raises(ArtifactError, match="not UTF-8 text"):
        read_artifact(artifact)
    sidecar.unlink()
    with pytest.raises(ArtifactError, match="no readable sidecar"):
        read_artifact(artifact)


def test_gravity_fixture_is_what_its_command_writes_today(tmp_path):
    out = tmp_path / "gravity.ptx"
    done = subprocess.run([sys.executable, "-m", "eagle", "compile",
                           f"{FIXTURES / 'gravity.py'}:gravity", "--target", "ptx", "--arch",
                           "sm_80", "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    fresh = json.loads(out.with_suffix(".json").read_text())
    kept = json.loads((FIXTURES / "gravity.json").read_text())
    # The generated CUDA source and the IR never depend on the toolchain: always equal.
    assert fresh["source_sha256"] == kept["source_sha256"]
    assert fresh["ir_digest"] == kept["ir_digest"]
    assert fresh["parameters"] == kept["parameters"] and fresh["options"] == {"accumulate": True}
    if kept["nvrtc_version"] == ".".join(map(str, nvrtc_version())):
        # The same NVRTC writes the same PTX: the checked-in files are exactly today's output.
        assert out.read_bytes() == (FIXTURES / "gravity.ptx").read_bytes()
        assert fresh == kept
    read_artifact(FIXTURES / "gravity.ptx")  # and the checked-in pair validates


def test_loaded_vector_refuses_a_bad_artifact_before_looking_for_a_gpu(artifact):
    from eagle.loaded import LoadedVector

    artifact.write_bytes(artifact.read_bytes() + b"// appended\n")
    with pytest.raises(ArtifactError, match="SHA-256"):
        LoadedVector(artifact)


def test_loaded_vector_needs_a_gpu_and_says_so():
    from eagle.cuda import is_available
    from eagle.loaded import LoadedVector

    if is_available():
        pytest.skip("this machine has a GPU (tests/test_gpu.py covers LoadedVector there)")
    with pytest.raises(eagle.BackendUnavailable, match="no usable CUDA device"):
        LoadedVector(FIXTURES / "gravity.ptx")


def test_cubin_artifacts_validate_too(tmp_path):
    path, _ = write_artifact(falling.specialize({}), "cubin", tmp_path / "falling.cubin",
                             "sm_90")
    assert read_artifact(path).meta["arch"] == "sm_90"
