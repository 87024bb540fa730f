"""``until_done``, ``Runner`` and ``Report``: running a plan until every sample is done."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import hawk

from . import backend as backends
from .bindings import bind, check_max_steps, check_steps_per_launch
from .plan import Plan, deploy

__all__ = ["Runner", "Report", "until_done", "simulate"]


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
        threads: host threads used (0 where the device computes, a GPU).
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
        how = f"{self.mode}, {self.threads} threads" if self.threads else self.mode
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
        self.backend = backends.backend_for(self.device)
        self.max_steps = max_steps
        self.fixed_steps_per_launch = steps_per_launch
        self.steps = 0
        self.launches = 0
        self.live: int | None = None  # unknown until the first launch
        # The backend decides what happens now and what on the first run: a GPU compiles and
        # loads the kernel here, so that run()'s build_s is the cost of recording the graph
        # (nothing may load while a graph is being recorded); the CPU compiles on first run.
        self._loop = self.backend.loop(plan.kernel.specialize(bound.dtypes), bound,
                                       steps_per_launch, eager=eager, fmad=plan.fmad)

    @property
    def n(self) -> int:
        return self.bound.n

    @property
    def steps_per_launch(self) -> int:
        """The launch size the next launch uses (the backend's schedule, or the fixed one)."""
        return self._loop.steps_per_launch

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
            if not self._loop.sees_launches:
                raise ValueError(f"checkpoint_every needs a loop whose launches the host sees; "
                                 f"on {self.device} the whole loop runs on the device, so call "
                                 "runner.checkpoint(path) between run() calls")
        start = time.perf_counter()
        build_s = self._loop.build()
        launches0, steps0 = self.launches, self.steps
        last_checkpoint = time.perf_counter()
        with _progress_bar(self, progress) as bar, _polling(bar, self._loop, self.n):

            def after_launch():
                nonlocal last_checkpoint
                if bar is not None:
                    bar.update(self.n - self.live - bar.n)
                if checkpoint_every is not None and \
                        time.perf_counter() - last_checkpoint >= checkpoint_every:
                    self.checkpoint(checkpoint_path)
                    last_checkpoint = time.perf_counter()

            self._loop.run(self, after_launch)
        report = self._report(build_s, launches0, steps0, start)
        if checkpoint_path is not None:
            self.checkpoint(checkpoint_path)
        return report

    def record(self, launches: int, taken: int, live: int) -> None:
        """Add ``launches`` launches in which the slowest sample took ``taken`` steps, after
        which ``live`` samples are left (what a backend's loop reports)."""
        self.launches += launches
        self.steps += taken
        self.live = live

    def graph_loop(self):
        """This runner's loop recorded as a graph (made on first use): what
        ``GraphComposer`` records. ``TypeError`` where the backend records no graphs."""
        graph_loop = getattr(self._loop, "graph_loop", None)
        if graph_loop is None:
            raise TypeError(f"graph_loop(): this runner runs on {self.device}, whose loop is "
                            "not recorded as a graph")
        return graph_loop()

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
        from .checkpoint import load
        from .errors import CheckpointError

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

    def _report(self, build_s: float, launches0: int, steps0: int, start: float) -> Report:
        return Report(
            build_s=build_s,
            launches=self.launches - launches0,
            steps=self.steps - steps0,
            done=self.n - (self.live if self.live is not None else self.n),
            n=self.n,
            truncated=bool(self.live) and self.steps >= self.max_steps,
            wall_s=time.perf_counter() - start,
            device=self.device,
            mode=self._loop.mode,
            threads=self._loop.threads,
            steps_per_launch=self.steps_per_launch,
        )

    def reset(self) -> None:
        """Clear the terminated flags and the step counters; the state arrays are the user's
        to re-initialise."""
        self.backend.clear(self.bound.flags)
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
    from a thread: the graph itself never waits for the host. (A loop whose launches the host
    sees updates the bar after each launch instead.)"""
    if bar is None or loop.sees_launches:
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
