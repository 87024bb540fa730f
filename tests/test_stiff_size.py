"""Stiff models above 16 states (issue 42): the matrices a kernel builds (``hawk.identity``,
``hawk.zeros``, a Jacobian, the LU of ``hawk.solve``) go up to ``MAX_MATRIX_SIDE`` = 128 sides,
one per state component, while a matrix *argument* (``Matrix[R, C]``, its components one
argument each) stays at 16; ``rosenbrock23`` and ``rodas5p`` on the Brusselator of
``benchmarks/stiff_models.py`` at 20 to 128 states against SciPy's ``Radau`` at rtol 1e-12,
every member done and within a few tolerance units (``atol + rtol |u_ref|``); the 128-state
step kernel within CUDA's 4 KB of kernel parameters, and a wider one refused by name."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
import pytest

import eagle
import eagle.ode
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import adaptive_bindings, assert_adaptive_run_matches_reference, load_kernel
from hawk.ir import MAX_ARGUMENT_MATRIX_SIDE, MAX_MATRIX_SIDE, MAX_WIDTH

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import stiff_models  # noqa: E402

scipy_integrate = pytest.importorskip("scipy.integrate")

T_END = 10.0
A = 0.02 * np.array([0.8, 1.0, 1.2])  # the diffusion, one per member


def _kernel_source(size: int) -> str:
    return f"""\
import hawk
from hawk import Out, Terminated, Vector


@hawk.kernel
def big(b: Vector[{size}], terminated: Terminated, x: Out[Vector[{size}]], z: Out[Vector[{size}]]):
    a = 4.0 * hawk.identity({size}) + 0.1 * hawk.outer(b, b) + hawk.zeros({size}, {size})
    x = hawk.solve(a, b)
    z = hawk.zeros({size}) + b
    terminated = True
"""


def test_the_matrix_side_of_values_follows_the_widest_state():
    assert MAX_MATRIX_SIDE == MAX_WIDTH == 128 and MAX_ARGUMENT_MATRIX_SIDE == 16


def test_a_kernel_builds_and_solves_a_20_by_20_matrix(tmp_path):
    size, n = 20, 5
    big = load_kernel(_kernel_source(size), tmp_path, "big")
    b = np.random.default_rng(42).normal(size=(size, n))
    out = dict(x=np.zeros((size, n)), z=np.zeros((size, n)))
    eagle.until_done(eagle.deploy(big, "cpu"), max_steps=1, b=b,
                     terminated=np.zeros(n, bool), **out).run()
    a = 4.0 * np.eye(size)[:, :, None] + 0.1 * (b[:, None, :] * b[None, :, :])
    assert np.array_equal(out["x"], hawk.solve(a, b))  # the same LU, bit for bit
    for i in range(n):
        np.testing.assert_allclose(out["x"][:, i], np.linalg.solve(a[:, :, i], b[:, i]),
                                   rtol=1e-12)
    np.testing.assert_array_equal(out["z"], b)


def test_a_matrix_above_128_is_refused_with_the_bound(tmp_path):
    with pytest.raises(hawk.CompileError, match="hawk.identity\\(\\)'s size must be a constant "
                                                "int from 1 to 128"):
        load_kernel(_kernel_source(128).replace("hawk.identity(128)", "hawk.identity(129)"),
                    tmp_path, "big")


def test_a_state_of_129_components_is_refused_by_name(tmp_path):
    """One past the widest vector: the annotation, ``hawk.vector`` in a body and ``solve``'s
    ``u0`` each say the bound, naming what the user wrote."""
    with pytest.raises(TypeError, match="hawk.Vector\\[K\\] takes an int K from 2 to 128"):
        hawk.Vector[129]
    source = _kernel_source(4).replace("hawk.zeros(4) + b",
                                       "hawk.vector(" + ", ".join(["b[0]"] * 129) + ")[0:4]")
    with pytest.raises(hawk.CompileError, match="vector\\(\\) takes 2 to 128 components, got 129"):
        load_kernel(source, tmp_path, "big")
    f = stiff_models.load(2, tmp_path)
    with pytest.raises(ValueError, match=r"u0 must have shape \(n,\) .* k in 1\.\.128 "
                                         r"for a vector state, got \(129, 3\)"):
        eagle.ode.solve(f, np.ones((129, 3)), (0.0, 1.0), p=A, method="rodas5p")


@functools.cache
def _radau(cells: int, a: float) -> np.ndarray:
    ref = scipy_integrate.solve_ivp(stiff_models.brusselator_numpy, (0.0, T_END),
                                    stiff_models.brusselator_start(cells), method="Radau",
                                    rtol=1e-12, atol=1e-12, args=(a,),
                                    jac=stiff_models.brusselator_jacobian)
    assert ref.success
    return ref.y[:, -1]


def _units(cells: int, method: str, rtol: float, folder) -> float:
    """The largest error over the members in tolerance units, every member checked done."""
    f = stiff_models.load(cells, folder)
    u0 = np.repeat(stiff_models.brusselator_start(cells)[:, None], len(A), axis=1)
    sol = eagle.ode.solve(f, u0, (0.0, T_END), p=A, method=method, rtol=rtol, atol=rtol)
    assert (sol.status == 1).all() and (sol.t == T_END).all()
    worst = 0.0
    for i, a in enumerate(A):
        ref = _radau(cells, a)
        worst = max(worst, (np.abs(sol.u[:, i] - ref) / (rtol + rtol * np.abs(ref))).max())
    print(f"{2 * cells} states, {method} at rtol {rtol:g}: {worst:.2f} tolerance units")
    return worst


@pytest.mark.parametrize("method, rtol, bound", [("rosenbrock23", 1e-6, 100.0),
                                                 ("rodas5p", 1e-6, 5.0), ("rodas5p", 1e-8, 5.0)])
def test_a_20_state_brusselator_matches_radau(tmp_path, method, rtol, bound):
    assert _units(10, method, rtol, tmp_path) < bound


@pytest.mark.slow
@pytest.mark.parametrize("method, rtol, bound", [("rosenbrock23", 1e-6, 100.0),
                                                 ("rodas5p", 1e-6, 5.0), ("rodas5p", 1e-8, 5.0)])
def test_a_32_state_brusselator_matches_radau(tmp_path, method, rtol, bound):
    assert _units(16, method, rtol, tmp_path) < bound


@pytest.mark.slow
@pytest.mark.parametrize("method, rtol, bound", [("rosenbrock23", 1e-6, 100.0),
                                                 ("rodas5p", 1e-6, 5.0), ("rodas5p", 1e-8, 5.0)])
def test_a_64_state_brusselator_matches_radau(tmp_path, method, rtol, bound):
    """64 states: the Jacobian's LU and solves as loops (``hawk.linalg``'s "Sizes")."""
    assert _units(32, method, rtol, tmp_path) < bound


@pytest.mark.slow
@pytest.mark.parametrize("rtol", [1e-6, 1e-8])
def test_a_128_state_brusselator_matches_radau(tmp_path, rtol):
    """128 states, the widest vector (``MAX_WIDTH``): ``rodas5p`` within a few tolerance units
    of Radau at rtol 1e-12, every member done."""
    assert _units(64, "rodas5p", rtol, tmp_path) < 5.0


def _stiff_kernel_on(on, folder, method: str, cells: int, n: int) -> None:
    """The ``2 * cells``-state Brusselator's step kernel (its LU and solves as loops) run
    on ``on`` (a target) against the reference executor: the same steps, bit for bit where the math
    library is the C library's."""
    f = stiff_models.load(cells, folder)
    kernel = hawk.ode.dopri5_kernel(f, hawk.Vector[2 * cells], hawk.Scalar, saveat=True,
                                    method=method)
    assert any(op.kind is hawk.ir.OpKind.LU for op in kernel.specialize({}).ops)
    a = 0.02 * np.linspace(0.8, 1.2, n)
    u0 = np.repeat(stiff_models.brusselator_start(cells)[:, None], n, axis=1)
    k1 = np.stack([stiff_models.brusselator_numpy(0.0, u0[:, i], a[i]) for i in range(n)],
                  axis=1)
    bindings = adaptive_bindings(a, u0, k1, t_end=1.0, rtol=1e-6, atol=1e-6, h=1e-3,
                                 save_every=0.5, save_count=3)
    assert_adaptive_run_matches_reference(on, kernel, bindings, 500)


@pytest.mark.parametrize("method", sorted(eagle.ode.IMPLICIT))
def test_a_32_state_stiff_kernel_on_every_backend(target, tmp_path, method):  # noqa: F811
    """The 32-state Brusselator on the CPU and the generated CUDA (``_stiff_kernel_on``)."""
    _stiff_kernel_on(target, tmp_path, method, 16, 6)


@pytest.mark.slow
def test_a_128_state_rodas5p_kernel_on_every_backend(target, tmp_path):  # noqa: F811
    """The 128-state Brusselator's ``rodas5p`` step (``_stiff_kernel_on``): 128 vector
    components, each an argument, on the CPU and through the CUDA emitter."""
    _stiff_kernel_on(target, tmp_path, "rodas5p", 64, 3)


@pytest.mark.slow
def test_a_64_state_rodas5p_kernel_compiles_for_the_gpu_with_nvrtc(tmp_path):
    nvrtc = pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.emit import emit_cuda

    kernel = hawk.ode.dopri5_kernel(stiff_models.load(32, tmp_path), hawk.Vector[64],
                                    hawk.Scalar, method="rodas5p")
    assert nvrtc.compile_source(emit_cuda(kernel.specialize({})), "sm_90")[:4] == b"\x7fELF"


@pytest.mark.slow
def test_a_128_state_rodas5p_kernel_compiles_for_the_gpu_with_nvrtc(tmp_path):
    """The widest state's step kernel, ``saveat`` included: inside CUDA's 4 KB of kernel
    parameters (``MAX_PARAMETER_BYTES``), and NVRTC makes an sm_90 cubin of it."""
    nvrtc = pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.emit import MAX_PARAMETER_BYTES, emit_cuda, parameter_bytes

    kernel = hawk.ode.dopri5_kernel(stiff_models.load(64, tmp_path), hawk.Vector[128],
                                    hawk.Scalar, saveat=True, method="rodas5p")
    program = kernel.specialize({})
    assert parameter_bytes(program) <= MAX_PARAMETER_BYTES
    assert nvrtc.compile_source(emit_cuda(program), "sm_90")[:4] == b"\x7fELF"


def test_a_kernel_past_cudas_parameter_space_is_refused_by_name(tmp_path):
    """Four ``Vector[128]`` arguments are 4,120 bytes of kernel parameters, past the 4,096
    CUDA takes: the CUDA emitter refuses the kernel by its name (NVRTC's own error names
    nothing the user wrote), and the CPU runs it."""
    from eagle.cuda.emit import MAX_PARAMETER_BYTES, emit_cuda, parameter_bytes
    from eagle.errors import CompileFailed

    wide = load_kernel("""\
import hawk
from hawk import Out, Vector


@hawk.kernel
def wide(a: Vector[128], b: Vector[128], c: Vector[128], s: Out[Vector[128]]):
    s = a + b + c
""", tmp_path, "wide")
    program = wide.specialize({})
    assert parameter_bytes(program) == 3 * 8 + 4 * 128 * 8 > MAX_PARAMETER_BYTES
    with pytest.raises(CompileFailed, match="kernel 'wide'.* 4,120 bytes of kernel parameters"):
        emit_cuda(program)
    a = np.random.default_rng(3).normal(size=(3, 128, 5))
    s = np.zeros((128, 5))
    eagle.until_done(eagle.deploy(wide, "cpu"), max_steps=1, a=a[0], b=a[1], c=a[2], s=s).run()
    np.testing.assert_array_equal(s, a[0] + a[1] + a[2])


def test_the_llvm_pipeline_is_chosen_by_the_steps_size():
    """Vectorisers up to ``VECTORISER_LIMIT`` instructions, the machine scheduler up to
    ``SCHEDULER_LIMIT`` (both measured: ``benchmarks/stiff_compile.py``)."""
    from eagle.cpu import native

    line = "  %x = fadd double %a, %b\n"
    assert native.instructions(line * 10 + "  store double %x, ptr %p\n") == 11
    assert native.pipeline(line * native.VECTORISER_LIMIT) == (True, True, True)
    assert native.pipeline(line * (native.VECTORISER_LIMIT + 1)) == (False, False, True)
    assert native.pipeline(line * (native.SCHEDULER_LIMIT + 1)) == (False, False, False)
    # a step that factorises a matrix calls out: its lane loop is never vectorised
    factorising = line * 10 + "  call void @eagle_lu_factor_f64(ptr %b, ptr %s, i64 9)\n"
    assert native.pipeline(factorising) == (False, False, True)


_UNOPTIMISED = """
import hashlib, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import eagle.cpu.native as native
import eagle.ode
import stiff_models
native.pipeline = lambda steps: (False, False, False)
f = stiff_models.load(2, sys.argv[2])
u0 = np.repeat(stiff_models.brusselator_start(2)[:, None], 3, axis=1)
sol = eagle.ode.solve(f, u0, (0.0, 10.0), p=np.array([0.016, 0.02, 0.024]), method="rodas5p",
                      rtol=1e-6, atol=1e-6)
print(np.ascontiguousarray(sol.u).tobytes().hex())
"""


def test_no_vectorisers_and_no_scheduler_give_the_same_bits(tmp_path):
    """The pipeline choice changes speed only: a kernel compiled without the vectorisers and
    the machine scheduler (a fresh process, an empty cache) ends on the bits of the default."""
    import os
    import subprocess

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "EAGLE_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(root / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _UNOPTIMISED, str(root / "benchmarks"),
                           str(tmp_path)], env=env, capture_output=True, text=True, check=True)
    f = stiff_models.load(2, tmp_path)
    u0 = np.repeat(stiff_models.brusselator_start(2)[:, None], 3, axis=1)
    sol = eagle.ode.solve(f, u0, (0.0, 10.0), p=np.array([0.016, 0.02, 0.024]),
                          method="rodas5p", rtol=1e-6, atol=1e-6)
    assert done.stdout.strip() == np.ascontiguousarray(sol.u).tobytes().hex()


def test_a_users_20_state_jac_is_taken_and_gives_the_automatic_bits(tmp_path):
    """``jac=`` returning a 20 x 20 matrix was refused (``Matrix[20, 20]``, an argument's
    bound); here ``hawk.jacobian`` of the model, the bits of the automatic Jacobian."""
    f = stiff_models.load(10, tmp_path)
    jac = load_kernel(stiff_models.brusselator_source(10) + "\n\n@hawk.func\ndef jac(u, t, a):\n"
                      "    return hawk.jacobian(brusselator, u, t, a)\n", tmp_path, "jac")
    u0 = np.repeat(stiff_models.brusselator_start(10)[:, None], len(A), axis=1)
    runs = [eagle.ode.solve(f, u0, (0.0, T_END), p=A, method="rodas5p", rtol=1e-6, atol=1e-6,
                            **given) for given in ({}, {"jac": jac})]
    assert (runs[1].status == 1).all() and np.array_equal(runs[0].u, runs[1].u)


def test_a_20_state_rodas5p_gradient_through_the_loops_matches_sensitivities(tmp_path):
    """``adjoint=True`` differentiates the step map through the whole-matrix ops in reverse
    (the transpose's factorisation); ``sensitivity="p"`` through them forward: the two agree
    contracted with one cotangent, and the ``u0`` gradient agrees with central differences
    along random directions (``sensitivity="u0"`` is refused at 20 states: 420 components)."""
    cells = 10
    f = stiff_models.load(cells, tmp_path)
    u0 = np.repeat(stiff_models.brusselator_start(cells)[:, None], len(A), axis=1)
    kw = dict(method="rodas5p", rtol=1e-10, atol=1e-10)
    sol = eagle.ode.solve(f, u0, (0.0, 2.0), p=A, adjoint=True, **kw)
    rng = np.random.default_rng(1)
    du = rng.normal(size=u0.shape)
    g = sol.vjp(du)
    by_p = eagle.ode.solve(f, u0, (0.0, 2.0), p=A, sensitivity="p", **kw)
    expected_p = np.einsum("kn,kn->n", by_p.du_dp.reshape(u0.shape), du)
    assert np.abs(g.p - expected_p).max() < 1e-6 * np.abs(expected_p).max()
    step = 1e-5
    for _ in range(2):
        v = rng.normal(size=u0.shape)
        ends = [eagle.ode.solve(f, u0 + sign * step * v, (0.0, 2.0), p=A, **kw).u
                for sign in (1.0, -1.0)]
        central = ((ends[0] - ends[1]) * du).sum(axis=0) / (2 * step)
        np.testing.assert_allclose((g.u0 * v).sum(axis=0), central, rtol=1e-4)


_FIRST_STEP = """
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import eagle.cpu.native as native
import eagle.ode
import hawk.ir
import stiff_models
if sys.argv[3] == "every-kernel-alike":
    hawk.ir.Program.runs_once = property(lambda program: False)
compiled, compile_ir = [], native.compile_ir

def recording(steps, machinery, name, *rest, **options):
    compiled.append((name, bool(options.get("once", rest[0] if rest else False))))
    return compile_ir(steps, machinery, name, *rest, **options)

native.compile_ir = recording
f = stiff_models.load(3, sys.argv[2])
u0 = np.repeat(stiff_models.brusselator_start(3)[:, None], 3, axis=1)
sol = eagle.ode.solve(f, u0, (0.0, 10.0), p=np.array([0.016, 0.02, 0.024]), method="rodas5p",
                      rtol=1e-6, atol=1e-6)
print(json.dumps({"compiled": sorted(compiled),
                  "u": np.ascontiguousarray(sol.u).tobytes().hex()}))
"""


def test_the_first_step_kernel_is_compiled_for_one_step(tmp_path):
    """The first-step kernel (its flag set to the constant True: ``Program.runs_once``) goes
    through LLVM's -O1 passes without the vectorisers and -O0 code generation
    (``native.compile_ir(once=True)``), the step kernel as before; the solution has the bits
    of both compiled alike (fresh processes, empty caches)."""
    import json
    import os
    import subprocess

    root = Path(__file__).resolve().parents[1]
    f = stiff_models.load(3, tmp_path)
    start = hawk.ode.dopri5_start_kernel(f, hawk.Vector[6], hawk.Scalar, method="rodas5p")
    step = hawk.ode.dopri5_kernel(f, hawk.Vector[6], hawk.Scalar, method="rodas5p")
    assert start.specialize({}).runs_once and not step.specialize({}).runs_once
    runs = {}
    for arm in ("default", "every-kernel-alike"):
        env = {**os.environ, "EAGLE_CACHE_DIR": str(tmp_path / f"cache-{arm}"),
               "PYTHONPATH": os.pathsep.join([str(root / "src"),
                                              os.environ.get("PYTHONPATH", "")])}
        done = subprocess.run([sys.executable, "-c", _FIRST_STEP, str(root / "benchmarks"),
                               str(tmp_path), arm], env=env, capture_output=True, text=True,
                              check=True)
        runs[arm] = json.loads(done.stdout.strip().splitlines()[-1])
    assert runs["default"]["compiled"] == [["dopri5_prepare", True], ["rodas5p", False]]
    assert runs["every-kernel-alike"]["compiled"] == [["dopri5_prepare", False],
                                                      ["rodas5p", False]]
    assert runs["default"]["u"] == runs["every-kernel-alike"]["u"]
