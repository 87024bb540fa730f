"""The native layer (native/, eagle::cuda) against the stand-in libcuda, with no GPU.

``make native`` builds libeagle_cuda, the stand-in and the self-test (ctest runs it) and the
examples against an installed copy; the first test here runs it (incremental after the first
time). Then: ``eagle-run-artifact`` on artifacts compiled from hawk kernels with
``--host-build`` must end BIT-IDENTICAL to ``eagle.until_done`` on the CPU backend for the same
bindings (arrays, flags, at max_steps or at done); the spec's gravity cell in C++ gives 5x the
one-launch answer; and the C++ sidecar reader refuses every tampered artifact with the message
Python's ``read_artifact`` gives.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import eagle
from eagle.cuda._native import PROTOTYPES
from eagle.cuda.artifact import ArtifactError, read_artifact, write_artifact
from eagle.paths import shown

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels import accumulate_force, bouncing, falling, oscillator  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "build" / "native"
LIBRARY = NATIVE / "install" / "lib" / "libeagle_cuda.so"
STANDIN = NATIVE / "install" / "lib" / "libfakecuda.so"
RUN_ARTIFACT = NATIVE / "examples" / "eagle-run-artifact"
GRAVITY = NATIVE / "examples" / "gravity-replay"

_VENV_BIN = Path(sys.executable).parent
# The tests that build (the first make native takes about 30 s on 2 cores) are the slow tier.


def test_ctypes_declarations_match_c_api_h():
    """Every facade function in c_api.h is declared in _native.PROTOTYPES, in order, with the
    same number of arguments and the same kind of result."""
    header = (ROOT / "native" / "include" / "eagle" / "cuda" / "c_api.h").read_text()
    found = re.findall(r"^EAGLE_CUDA_C (.+?)\b(eagle_\w+)\((.*)\);$", header, re.M)
    assert [name for _, name, _ in found] == list(PROTOTYPES)
    for result, name, args in found:
        restype, argtypes = PROTOTYPES[name]
        count = 0 if args.strip() == "void" else len(args.split(","))
        assert len(argtypes) == count, name
        kind = ("void" if result.strip() == "void" else "pointer" if "*" in result
                else result.strip())
        assert {"void": restype is None, "int": restype is ctypes.c_int,
                "uint64_t": restype is ctypes.c_uint64,
                "pointer": restype in (ctypes.c_char_p, ctypes.c_void_p)
                or hasattr(restype, "contents")}[kind], name


def test_the_embedded_condition_kernels_are_loop_pys():
    """native/src/condition_ptx.inc is CONDITION_SOURCE through NVRTC: the same kernels with the
    same parameters as NVRTC writes today (the instructions may differ between NVRTC versions:
    scripts/native_condition_ptx.py rewrites the file)."""
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC ([cuda] extra)")
    sys.path.insert(0, str(ROOT / "scripts"))
    from native_condition_ptx import OUT, text

    def signatures(source):
        return re.findall(r"\.visible \.entry (\w+)\(([^)]*)\)", source)

    assert signatures(OUT.read_text()) == signatures(text())
    assert len(signatures(text())) == 7


@pytest.fixture(scope="module")
def native():
    """``make native`` (headers, library, stand-in, self-test under ctest, examples)."""
    if (shutil.which("cmake") is None and not (_VENV_BIN / "cmake").exists()) \
            or shutil.which("g++") is None:
        pytest.skip("the native layer needs cmake and g++")
    done = subprocess.run(["make", "-s", "native", f"PYTHON={sys.executable}"], cwd=ROOT,
                          capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{_VENV_BIN}:{os.environ['PATH']}"})
    if done.returncode != 0:
        if "native_headers" in done.stderr and "pip" in done.stderr:
            pytest.skip(f"no CUDA headers (no network?): {done.stderr[-400:]}")
        raise AssertionError(f"make native failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    assert "selftest" in done.stdout and "100% tests passed" in done.stdout, done.stdout
    return NATIVE


def _compile(kernel_spec: str, folder: Path, *dtypes: str) -> Path:
    pytest.importorskip("cuda.bindings.nvrtc", reason="compiling PTX needs NVRTC ([cuda] extra)")
    name = kernel_spec.rsplit(":", 1)[1]
    path = folder / f"{name}.ptx"
    options = [option for dtype in dtypes for option in ("--dtype", dtype)]
    done = subprocess.run([sys.executable, "-m", "eagle", "compile", kernel_spec, *options,
                           "--target", "ptx", "--host-build", "-o", str(path)], cwd=ROOT,
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    assert path.with_suffix(".host.so").exists()
    return path


def _env(folder: Path) -> dict:
    return {**os.environ, "EAGLE_LIBCUDA": str(STANDIN), "FAKECUDA_HOST_MODULES": str(folder)}


def _oscillator(n):
    return (dict(omega=np.linspace(1.0, 3.0, n), x=np.ones(n), v=np.zeros(n), t=np.zeros(n)),
            dict(t_end=1.0, dt=1e-3))


def _falling(n):
    rng = np.random.default_rng(5)
    position = np.vstack([rng.uniform(6.6e3, 9e3, n), rng.uniform(-1e3, 1e3, n),
                          rng.uniform(-1e3, 1e3, n)])
    return (dict(position=position, velocity=np.zeros((3, n))),
            dict(mu=3.986004418e5, dt=0.5, r_min=6.4e3))


def _bouncing(n):
    return (dict(y=np.linspace(1.0, 90.0, n), vy=np.zeros(n), bounces=np.zeros(n)),
            dict(g=9.81, dt=1e-2, restitution=0.8))


CASES = {"oscillator": (oscillator, _oscillator), "falling": (falling, _falling),
         "bouncing": (bouncing, _bouncing)}


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:.*still running at max_steps")
@pytest.mark.parametrize("name, max_steps, per_launch", [
    ("oscillator", 10_000, 16), ("oscillator", 500, 7), ("falling", 3_000, 16),
    ("bouncing", 20_000, 32)])
def test_run_artifact_is_bit_identical_to_the_cpu_backend(native, tmp_path, name, max_steps,
                                                          per_launch):
    kernel, make = CASES[name]
    artifact = _compile(f"tests/kernels.py:{name}", tmp_path)
    n = 2_000
    arrays, params = make(n)
    data = tmp_path / "data"
    data.mkdir()
    for key, value in arrays.items():
        np.save(data / f"{key}.npy", value)
    (data / "params.json").write_text(json.dumps(params))
    done = subprocess.run([str(RUN_ARTIFACT), str(artifact), "--data", str(data), "--max-steps",
                           str(max_steps), "--steps-per-launch", str(per_launch), "--again"],
                          capture_output=True, text=True, env=_env(tmp_path))
    assert done.returncode == 0, done.stderr

    expected = {key: value.copy() for key, value in arrays.items()}
    expected["terminated"] = np.zeros(n, dtype=bool)
    runner = eagle.until_done(eagle.deploy(kernel, device="cpu"), max_steps=max_steps,
                              **expected, **params)
    report = runner.run()
    for key, value in expected.items():
        got = np.load(data / f"{key}.npy")
        assert got.dtype == value.dtype and got.shape == value.shape, key
        assert got.tobytes() == value.tobytes(), f"{key} differs from the CPU backend's bits"
    finished = int(expected["terminated"].sum())
    assert f"done {finished}/{n}, steps {report.steps}," in done.stdout, (done.stdout, report)
    again = runner.run()  # the spec's "Try this": a finished runner launches nothing
    assert f"run() again without reset: launches {again.launches}, steps {again.steps}" \
        in done.stdout, (done.stdout, again)


@pytest.mark.slow
def test_gravity_cell_in_cpp(native, tmp_path):
    artifact = _compile("docs/guide/_fixtures/gravity.py:gravity", tmp_path)
    done = subprocess.run([str(GRAVITY), str(artifact)], capture_output=True, text=True,
                          env=_env(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    line = done.stdout.strip()
    assert line.startswith("5 replays vs 5x the single-launch answer: max rel err = ")
    assert float(line.rsplit("= ", 1)[1]) <= 1e-12


def _facade(code: str, env: dict | None = None) -> str:
    """Run ``code`` in a fresh Python with ``lib`` (the C facade by ctypes) and ``E`` (its error
    record); the library is loaded once per process, so each check gets its own."""
    prelude = (f"import ctypes; lib = ctypes.CDLL({str(LIBRARY)!r})\n"
               "class E(ctypes.Structure): _fields_ = [('kind', ctypes.c_int), "
               "('cu', ctypes.c_int), ('name', ctypes.c_char_p), ('call', ctypes.c_char_p), "
               "('message', ctypes.c_char_p)]\n"
               "lib.eagle_last_error.restype = ctypes.POINTER(E)\n")
    done = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True,
                          env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.slow
def test_facade_says_why_no_gpu_is_usable(native, tmp_path):
    code = ("out = ctypes.create_string_buffer(512)\n"
            "print(lib.eagle_cuda_abi_version(), lib.eagle_unavailable_reason(out, 512), "
            "out.value.decode())")
    missing = {**os.environ, "EAGLE_LIBCUDA": str(tmp_path / "libcuda.so.1")}
    assert _facade(code, missing).startswith("1 0 no NVIDIA driver found (")
    assert _facade(code, _env(tmp_path)) == "1 0"  # the stand-in: a usable device
    info = subprocess.run([sys.executable, "-m", "eagle", "info"], capture_output=True, text=True,
                          env={**missing, "EAGLE_CUDA_LIBRARY": str(LIBRARY)})
    assert f"native layer: libeagle_cuda 0.1.0 (ABI 1) at {shown(LIBRARY)}" in info.stdout
    assert "through it, GPU: none usable (no NVIDIA driver found (" in info.stdout
    old = {**_env(tmp_path), "EAGLE_CUDA_LIBRARY": str(LIBRARY), "FAKECUDA_DRIVER_VERSION": "11080"}
    info = subprocess.run([sys.executable, "-m", "eagle", "info"], capture_output=True, text=True,
                          env=old)
    assert ("GPU: none usable (the CUDA driver is too old (11.8, cuGraphAddKernelNode missing); "
            "eagle needs 12.4 or newer)") in info.stdout


def _check(path: Path) -> str:
    """The C++ sidecar reader's verdict on ``path``: "0", or "4 <ArtifactError message>"."""
    return _facade(f"rc = lib.eagle_artifact_check({str(path).encode()!r})\n"
                   "print(rc, lib.eagle_last_error().contents.message.decode() if rc else '')")


def _python(path: Path) -> str:
    try:
        read_artifact(path)
    except ArtifactError as exc:
        return f"4 {exc}"
    return "0"


@pytest.mark.slow
@pytest.mark.parametrize("change", [
    None,
    lambda m: m.update(format="eagle-artifact/99"),
    lambda m: m.pop("parameters"),
    lambda m: (m.pop("launch"), m.pop("sha256")),
    lambda m: m["parameters"][0].update(role="Sometimes"),
    lambda m: m["parameters"][0].update(dtype="complex"),
    lambda m: m["arguments"].pop(),
    lambda m: m.update(target="cubin"),
    lambda m: m.update(sha256="0" * 64),
    "garbled", "not utf-8", "no sidecar", "ptx flipped", "a list"])
def test_cpp_reader_refuses_what_read_artifact_refuses(native, tmp_path, change):
    pytest.importorskip("cuda.bindings.nvrtc", reason="writing PTX needs NVRTC ([cuda] extra)")
    path, sidecar = write_artifact(accumulate_force.specialize({}), "ptx",
                                   tmp_path / "force.ptx", "sm_80")
    meta = json.loads(sidecar.read_text())
    if callable(change):
        change(meta)
        sidecar.write_text(json.dumps(meta))
    elif change == "garbled":
        sidecar.write_text("{not json")
    elif change == "not utf-8":
        sidecar.write_bytes(b'{"format": "\xff\xfe"}')
    elif change == "no sidecar":
        sidecar.unlink()
    elif change == "ptx flipped":
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 1
        path.write_bytes(bytes(data))
    elif change == "a list":
        sidecar.write_text("[1, 2]")
    assert _check(path) == _python(path)


@pytest.mark.slow
@pytest.mark.parametrize("change, words", [
    (lambda d: np.save(d / "x.npy", np.ones(50, dtype=np.float32)),
     "oscillator: 'x' must be float64, got float32"),
    (lambda d: np.save(d / "v.npy", np.zeros(49)),
     "oscillator: 'v' has 49 samples but an earlier array has 50"),
    (lambda d: (d / "omega.npy").unlink(), "omega.npy for Scalar parameter 'omega'"),
    (lambda d: (d / "params.json").write_text('{"t_end": 1.0}'),
     "no value for Param 'dt'"),
])
def test_run_artifact_refuses_bad_bindings(native, tmp_path, change, words):
    artifact = _compile("tests/kernels.py:oscillator", tmp_path)
    arrays, params = _oscillator(50)
    data = tmp_path / "data"
    data.mkdir()
    for key, value in arrays.items():
        np.save(data / f"{key}.npy", value)
    (data / "params.json").write_text(json.dumps(params))
    change(data)
    done = subprocess.run([str(RUN_ARTIFACT), str(artifact), "--data", str(data)],
                          capture_output=True, text=True, env=_env(tmp_path))
    assert done.returncode == 1 and done.stderr.startswith("eagle-run-artifact: ")
    assert words in done.stderr, done.stderr


# The child scripts' device array: the native layer's memory, exported as CuPy exports one.
_ARRAY_CLASS = """\
class Array:  # device memory of the native layer, exported as CuPy exports an array
    def __init__(self, host):
        self.host = np.ascontiguousarray(host)
        self.buffer = Buffer(self.host.nbytes)
        self.buffer.upload(self.host)
        self.__cuda_array_interface__ = dict(data=(self.buffer.ptr, False), shape=host.shape,
                                             typestr=host.dtype.str, strides=None, version=3)

    def get(self):
        self.buffer.download(self.host)
        return self.host
"""

_CELL = """
import numpy as np
from eagle.cuda._native import Buffer, current_stream
from eagle.errors import BindingTypeError, CaptureError
from eagle.loaded import LoadedVector
from eagle.pipeline import GraphPipeline


# ARRAY


force = LoadedVector(GRAVITY)
MU, N = 3.986004418e5, 1024
rng = np.random.default_rng(2)
position = Array(rng.uniform(7.0e3, 4.2e4, size=(3, N)))
out = Array(np.zeros((3, N)))
terminated = Array(np.zeros(N, dtype=np.bool_))
pipe = GraphPipeline()
pipe.add(lambda: force.launch(out=out, position=position, mu=MU, terminated=terminated))
pipe.build()
pipe.launch(n=5)
pipe.synchronize()
p = position.host
expected_once = -MU * p / np.linalg.norm(p, axis=0) ** 3
rel_err = np.max(np.abs(out.get() - 5 * expected_once) / np.abs(5 * expected_once))
print(f"5 replays vs 5x the single-launch answer: max rel err = {rel_err:.3e}")

bad = GraphPipeline().add(lambda: Buffer(64))  # allocates inside the capture
try:
    bad.build()
except CaptureError as exc:
    print("CaptureError:", exc)
step = lambda: force.launch(out=out, position=position, mu=MU, terminated=terminated)  # noqa
for steps in ([step, lambda: current_stream().synchronize()], [lambda: (step(), step())],
              [lambda: None]):
    try:
        GraphPipeline().add(steps[0]).add(steps[-1]).build() if len(steps) > 1 else \
            GraphPipeline().add(steps[0]).build()
    except CaptureError as exc:
        print("CaptureError:", exc)
try:
    force.launch(out=out, position=position)
except BindingTypeError as exc:
    print("BindingTypeError:", exc)
pipe.launch(n=1)  # the stream is usable after every failed capture
pipe.synchronize()
print("sixth:", np.allclose(out.get(), 6 * expected_once, rtol=1e-12))

from eagle.compose import GraphComposer  # noqa: E402

a, b = Array(np.zeros((3, N))), Array(np.zeros((3, N)))
pieces = [GraphPipeline().add(lambda: force.launch(out=a, position=position, mu=MU,
                                                   terminated=terminated)),
          GraphPipeline().add(lambda: force.launch(out=b, position=position, mu=2 * MU,
                                                   terminated=terminated))]
composer = GraphComposer()
for piece in pieces:
    composer.add(piece)
composer.build()
composer.launch(n=3)
composer.synchronize()
print("composed:", np.allclose(a.get(), 3 * expected_once, rtol=1e-12),
      np.allclose(b.get(), 6 * expected_once, rtol=1e-12))

import eagle  # noqa: E402

count = LoadedVector(COUNTDOWN)
for limit in (None, 3):
    left, done = Array(np.array([7], dtype=np.int64)), Array(np.zeros(1, dtype=np.bool_))
    loops = eagle.repeat_while(left, lambda: count.launch(left=left, terminated=done),
                               max_iterations=limit)
    print(f"repeat_while: {loops} iterations, left {int(left.get()[0])}")
"""
_CELL = _CELL.replace("# ARRAY\n", _ARRAY_CLASS)

_COUNTDOWN = """
import hawk
from hawk import Mutable, Scalar, Terminated


@hawk.kernel
def countdown(terminated: Terminated, left: Mutable[Scalar]):
    left = left - 1
    terminated = left <= 0
"""


@pytest.mark.slow
def test_the_spec_cell_in_python_over_the_cpp_classes(native, tmp_path):
    """EAGLE_CUDA_NATIVE=1: GraphPipeline, LoadedVector, GraphComposer (two pipelines forked and
    joined) and repeat_while run over eagle::cuda (the stand-in here), with the spec's cell
    unchanged but for its arrays."""
    artifact = _compile("docs/guide/_fixtures/gravity.py:gravity", tmp_path)
    (tmp_path / "countdown.py").write_text(_COUNTDOWN)
    countdown = _compile(f"{tmp_path / 'countdown.py'}:countdown", tmp_path, "left=int64")
    env = {**_env(tmp_path), "EAGLE_CUDA_NATIVE": "1", "EAGLE_CUDA_LIBRARY": str(LIBRARY),
           "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", f"GRAVITY = {str(artifact)!r}\n"
                           f"COUNTDOWN = {str(countdown)!r}\n" + _CELL],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("5 replays vs 5x the single-launch answer: max rel err = ")
    assert float(lines[0].rsplit("= ", 1)[1]) <= 1e-12
    assert lines[1].startswith("CaptureError: step 0 (") and "failed while being captured" in \
        lines[1] and "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED" in lines[1], lines[1]
    assert lines[2].startswith("CaptureError: step 1 (") and "synchronise" in lines[2] \
        and "cuStreamSynchronize failed" in lines[2], lines[2]
    assert lines[3].startswith("CaptureError: step 0 (") and "issued 2 operations" in lines[3]
    assert lines[4].startswith("CaptureError: step 0 (") and "issued 0 operations" in lines[4]
    assert lines[5].startswith("BindingTypeError: ") and "missing a binding for 'mu'" in lines[5]
    assert lines[6] == "sixth: True"
    assert lines[7] == "composed: True True"
    assert lines[8:] == ["repeat_while: 7 iterations, left 0", "repeat_while: 3 iterations, left 4"]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Characters .* do not decode back")  # hypothesis' text()
def test_cpp_json_reader_accepts_whatever_json_python_writes(native, tmp_path):
    """Any JSON value Python writes (nested, escaped, non-ASCII, big numbers), as an extra field
    of a valid sidecar, is read by the C++ reader (Artifact::read needs no driver: in process)."""
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    pytest.importorskip("cuda.bindings.nvrtc", reason="writing PTX needs NVRTC ([cuda] extra)")
    path, sidecar = write_artifact(accumulate_force.specialize({}), "ptx",
                                   tmp_path / "force.ptx", "sm_80")
    meta = json.loads(sidecar.read_text())
    lib = ctypes.CDLL(str(LIBRARY))
    lib.eagle_artifact_check.argtypes = [ctypes.c_char_p]
    values = st.recursive(
        st.none() | st.booleans() | st.integers(-2**70, 2**70)
        | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner,
                                                                    max_size=4),
        max_leaves=12)

    @hypothesis.settings(max_examples=150, deadline=None)
    @hypothesis.given(extra=values, indent=st.sampled_from([None, 0, 2]),
                      ascii_only=st.booleans())
    def check(extra, indent, ascii_only):
        sidecar.write_text(json.dumps({**meta, "extra": extra}, indent=indent,
                                      ensure_ascii=ascii_only), encoding="utf-8")
        assert lib.eagle_artifact_check(str(path).encode()) == 0

    check()


_UNTIL_DONE = """
import sys

import numpy as np

import eagle
from eagle.backend import registered
from eagle.cuda._native import Buffer
from eagle.cuda.backend import CudaBackend
from eagle.cuda.hostbuild import host_module_compiler

sys.path.insert(0, TESTS)
import kernels  # noqa: E402
from test_native import CASES  # noqa: E402


# ARRAY


kernel, make = CASES[NAME]
arrays, params = make(3000)
arrays = {k: v.astype(DTYPE) for k, v in arrays.items()}
with registered(CudaBackend(host_module_compiler(FOLDER))):
    cpu = {k: v.copy() for k, v in arrays.items()}
    cpu["terminated"] = np.zeros(3000, dtype=bool)
    gpu = {k: Array(v) for k, v in cpu.items()}
    extra = {"eager": True} if HOST_LOOP else {}
    if STREAM:  # the caller's stream, borrowed (any library's: here one of the C++ layer's)
        from eagle.cuda._native import Stream

        user_stream = Stream(0, non_blocking=True)
        extra["stream"] = user_stream.handle
    runner = eagle.until_done(eagle.deploy(kernel, device="cuda:0"), max_steps=MAX_STEPS,
                              steps_per_launch=PER_LAUNCH, **gpu, **params, **extra)
    report = runner.run(progress=PROGRESS)
    if PROGRESS:  # what the device wrote to pinned host memory after its last launch
        print("progress:", runner._loop.live_now(), file=sys.stderr)
    again = runner.run()
    ref = eagle.until_done(eagle.deploy(kernel, device="cpu"), max_steps=MAX_STEPS, **cpu,
                           **params).run()
    print(report.mode, report.launches, report.steps == ref.steps, report.done == ref.done,
          again.launches, all(gpu[k].get().tobytes() == cpu[k].tobytes() for k in cpu))
    runner.reset()  # flags cleared on the device; the arrays stay where the run left them
    print("after reset:", int(gpu["terminated"].get().sum()), runner.run().launches > 0)
"""
_UNTIL_DONE = _UNTIL_DONE.replace("# ARRAY\n", _ARRAY_CLASS)


@pytest.mark.slow
@pytest.mark.parametrize("name, max_steps, per_launch, dtype, host_loop, stream", [
    ("oscillator", 10_000, None, "float64", False, False),
    ("oscillator", 500, 7, "float64", False, False),
    ("oscillator", 10_000, None, "float32", False, False),
    ("oscillator", 10_000, 16, "float64", True, False),
    ("oscillator", 10_000, None, "float64", False, True),
    ("falling", 3_000, None, "float64", False, False),
    ("bouncing", 20_000, 32, "float64", True, True)])
def test_until_done_on_the_gpu_over_the_cpp_run_loop(native, tmp_path, name, max_steps,
                                                     per_launch, dtype, host_loop, stream):
    """EAGLE_CUDA_NATIVE=1: until_done on cuda:0 records WHILE { step ; decide } as the C++
    RunLoop (the kernel compiled for the host here, run by the stand-in) and ends bit-identical
    to the CPU backend, in one graph launch per run (or, eager=True, one round trip per
    launch; on the caller's stream with stream=); a finished runner launches nothing."""
    env = {**_env(tmp_path), "EAGLE_CUDA_NATIVE": "1", "EAGLE_CUDA_LIBRARY": str(LIBRARY),
           "PYTHONPATH": str(ROOT / "src")}
    code = (f"TESTS, FOLDER, NAME = {str(ROOT / 'tests')!r}, {str(tmp_path)!r}, {name!r}\n"
            f"MAX_STEPS, PER_LAUNCH, DTYPE = {max_steps}, {per_launch}, {dtype!r}\n"
            f"HOST_LOOP, STREAM, PROGRESS = {host_loop}, {stream}, {name == 'falling'}\n"
            + _UNTIL_DONE)
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                          text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    mode, launches, same_steps, same_done, again, same_bits = first.split()
    assert second.startswith("after reset: 0 ") or max_steps == 500, second
    assert mode == ("host-loop" if host_loop else "graph-while") and int(launches) >= 1
    assert same_steps == same_done == same_bits == "True", done.stdout
    assert again == "0"
    if name == "falling":  # run(progress=True): the device wrote the live count to host memory
        assert "progress: 0" in done.stderr, done.stderr[-2000:]
    if name == "oscillator" and per_launch is None and dtype == "float64":
        assert launches == "6"  # 16, 32, ..., 512: the adaptive schedule on a full device
    if name == "oscillator" and per_launch == 16:
        assert launches == "63"  # ceil(1000 / 16): one host round trip each


_COMPOSED = """
import sys

import numpy as np

import eagle
from eagle.backend import registered
from eagle.compose import GraphComposer
from eagle.cuda.backend import CudaBackend
from eagle.cuda.hostbuild import host_module_compiler

sys.path.insert(0, TESTS)
from test_native import CASES  # noqa: E402

exec(_ARRAY)
with registered(CudaBackend(host_module_compiler(FOLDER))):
    runs, refs = [], []
    for name in ("oscillator", "falling"):
        kernel, make = CASES[name]
        arrays, params = make(2000)
        cpu = {**{k: v.copy() for k, v in arrays.items()}, "terminated": np.zeros(2000, bool)}
        gpu = {k: Array(v) for k, v in cpu.items()}
        runs.append((eagle.until_done(eagle.deploy(kernel, device="cuda:0"), max_steps=5_000,
                                      **gpu, **params), gpu, cpu))
        refs.append(eagle.until_done(eagle.deploy(kernel, device="cpu"), max_steps=5_000,
                                     **cpu, **params).run())
    composer = GraphComposer()
    for runner, _, _ in runs:
        composer.add(runner)
    composer.build()
    composer.launch(1)
    composer.synchronize()
    for (runner, gpu, cpu), ref in zip(runs, refs):
        runner.sync_from_device()
        print(runner.steps == ref.steps, runner.live == 0,
              all(gpu[k].get().tobytes() == cpu[k].tobytes() for k in cpu))
"""


@pytest.mark.slow
def test_runners_composed_over_the_cpp_layer(native, tmp_path):
    """EAGLE_CUDA_NATIVE=1: two runners in one GraphComposer, each recorded as eagle_start ->
    WHILE { step ; decide } at the top level of the composed graph by the C++ RunLoop, run to
    done by one replay, bit-identical to the CPU backend."""
    env = {**_env(tmp_path), "EAGLE_CUDA_NATIVE": "1", "EAGLE_CUDA_LIBRARY": str(LIBRARY),
           "PYTHONPATH": str(ROOT / "src")}
    array = _ARRAY_CLASS
    code = (f"TESTS, FOLDER = {str(ROOT / 'tests')!r}, {str(tmp_path)!r}\n"
            "from eagle.cuda._native import Buffer\n"
            f"_ARRAY = {array!r}\n" + _COMPOSED)
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                          text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["True True True", "True True True"], done.stdout
