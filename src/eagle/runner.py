"""``until_done``, ``Runner`` and ``Report``: running a plan until every sample is done."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import hawk

from .bindings import bind, check_max_steps, check_steps_per_launch
from .interrupts import deferred_interrupts
from .loop import repeat_while
from .plan import Plan, deploy
from .threads import get_num_threads

__all__ = ["Runner", "Report", "until_done", "simulate"]

# The CPU's adaptive launch size: start small, double while a launch is quicker than half the
# target, halve when slower than twice it. Bounding a launch in time keeps Ctrl-C responsive.
_FIRST_STEPS_PER_LAUNCH = 16
_TARGET_LAUNCH_S = 0.05
_MAX_STEPS_PER_LAUNCH = 1 << 20


@dataclass(frozen=True)
class Report:
    """What one ``Runner.run()`` call did.

    Attributes:
        build_s: one-time cost of this call: compiling or loading the kernel on the CPU;
            recording and instantiating the graph on a GPU (where the kernel is compiled by
            ``until_done``); 0 on every later call of the same runner.
        launches: kernel launches during this call.
        steps: steps taken by the slowest sample during this call.
        done: samples whose terminated flag is set, after this call.
        n: samples in all.
        truncated: ``max_steps`` was reached with samples still running.
        wall_s: wall-clock time of this call, build included.
        device: where it ran (``"cpu"``, ``"cuda:0"``).
        mode: how the loop ran: ``"host-loop"`` (CPU), ``"graph-while"`` (a GPU graph whose
            WHILE node loops on the device) or ``"graph-unrolled"`` (drivers before 12.4).
        threads: host threads used (CPU; 0 on a GPU).
        steps_per_launch: the launch size last used.
    """

    build_s: float
    launches: int
    steps: int
    done: int
    n: int
    truncated: bool
    wall_s: float
    device: str
    mode: str
    threads: int
    steps_per_launch: int

    def __str__(self) -> str:
        state = "truncated at max_steps" if self.truncated else f"{self.done}/{self.n} done"
        how = f"{self.mode}, {self.threads} threads" if self.device == "cpu" else self.mode
        return (f"{state} after {self.steps} steps in {self.launches} launches on {self.device} "
                f"({how}): {self.wall_s * 1e3:.2f} ms, build {self.build_s * 1e3:.2f} ms")


class Runner:
    """A plan bound to arrays, ready to run until every sample is done or ``max_steps``.

    The arrays are the user's and are updated in place. The runner keeps the step counter
    (steps taken since construction or ``reset()``) that ``max_steps`` bounds.
    """

    def __init__(self, plan: Plan, bound, max_steps: int, steps_per_launch: int | None,
                 eager: bool = False):
        self.plan = plan
        self.eager = eager
        self.bound = bound
        self.device = plan.resolve_device(bound.device)
        self.max_steps = max_steps
        self.fixed_steps_per_launch = steps_per_launch
        self.steps_per_launch = steps_per_launch or _FIRST_STEPS_PER_LAUNCH
        self.steps = 0
        self.launches = 0
        self.live: int | None = None  # unknown until the first launch
        self._compiled = None
        self._arguments = None
        # On a GPU the kernel is compiled and loaded now, so that run()'s build_s is the cost
        # of recording the graph alone (nothing may load while a graph is being recorded).
        self._gpu_kernel = plan.compile(bound) if self.device != "cpu" else None

    @property
    def n(self) -> int:
        return self.bound.n

    @property
    def finished(self) -> bool:
        return self.live == 0 or self.steps >= self.max_steps

    @property
    def arrays(self) -> dict:
        """The bound per-sample arrays by parameter name (the user's own, updated in place),
        the terminated flags included."""
        return dict(self.bound.arrays)

    def run(self, progress: bool = False, checkpoint_every: float | None = None,
            checkpoint_path=None) -> Report:
        """Step every live sample until all are done or ``max_steps``; return a ``Report``.

        Means::

            while any(not terminated) and steps < max_steps:
                k = min(steps_per_launch, max_steps - steps)
                launch(k)        # every live sample takes up to k steps
                steps += k       # (the steps the slowest live sample took)

        On the CPU each launch crosses into compiled code once, and a run that is interrupted
        (Ctrl-C) stops at a launch boundary with the counters matching the arrays; ``run()``
        again continues. On a GPU the whole loop is one graph launch (recorded on the first
        call) and the counters are read back once at the end.

        Args:
            progress: show a tqdm bar of samples done (CPU: updated between launches; GPU:
                the device writes its live count to pinned host memory, a host thread reads it).
            checkpoint_every: seconds between checkpoints written to ``checkpoint_path`` at
                launch boundaries (CPU), plus one at the end of the run.
            checkpoint_path: where ``checkpoint_every`` writes (see ``checkpoint()``).
        """
        if checkpoint_every is not None:
            if checkpoint_path is None:
                raise ValueError("run(checkpoint_every=...) needs checkpoint_path=...")
            if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every,
                                                                    int | float) \
                    or not checkpoint_every > 0:
                raise ValueError(f"checkpoint_every must be a positive number of seconds, got "
                                 f"{checkpoint_every!r}")
            if self.device != "cpu":
                raise ValueError("checkpoint_every works on the CPU; on a GPU call "
                                 "runner.checkpoint(path) between run() calls")
        with _progress_bar(self, progress) as bar:
            if self.device != "cpu":
                report = self._run_gpu(bar)
            else:
                report = self._run_cpu(bar, checkpoint_every, checkpoint_path)
        if checkpoint_path is not None:
            self.checkpoint(checkpoint_path)
        return report

    def _run_cpu(self, bar, checkpoint_every, checkpoint_path) -> Report:
        start = time.perf_counter()
        build_s = 0.0
        if self._compiled is None:
            self._compiled = self.plan.compile(self.bound)
            self._arguments = self._compiled.arguments(self.bound)
            build_s = time.perf_counter() - start
        launches0, steps0 = self.launches, self.steps
        threads = get_num_threads()
        condition = np.array([0 if self.finished else 1], dtype=np.int64)
        last_checkpoint = time.perf_counter()
        with deferred_interrupts() as interrupts:

            def one_launch():
                nonlocal last_checkpoint
                k = min(self.steps_per_launch, self.max_steps - self.steps)
                t0 = time.perf_counter()
                live, taken = self._compiled.launch(k, threads, self._arguments)
                self._record(k, live, taken, time.perf_counter() - t0)
                condition[0] = not self.finished
                if bar is not None:
                    bar.update(self.n - live - bar.n)
                if checkpoint_every is not None and \
                        time.perf_counter() - last_checkpoint >= checkpoint_every:
                    self.checkpoint(checkpoint_path)
                    last_checkpoint = time.perf_counter()
                interrupts.check()

            repeat_while(condition, one_launch)
        return self._report(build_s, launches0, steps0, start, "host-loop", threads)

    def _run_gpu(self, bar) -> Report:
        from .cuda.backend import GraphLoop

        start = time.perf_counter()
        build_s = 0.0
        if self._compiled is None:
            self._compiled = GraphLoop(self._gpu_kernel, self.bound,
                                       self.fixed_steps_per_launch)
        if not self.eager and self._compiled.exec is None:
            self._compiled.build()
            build_s = time.perf_counter() - start
        launches0, steps0 = self.launches, self.steps
        loop = self._compiled.run_host_loop if self.eager else self._compiled.run
        if not self.finished:
            with _polling(bar, self._compiled, self.n):
                launches, taken, live = loop(self.steps, self.max_steps)
            self.launches += launches
            self.steps += taken
            self.live = live
        self.steps_per_launch = self._compiled.steps_per_launch
        mode = "host-loop" if self.eager else self._compiled.mode
        return self._report(build_s, launches0, steps0, start, mode, 0)

    def graph_loop(self):
        """This runner's GPU loop (made on first use): what ``GraphComposer`` records."""
        from .cuda.backend import GraphLoop

        if self.device == "cpu":
            raise TypeError("graph_loop(): this runner runs on the CPU")
        if self._compiled is None:
            self._compiled = GraphLoop(self._gpu_kernel, self.bound,
                                       self.fixed_steps_per_launch)
        return self._compiled

    def sync_from_device(self) -> None:
        """Read the step and launch counters back after a ``GraphComposer`` replayed this
        runner's loop (``run()`` does this itself)."""
        launches, steps, live = self.graph_loop().read_counters()
        self.launches += launches
        self.steps, self.live = steps, live

    def checkpoint(self, path) -> Path:
        """Save the runner's whole state (arrays, flags, counters, plan identity) to ``path``,
        atomically: a crash while writing leaves the previous checkpoint intact."""
        from .checkpoint import save

        return save(self, path)

    @classmethod
    def restore(cls, path, plan: Plan, xp=None) -> Runner:
        """A runner continuing from the checkpoint at ``path``, for the same kernel as
        ``plan``. The arrays are new NumPy arrays (``xp.asarray`` of them when ``xp`` is given,
        e.g. ``cupy``); ``runner.arrays`` holds them."""
        from .checkpoint import CheckpointError, load

        meta, arrays, flags = load(path)
        dtypes = {k: np.dtype(v) for k, v in meta["dtypes"].items()}
        program = plan.kernel.specialize(dtypes)
        if meta["kernel"] != plan.kernel.name or meta["digest"] != program.digest():
            raise CheckpointError(f"{path} was made by kernel {meta['kernel']!r} with another "
                                  f"body or dtypes; it cannot continue {plan.kernel.name!r}")
        bindings = {k: np.dtype(dtype).type(value)
                    for k, (dtype, value) in meta["uniforms"].items()}
        bindings.update(arrays)
        flag_param = plan.kernel.program.terminated_param
        if flag_param is not None:
            bindings[flag_param.name] = flags
        if xp is not None:
            bindings = {k: xp.asarray(v) if isinstance(v, np.ndarray) else v
                        for k, v in bindings.items()}
        runner = until_done(plan, max_steps=meta["max_steps"],
                            steps_per_launch=meta["steps_per_launch"], **bindings)
        if flag_param is None:  # no Terminated parameter: the flags live in the runner
            runner.bound.flags[...] = flags
        runner.steps, runner.launches, runner.live = meta["steps"], meta["launches"], meta["live"]
        return runner

    def _report(self, build_s: float, launches0: int, steps0: int, start: float, mode: str,
                threads: int) -> Report:
        return Report(
            build_s=build_s,
            launches=self.launches - launches0,
            steps=self.steps - steps0,
            done=self.n - (self.live if self.live is not None else self.n),
            n=self.n,
            truncated=bool(self.live) and self.steps >= self.max_steps,
            wall_s=time.perf_counter() - start,
            device=self.device,
            mode=mode,
            threads=threads,
            steps_per_launch=self.steps_per_launch,
        )

    def _record(self, k: int, live: int, taken: int, seconds: float) -> None:
        self.launches += 1
        self.steps += taken
        self.live = live
        if self.fixed_steps_per_launch is None and taken == k:
            if seconds < _TARGET_LAUNCH_S / 2:
                self.steps_per_launch = min(2 * self.steps_per_launch, _MAX_STEPS_PER_LAUNCH)
            elif seconds > 2 * _TARGET_LAUNCH_S:
                self.steps_per_launch = max(1, self.steps_per_launch // 2)

    def reset(self) -> None:
        """Clear the terminated flags and the step counters; the state arrays are the user's
        to re-initialise."""
        if isinstance(self.bound.flags, np.ndarray):
            self.bound.flags[...] = False
        else:
            from .cuda.memory import clear

            clear(self.bound.flags)
        self.steps = 0
        self.launches = 0
        self.live = None

    def __repr__(self) -> str:
        return (f"<eagle.Runner {self.plan.kernel.name} n={self.n} on {self.device}, "
                f"{self.steps}/{self.max_steps} steps>")


def until_done(plan: Plan | hawk.Kernel, /, max_steps: int, steps_per_launch: int | None = None,
               *, eager: bool = False, **bindings) -> Runner:
    """Bind ``plan``'s kernel to arrays and return a ``Runner`` (nothing runs yet).

    Every binding is checked first (missing, unknown, shape, dtype, device, layout, aliasing);
    a bad one raises ``TypeError``/``ValueError`` naming the parameter, with no array touched.
    A kernel is accepted in place of a plan and deployed for the arrays' device.

    ``eager=True`` makes the host read the live count after every launch and decide whether to
    launch again: the loop a graph replaces, kept for comparison and debugging (on the CPU the
    host decides anyway).
    """
    if isinstance(plan, hawk.Kernel):
        plan = deploy(plan)
    if not isinstance(plan, Plan):
        raise TypeError(f"until_done() takes a plan from eagle.deploy(kernel), got "
                        f"{type(plan).__name__}")
    max_steps = check_max_steps(max_steps)
    steps_per_launch = check_steps_per_launch(steps_per_launch)
    if plan.device is not None:
        plan.resolve_device(plan.device)  # an unavailable device is the first thing to say
    bound = bind(plan.kernel, bindings, plan.device)
    return Runner(plan, bound, max_steps, steps_per_launch, bool(eager))


def simulate(kernel: hawk.Kernel, /, max_steps: int, device: str | None = None,
             steps_per_launch: int | None = None, **bindings) -> Report:
    """``deploy`` + ``until_done`` + ``run`` in one call; the arrays are updated in place."""
    runner = until_done(deploy(kernel, device), max_steps=max_steps,
                        steps_per_launch=steps_per_launch, **bindings)
    return runner.run()


@contextmanager
def _progress_bar(runner: Runner, enabled: bool):
    if not enabled:
        yield None
        return
    try:
        from tqdm.auto import tqdm
    except ImportError as exc:
        raise ImportError("run(progress=True) needs tqdm: pip install tqdm") from exc
    done = runner.n - (runner.live if runner.live is not None else runner.n)
    bar = tqdm(total=runner.n, initial=done, unit="sample", desc=runner.plan.kernel.name)
    try:
        yield bar
    finally:
        if runner.live is not None:
            bar.update(runner.n - runner.live - bar.n)
        bar.close()


@contextmanager
def _polling(bar, loop, n: int, interval: float = 0.05):
    """While the body runs, copy the live count the device writes to host memory into ``bar``
    from a thread: the graph itself never waits for the host."""
    if bar is None:
        yield
        return
    stop = threading.Event()

    def poll():
        while not stop.wait(interval):
            live = loop.live_now()
            if live is not None:
                bar.update(n - live - bar.n)

    thread = threading.Thread(target=poll, name="eagle-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
