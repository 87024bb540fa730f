"""Vectors of any width from 2 to 128 (issue 28, its first part; 128 from issue 42):
``hawk.Vector[K]`` as a per-sample input, ``Mutable``, ``Out`` and ``Series``, built with
``hawk.vector(...)``, read with constant and loop indices, passed through funcs; every backend
equal to the reference executor bit for bit (the emulated GPU and NVRTC included), hypothesis
choosing the widths; and ``eagle.ode.solve`` with any number of states and parameters, against
SciPy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eagle
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import assert_bitwise_equal, load_kernel, reference_run, resumed_run
from hawk import Mutable, Out, Param, Scalar, Series, Terminated

N = 1001  # a partial last block on every backend


@hawk.func
def two_body(u, t, mu):
    """3D Kepler motion: u = (position, velocity), 6 states."""
    r = hawk.vector(u[0], u[1], u[2])
    d = mu / (hawk.length(r) ** 3)
    return hawk.vector(u[3], u[4], u[5], -d * u[0], -d * u[1], -d * u[2])


@hawk.kernel
def orbit(mu: Param, dt: Param, t_end: Scalar, terminated: Terminated,
          u: Mutable[hawk.Vector[6]], t: Mutable[Scalar], energy: Out[Scalar],
          track: Series[hawk.Vector[6]]):
    k1 = two_body(u, t, mu)
    k2 = two_body(u + 0.5 * dt * k1, t, mu)
    k3 = two_body(u + 0.5 * dt * k2, t, mu)
    k4 = two_body(u + dt * k3, t, mu)
    track[hawk.step() // 100] = u  # rows 0..3: the state every 100 steps
    u = u + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    t += dt
    speed2 = 0.0
    for i in range(3):
        speed2 += u[i + 3] * u[i + 3]
    energy = 0.5 * speed2 - mu / hawk.length(hawk.vector(u[0], u[1], u[2]))
    terminated = t >= t_end


@hawk.kernel
def chain(rates: hawk.Vector[12], dt: Param, steps: Param, terminated: Terminated,
          c: Mutable[hawk.Vector[12]], k: Mutable[Scalar], spread: Out[hawk.Vector[12]]):
    """A linear chain of 12 species, c[i] -> c[i + 1], with an elementwise and a reduced
    update, loop indices, negative indices and the vector helpers on 12 components."""
    flow = rates * c
    change = hawk.vector(-flow[0], flow[0] - flow[1], flow[1] - flow[2], flow[2] - flow[3],
                         flow[3] - flow[4], flow[4] - flow[5], flow[5] - flow[6],
                         flow[6] - flow[7], flow[7] - flow[8], flow[8] - flow[9],
                         flow[9] - flow[10], flow[10] - flow[-1])
    c = c + dt * change
    mean = hawk.total(c) / hawk.width(c)
    spread = hawk.normalize(c - mean) * hawk.dot(c, c)
    k += 1.0
    terminated = k >= steps


def orbit_bindings(n: int) -> dict:
    rng = np.random.default_rng(3)
    e, tilt = rng.uniform(0.0, 0.5, n), rng.uniform(0.0, 1.0, n)
    speed = np.sqrt((1 + e) / (1 - e))
    zero = np.zeros(n)
    return dict(mu=1.0, dt=1e-2, t_end=rng.uniform(1.0, 3.0, n), terminated=np.zeros(n, bool),
                u=np.vstack([1 - e, zero, zero, zero, speed * np.cos(tilt),
                             speed * np.sin(tilt)]),
                t=zero.copy(), energy=zero.copy(), track=np.full((4, 6, n), np.nan))


def chain_bindings(n: int) -> dict:
    rng = np.random.default_rng(4)
    return dict(rates=rng.uniform(0.1, 2.0, (12, n)), dt=1e-2, steps=300.0,
                terminated=np.zeros(n, bool), c=np.vstack([np.ones(n), np.zeros((11, n))]),
                k=np.zeros(n), spread=np.zeros((12, n)))


def test_vector_k_is_one_family_with_the_named_types():
    assert hawk.Vector[2] is hawk.Vec2 and hawk.Vector[3] is hawk.Vec3
    assert hawk.Vector[4] is hawk.Vec4 and hawk.Vector[128] is hawk.Vector[128]
    assert hawk.Vector[6].width == 6 and repr(Mutable[hawk.Vector[6]]) == "Mutable[Vector[6]]"
    for bad in (1, 129, 0, 2.0, True, "6"):
        with pytest.raises(TypeError, match="Vector\\[K\\] takes an int K from 2 to 128"):
            hawk.Vector[bad]
    assert hawk.vector(*range(6)).shape == (6,)
    assert hawk.vector(np.ones(5), 2.0, 3.0, 4.0, 5.0, 6.0, 7.0).shape == (7, 5)
    with pytest.raises(TypeError, match="vector\\(\\) takes 2 to 128 components, got 129"):
        hawk.vector(*range(129))


@pytest.mark.parametrize("case", ["orbit", "chain"])
@pytest.mark.parametrize("steps_per_launch", [7, None])
def test_wide_vectors_equal_the_reference_on_every_backend(target, case,  # noqa: F811
                                                           steps_per_launch):
    kernel, bindings, max_steps = {"orbit": (orbit, orbit_bindings(N), 400),
                                   "chain": (chain, chain_bindings(N), 400)}[case]
    expected, expected_steps = reference_run(kernel, bindings, max_steps)
    arrays = target.put(bindings)
    report = eagle.until_done(eagle.deploy(kernel, target.target.device), max_steps=max_steps,
                              steps_per_launch=steps_per_launch, **arrays).run()
    actual = target.get(arrays)
    shared = [k for k in expected if k in actual]
    assert_bitwise_equal({k: actual[k] for k in shared}, {k: expected[k] for k in shared})
    assert report.steps == expected_steps and report.done == N


def test_a_wide_vector_of_the_wrong_width_is_refused_by_name():
    bindings = orbit_bindings(10)
    bindings["u"] = bindings["u"][:5]
    with pytest.raises(eagle.BindingValueError, match=r"'u' \(Mutable\[Vector\[6\]\]\) must "
                                                      r"have shape \(6, n\), got \(5, 10\)"):
        eagle.until_done(eagle.deploy(orbit, "cpu"), max_steps=10, **bindings)


def test_a_wide_vector_read_out_of_range_is_a_compile_error(tmp_path):
    source = ("import hawk\nfrom hawk import Mutable, Terminated\n\n@hawk.kernel\n"
              "def bad(terminated: Terminated, u: Mutable[hawk.Vector[6]]):\n"
              "    u = u * u[6]\n    terminated = u[0] > 1.0\n")
    with pytest.raises(hawk.CompileError, match=r"a Vector\[6\] index must be a constant from "
                                                r"-6 to 5"):
        load_kernel(source, tmp_path, "bad")


def test_wide_kernels_compile_for_the_gpu_with_nvrtc():
    nvrtc = pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.emit import STEP_KERNEL, emit_cuda

    for kernel in (orbit, chain):
        cubin = nvrtc.compile_source(emit_cuda(kernel.specialize({})), "sm_90")
        assert cubin[:4] == b"\x7fELF" and STEP_KERNEL.encode() in cubin




def _width_kernel_source(width: int, shift: int) -> str:
    """A kernel on a Vector[width]: elementwise arithmetic, a loop over the components with a
    shifted index, the helpers, a func taking and returning the vector."""
    return f"""\
import hawk
from hawk import Mutable, Out, Param, Scalar, Terminated

@hawk.func
def rotate(v, s):
    return hawk.vector({", ".join(f"v[{(i + shift) % width}] * s" for i in range(width))})

@hawk.kernel
def wide(a: hawk.Vector[{width}], s: Param, terminated: Terminated,
         v: Mutable[hawk.Vector[{width}]], k: Mutable[Scalar], norm: Out[Scalar]):
    w = rotate(v, s) + 0.25 * a
    acc = 0.0
    for i in range({width}):
        acc += w[i] * a[{width} - 1 - i]
    v = hawk.normalize(w) + hawk.maximum(w, acc * 1e-3)
    norm = hawk.length(v) + hawk.dot(v, a)
    k += 1.0
    terminated = k >= 5.0 + a[0] * 3.0
"""


def _width_bindings(width: int, n: int) -> dict:
    rng = np.random.default_rng(width)
    return dict(a=rng.uniform(0.0, 1.0, (width, n)), s=0.9, terminated=np.zeros(n, bool),
                v=rng.normal(0.0, 1.0, (width, n)), k=np.zeros(n), norm=np.zeros(n))


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(width=st.integers(2, 64), shift=st.integers(0, 63))
def test_random_widths_equal_the_reference_on_the_cpu(tmp_path, width, shift):
    kernel = load_kernel(_width_kernel_source(width, shift % width), tmp_path, "wide")
    bindings = _width_bindings(width, 257)
    expected, steps = reference_run(kernel, bindings, 20)
    actual = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in bindings.items()}
    report = eagle.until_done(eagle.deploy(kernel, "cpu"), max_steps=20, **actual).run()
    assert_bitwise_equal({k: actual[k] for k in ("v", "k", "norm")},
                         {k: expected[k] for k in ("v", "k", "norm")})
    assert report.steps == steps


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(width=st.integers(2, 64), shift=st.integers(0, 63))
def test_random_widths_equal_the_reference_in_the_generated_cuda(tmp_path, width, shift):
    from host_cuda import HostKernel, compiler

    if compiler() is None:
        pytest.skip("no host C++ compiler to run the generated CUDA with")
    from eagle.bindings import bind

    kernel = load_kernel(_width_kernel_source(width, shift % width), tmp_path, "wide")
    bindings = _width_bindings(width, 300)
    expected, _ = reference_run(kernel, bindings, 20)
    bound = bind(kernel, {k: v.copy() if isinstance(v, np.ndarray) else v
                          for k, v in bindings.items()}, "cpu")
    host = HostKernel(kernel.specialize(bound.dtypes), tmp_path)
    host.run(bound.arrays, bound.uniforms, bound.flags, 20, 4)
    assert_bitwise_equal({k: bound.arrays[k] for k in ("v", "k", "norm")},
                         {k: expected[k] for k in ("v", "k", "norm")})


# -- eagle.ode.solve with any number of states --------------------------------------------------

def test_a_3d_kepler_orbit_of_six_states_returns_to_its_start_and_matches_scipy():
    from scipy.integrate import solve_ivp

    n = 64
    rng = np.random.default_rng(1)
    e, tilt = rng.uniform(0.0, 0.6, n), rng.uniform(0.0, 1.0, n)
    speed = np.sqrt((1 + e) / (1 - e))
    zero = np.zeros(n)
    u0 = np.vstack([1 - e, zero, zero, zero, speed * np.cos(tilt), speed * np.sin(tilt)])
    period = 2 * math.pi  # a = 1 for every eccentricity
    solution = eagle.ode.solve(two_body, u0, (0.0, period), p=1.0, rtol=1e-10, atol=1e-10)
    assert solution.u.shape == (6, n) and (solution.status == 1).all()
    assert np.abs(solution.u - u0).max() < 1e-6  # one period: back where it started

    def rhs(t, y):
        r = y[:3] / np.linalg.norm(y[:3]) ** 3
        return [*y[3:], *(-r)]

    for i in (0, 17, 63):
        ref = solve_ivp(rhs, (0.0, period), u0[:, i], method="DOP853", rtol=1e-12, atol=1e-12)
        assert np.abs(ref.y[:, -1] - solution.u[:, i]).max() < 1e-7


@hawk.func
def chain_rhs(u, t, p):
    """Ten species in a line, each decaying into the next at its own rate p[i] (p: 10 per
    sample); the last one accumulates."""
    return hawk.vector(-p[0] * u[0], p[0] * u[0] - p[1] * u[1], p[1] * u[1] - p[2] * u[2],
                       p[2] * u[2] - p[3] * u[3], p[3] * u[3] - p[4] * u[4],
                       p[4] * u[4] - p[5] * u[5], p[5] * u[5] - p[6] * u[6],
                       p[6] * u[6] - p[7] * u[7], p[7] * u[7] - p[8] * u[8], p[8] * u[8])


def test_ten_states_and_ten_parameters_per_sample_match_scipy():
    from scipy.integrate import solve_ivp

    n = 32
    rates = np.random.default_rng(2).uniform(0.2, 3.0, (10, n))
    u0 = np.vstack([np.ones(n), np.zeros((9, n))])
    solution = eagle.ode.solve(chain_rhs, u0, (0.0, 4.0), p=rates, rtol=1e-9, atol=1e-12,
                               saveat=(0.0, 4.0, 5))
    assert solution.saved.shape == (5, 10, n)
    np.testing.assert_allclose(solution.u.sum(axis=0), 1.0, rtol=1e-9)  # mass is conserved
    for i in (0, 31):
        def rhs(t, y, k=rates[:, i]):
            flow = k[:9] * y[:9]
            return np.concatenate([[-flow[0]], flow[:-1] - flow[1:], [flow[-1]]])

        ref = solve_ivp(rhs, (0.0, 4.0), u0[:, i], method="Radau", rtol=1e-12, atol=1e-14,
                        t_eval=np.linspace(0.0, 4.0, 5))
        np.testing.assert_allclose(solution.saved[:, :, i], ref.y.T, rtol=1e-6, atol=1e-9)


def test_ode_shapes_outside_the_range_are_refused_by_name():
    with pytest.raises(ValueError, match=r"u0 must have shape .* k in 1\.\.128"):
        eagle.ode.solve(chain_rhs, np.ones((129, 4)), (0.0, 1.0))
    with pytest.raises(ValueError, match=r"p as a sequence must have 2 to 128 entries"):
        eagle.ode.solve(chain_rhs, np.ones((10, 4)), (0.0, 1.0), p=[1.0] * 129)


def test_a_checkpoint_of_wide_vectors_and_their_series_resumes_bit_identically(tmp_path):
    """The checkpoint keeps a Vector[6] state (6, n) and its Series (T, 6, n); before wide
    vectors a (T, k, n) array was taken for one only with k in 2..4."""
    bindings = orbit_bindings(50)
    expected, _ = reference_run(orbit, bindings, 400)
    restored = resumed_run(orbit, bindings, 150, 400, tmp_path / "orbit.npz")
    assert_bitwise_equal({k: restored[k] for k in ("u", "t", "energy", "track")},
                         {k: expected[k] for k in ("u", "t", "energy", "track")})


def test_a_checkpoint_of_the_widest_vector_resumes_bit_identically(tmp_path):
    """A ``Vector[128]`` state (``MAX_WIDTH``) and its Series: the checkpoint keeps the
    ``(128, n)`` and ``(T, 128, n)`` arrays, and the restored run ends on the bits of one
    run."""
    widest = load_kernel("""\
import hawk
from hawk import Mutable, Scalar, Series, Terminated, Vector


@hawk.kernel
def widest(terminated: Terminated, u: Mutable[Vector[128]], t: Mutable[Scalar],
           track: Series[Vector[128]]):
    u = 0.99 * u + 0.01 * (u * u + t)
    t = t + 1.0
    track[hawk.step()] = u
    terminated = t >= 12.0
""", tmp_path, "widest")
    n = 37
    bindings = dict(terminated=np.zeros(n, bool), t=np.zeros(n),
                    u=np.random.default_rng(5).normal(size=(128, n)),
                    track=np.zeros((12, 128, n)))
    expected, _ = reference_run(widest, bindings, 20)
    restored = resumed_run(widest, bindings, 5, 20, tmp_path / "widest.npz")
    assert_bitwise_equal({k: restored[k] for k in ("u", "t", "track")},
                         {k: expected[k] for k in ("u", "t", "track")})


@hawk.kernel
def sliced(u: Mutable[hawk.Vector[6]], head: Out[hawk.Vec3], last: Out[Scalar]):
    head = u[:3]
    last = u[-1:]
    u = hawk.concat(u[3:5] * 2.0, last, hawk.matrix((1.0, 2.0), (3.0, 4.0)) @ u[0:2], 7)


def test_slices_and_concat_split_and_join_vectors():
    """v[a:b] with compile-time bounds (a number when one component is left) and hawk.concat
    of numbers, vectors and matrices: what forward sensitivities split their state with."""
    u = np.arange(12.0).reshape(6, 2)
    out = dict(head=np.zeros((3, 2)), last=np.zeros(2))
    expected, _ = reference_run(sliced, dict(u=u.copy(), **out), 1)
    eagle.until_done(eagle.deploy(sliced, "cpu"), max_steps=1, u=u, **out).run()
    start = np.arange(12.0).reshape(6, 2)
    np.testing.assert_array_equal(out["head"], start[:3])
    np.testing.assert_array_equal(out["last"], start[5])
    np.testing.assert_array_equal(u, np.vstack([2 * start[3:5], start[5:6],
                                                start[0:1] + 2 * start[1:2],
                                                3 * start[0:1] + 4 * start[1:2],
                                                np.full((1, 2), 7.0)]))
    assert_bitwise_equal({"u": u, **out}, {k: expected[k] for k in ("u", "head", "last")})
