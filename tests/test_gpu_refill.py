"""Lane compaction in the GPU step kernel: a scattered tail costs its useful work.

A warp of 32 consecutive threads executes while any of its lanes runs a live sample, as long as
the slowest of them. So the work a launch costs the GPU is, summed over the warps with a live
lane, 32 x the most steps any of its lanes took ("lane-steps"); the work it does is the steps
its samples took ("useful steps"). With one thread per sample and 1% of the samples running 100
times longer than the rest at random places, about a quarter of the warps keep one live lane
after the short samples are done (14.75 lane-steps per useful step); with the live samples
compacted into the first threads between launches (``eagle.cuda.emit``), the tail runs on a
few full warps.

Both counts come from what the emitted kernel did: the host build of the generated CUDA
(``host_cuda``) defines the kernel's ``EAGLE_OBSERVE_STEPS`` hook to record, for every launch,
each thread that ran a live sample and the steps it took (the real build defines it to
nothing), in blocks of one thread and in real blocks of 256 host threads (the warps' ballots
and the block's slot arithmetic run as on a GPU). The loop plays ``GraphLoop``'s adaptive
launch schedule on an H200-sized device. The results stay bit-identical to the reference
executor, also for a kernel whose random streams and ``hawk.sample_index()`` must follow the
sample, not the thread, and through the emulated GPU's whole runner (its three loops, reset,
run again, a composed graph replayed twice), through both doors: the Python GPU layer over the
emulated driver, and ``EAGLE_CUDA_NATIVE=1``, the native layer over the stand-in libcuda
(``native_door``, the slow tier).
"""

from __future__ import annotations

import contextlib
import copy
import ctypes

import numpy as np
import pytest

from differential import assert_bitwise_equal, reference_run
from eagle.bindings import bind
from eagle.cuda.backend import INITIAL_STEPS_PER_LAUNCH, MAX_STEPS_PER_LAUNCH
from eagle.cuda.emit import BLOCK_SIZE, CONTROL_FIELDS
from host_cuda import HostKernel, compiler
from kernels import oscillator, spread_oscillator
from native_door import DOORS
from test_cpu_backend import oscillator_bindings
from test_random_numbers import SEED, draws
from test_random_numbers import bindings as draws_bindings

if compiler() is None:
    pytest.skip("no host C++ compiler (g++, c++ or clang++) to run generated CUDA code",
                allow_module_level=True)

WARP = 32
N = 20_000
DT = 1e-3
SMS = 132  # an H200's multiprocessors: the schedule's "spread" and "full" marks
LONG, SHORT = 10_000, 100


def tail_steps(n: int = N) -> np.ndarray:
    """``benchmarks/cpu_loop.py``'s scattered tail: 1% of the samples take 10,000 steps, the
    others 100, at random places."""
    steps = np.full(n, SHORT)
    steps[: n // 100] = LONG
    return np.random.default_rng(2024).permutation(steps)


def tail_bindings(steps: np.ndarray) -> dict:
    n = steps.shape[0]
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=(steps - 0.5) * DT, dt=DT)  # t reaches t_end after exactly that many


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("refill")


@pytest.fixture(scope="module")
def tail_expected():
    """The reference executor's result on the scattered tail. Samples are independent, so it
    runs each group (short, long) on its own: one reference run of all 20,000 samples for
    10,000 steps would take 10 s."""
    steps = tail_steps()
    expected = copy.deepcopy(tail_bindings(steps))
    for group in (steps == SHORT, steps == LONG):
        part = {k: v[group] if isinstance(v, np.ndarray) else v
                for k, v in tail_bindings(steps).items()}
        result, taken = reference_run(spread_oscillator, part, LONG + 10)
        assert taken == steps[group][0]
        for key, value in result.items():
            if isinstance(value, np.ndarray):  # the state, the inputs and the flags
                expected.setdefault(key, np.zeros(N, value.dtype))[group] = value
    return expected


def device_run(kernel, bindings, max_steps, folder, seed=None, real_blocks=False):
    """Run ``kernel``'s generated CUDA on the host with the GPU's adaptive schedule (in blocks
    of one thread, or of 256 threads with the warp built-ins), recording each launch's
    (thread, steps taken); return (arrays, flags, control, observed)."""
    bound = bind(kernel, copy.deepcopy(bindings), "cpu", seed=seed)
    host = HostKernel(kernel.specialize(bound.dtypes), folder, real_blocks)
    control = host.run(bound.arrays, bound.uniforms, bound.flags, max_steps,
                       INITIAL_STEPS_PER_LAUNCH, grow_until=MAX_STEPS_PER_LAUNCH,
                       full=4 * SMS * BLOCK_SIZE, spread=SMS * BLOCK_SIZE, seed=seed or 0,
                       observe=True)
    return {**bound.arrays, **bound.uniforms}, bound.flags, control, host.observed


def lane_steps(observed: list[np.ndarray]) -> int:
    """What the warps execute: per launch, 32 x the most steps a lane took, summed over the
    warps that had a live lane."""
    total = 0
    for launch in observed:
        most = np.zeros(int(launch[:, 0].max()) // WARP + 1 if len(launch) else 0, np.int64)
        np.maximum.at(most, launch[:, 0] // WARP, launch[:, 1])
        total += WARP * int(most.sum())
    return total


def useful_steps(observed: list[np.ndarray]) -> int:
    return sum(int(launch[:, 1].sum()) for launch in observed)


@pytest.mark.parametrize("real_blocks", [False, True], ids=["one-thread-blocks", "real-blocks"])
def test_a_scattered_tail_executes_about_its_useful_steps(folder, tail_expected, real_blocks):
    """The real blocks run the warps' ballots and the block's slot arithmetic as a GPU does
    (blocks of one thread make each a single lane)."""
    steps = tail_steps()
    actual, flags, control, observed = device_run(spread_oscillator, tail_bindings(steps),
                                                  LONG + 10, folder, real_blocks=real_blocks)
    useful = useful_steps(observed)
    # The hook saw every step every sample took, and nothing else.
    assert useful == int(steps.sum()), "the kernel did not report the steps its samples took"
    assert flags.all() and control[CONTROL_FIELDS.index("steps")] == LONG
    ratio = lane_steps(observed) / useful
    assert ratio <= 1.5, f"the GPU would execute {ratio:.2f} lane-steps per useful step"
    # Once compacted, a launch's live samples sit in its first threads.
    for launch in observed[1:]:
        assert np.array_equal(np.sort(launch[:, 0]), np.arange(len(launch))), "not packed"
    assert_bitwise_equal({k: actual[k] for k in tail_expected}, tail_expected)


def test_a_uniform_workload_keeps_every_lane_busy(folder):
    _, _, _, observed = device_run(oscillator, oscillator_bindings(N), 2000, folder)
    assert useful_steps(observed) == N * 1000
    assert lane_steps(observed) == N * 1000  # 20,000 samples are 625 full warps


def test_compacted_samples_keep_their_own_random_streams(folder):
    """After a few launches thread j runs some sample i > j: its draws, its
    ``hawk.sample_index()`` and its rows are still sample i's."""
    bindings = draws_bindings(n=3000)
    actual, flags, _, observed = device_run(draws, bindings, 40, folder, seed=SEED)
    expected, _ = reference_run(draws, bindings, 40, seed=SEED)
    assert_bitwise_equal(actual, expected)
    assert len(observed[-1]) < 3000 // 2  # the last launch ran on a packed list of samples



@contextlib.contextmanager
def emulated(mode: str, folder, door: str = "bindings"):
    """The emulated GPU (``emulated_gpu``) serving ``cuda`` devices, with a driver older than
    12.4 for the unrolled graph; skipped as ``test_gpu_emulated`` is, where a real GPU is
    present or ``cuda.bindings`` is missing. Through the native ``door``, the stand-in libcuda
    under the native layer (``native_door``)."""
    if door == "native":
        from native_door import opened

        if mode == "graph-unrolled":  # the stand-in's driver version is one per process
            pytest.skip("not a case of the native door: it has no unrolled graph; it needs "
                        "WHILE nodes (driver 12.4) or eager=True")
        with opened(folder) as device:
            yield device
        return
    pytest.importorskip("cuda.bindings.driver")
    from eagle.cuda import driver as driver_module

    if driver_module.is_available():
        pytest.skip("a real GPU is present: tests/test_gpu.py runs instead")
    from emulated_gpu import EmulatedDriver
    from fake_driver import OK, installed

    class Driver12_3(EmulatedDriver):
        def _cuDriverGetVersion(self):
            return OK, 12030

    driver = (Driver12_3 if mode == "graph-unrolled" else EmulatedDriver)(folder)
    with installed(driver, compiler=lambda source, arch="sm_90", **options:
                   source.encode() + b"\0"):
        yield driver


@pytest.fixture(params=["graph-while", "graph-unrolled", "host-loop"])
def emulated_gpu(request, door, tmp_path_factory):
    """(the emulated GPU, the loop's mode) for each of the GPU runner's three loops."""
    with emulated(request.param, tmp_path_factory.mktemp("emulated"), door) as driver:
        yield driver, request.param


@pytest.fixture(params=DOORS)
def door(request):
    return request.param


def test_the_whole_runner_on_a_scattered_tail(emulated_gpu, tail_expected):
    """Every loop over compacted launches (the graph's WHILE node, the unrolled graph, the
    host's loop): truncated at step 150 (the tail is already compacted), continued to the end,
    run again (nothing to do), then reset and run from the same start: every time the
    reference's bits."""
    import eagle
    from native_door import NativeDevice, control_of, device_array

    gpu, mode = emulated_gpu

    def upload(bindings):
        return {k: device_array(gpu, v) if isinstance(v, np.ndarray) else v
                for k, v in bindings.items()}

    start = tail_bindings(tail_steps())
    arrays = upload(start)
    runner = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=150,
                              eager=mode == "host-loop", **arrays)
    with pytest.warns(eagle.TruncationWarning):
        first = runner.run()
    assert first.mode == mode
    assert first.truncated and first.steps == 150 and first.done == N - N // 100
    # The loop's lists: the next launch would take exactly the long samples (the C++
    # RunLoop keeps its lists to itself: only the control block is read through the native door)
    control = dict(zip(CONTROL_FIELDS, control_of(runner).tolist(), strict=True))
    assert control["count"] == N // 100 and control["list_in"] in (1, 2)
    if not isinstance(gpu, NativeDevice):
        loop = runner._loop.graph_loop()
        lists = loop.lists.download(np.empty(2 * N, np.int64)).reshape(2, N)
        in_list = lists[control["list_in"] - 1, : N // 100]
        assert np.array_equal(np.sort(in_list), np.flatnonzero(start["t_end"] > SHORT * DT))
    runner.max_steps = LONG + 10
    rest = runner.run()
    assert not rest.truncated and runner.steps == LONG and rest.done == N
    again = runner.run()
    assert again.launches == 0 and again.steps == 0
    final = {k: v.get() for k, v in arrays.items() if hasattr(v, "get")}
    assert_bitwise_equal(final, {k: tail_expected[k] for k in final})
    for key, value in upload(start).items():  # the user re-initialises the arrays (device
        if hasattr(value, "get"):  # memory is host memory on both stand-ins)
            ctypes.memmove(arrays[key].address, value.address, value.get().nbytes)
    runner.reset()
    whole = runner.run()
    assert whole.steps == LONG and whole.launches == 15
    assert_bitwise_equal({k: v.get() for k, v in arrays.items() if hasattr(v, "get")}, final)


def test_each_composed_replay_starts_on_every_sample(tmp_path, door, tail_expected):
    """A ``GraphComposer`` replay opens its run with ``eagle_start``, which must go back to the
    identity list: here the first replay ends with the lists empty (every sample done), the
    user restarts the samples (fresh arrays, flags cleared), and the second replay must run
    them all again to the same bits."""
    import eagle
    from eagle.backend import backend_for
    from eagle.compose import GraphComposer
    from native_door import device_array

    with emulated("graph-while", tmp_path, door) as gpu:
        start = tail_bindings(tail_steps())
        arrays = {k: device_array(gpu, v) if isinstance(v, np.ndarray) else v
                  for k, v in start.items()}
        runner = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=3 * LONG, **arrays)
        composer = GraphComposer().add(runner).build()
        for replay in (1, 2):
            composer.launch(1)
            composer.synchronize()
            runner.sync_from_device()
            assert runner.steps == replay * LONG and runner.live == 0
            final = {k: v.get() for k, v in arrays.items() if hasattr(v, "get")}
            assert_bitwise_equal(final, {k: tail_expected[k] for k in final})
            for key, value in start.items():  # the user restarts every sample
                if isinstance(value, np.ndarray):
                    fresh = np.ascontiguousarray(value)
                    ctypes.memmove(arrays[key].address, fresh.ctypes.data, fresh.nbytes)
            backend_for("cuda").clear(runner.bound.flags)
