"""``until_done``, ``simulate`` and ``Runner``: running a plan until every sample is done.

A runner is safe to share between threads: it runs one loop at a time (a second ``run()``
raises ``RunnerBusy``), and ``checkpoint()`` from another thread waits for the next launch
boundary and is written there by the running thread, so a checkpoint is never torn. Runs that
end with samples still running say so (``TruncationWarning``; not for a kernel without
``Terminated``, which can only end at ``max_steps``), and ``check_finite=True`` stops
at the first launch that left a NaN or infinity in a live sample.

This module is the runner and its run loop; the rest is by job: ``eagle.report`` (``Report``,
the truncation warning), ``eagle.hold`` (who holds a runner, checkpoints from other threads),
``eagle.checkpoint`` (the file, and whether it fits a plan), ``eagle.progress`` (the bar and
its poller), ``eagle.finite`` (``check_finite``), ``eagle.interrupts`` (Ctrl-C at launch
boundaries) and ``eagle.backend.DeviceLoop`` (a loop's optional features).
"""

from __future__ import annotations

import time
from pathlib import Path

import hawk

from . import backend as backends
from .bindings import bind, check_max_steps, check_steps_per_launch
from .errors import BindingError, CheckpointError
from .finite import FiniteCheck as _FiniteCheck  # looked up here by the run loop
from .hold import Hold
from .interrupts import deferred_interrupts
from .plan import Plan, deploy
from .progress import polling, run_progress
from .report import Report, warn_if_truncated

__all__ = ["Runner", "Report", "until_done", "simulate"]


class Runner:
    """A plan bound to arrays, ready to run until every sample is done or ``max_steps``.

    The arrays are the user's and are updated in place. The runner keeps the step counter
    (steps taken since construction or ``reset()``) that ``max_steps`` bounds.

    Threads: one runner runs one loop at a time. ``run()`` and ``reset()`` while a ``run()`` is
    going on in another thread raise ``RunnerBusy`` (they do not wait: two loops over the same
    arrays would give wrong results, and waiting would hide that). ``checkpoint()`` is safe from
    any thread: see its docstring.

    Made by ``until_done`` (or ``Runner.restore``), not by hand; the constructor's arguments
    are what ``until_done`` checked and prepared:

    Args:
        plan: the ``Plan`` to run.
        bound: the checked bindings (arrays, numbers, terminated flags, dtypes, device).
        max_steps: the most steps a sample takes, an int >= 1 (``until_done``'s).
        steps_per_launch: a fixed launch size, or None for the backend's schedule.
        eager: the host decides after every launch whether to launch again.
        check_finite: see Attributes.
        stream: the GPU stream to run on, or None for eagle's own.

    Attributes:
        check_finite: after each launch (where the host sees launches; else at the end of
            ``run()``) check the live samples' state for NaN/inf (``until_done``'s keyword).
        max_steps: the bound on the step counter; raise it and ``run()`` again to continue a
            truncated run.
    """

    def __init__(self, plan: Plan, bound, max_steps: int, steps_per_launch: int | None,
                 eager: bool = False, check_finite: bool = False, stream=None):
        self.plan = plan
        self.eager = eager
        self.check_finite = check_finite
        self._hold = Hold(self)  # one loop at a time; checkpoints from other threads
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
        if stream is not None:  # a loop that runs on device streams takes the user's
            if not isinstance(self._loop, backends.DeviceLoop):
                raise ValueError(f"until_done(stream=...): the runner runs on {self.device}, "
                                 "which has no CUDA streams; pass GPU arrays or drop stream=")
            self._loop.use_stream(stream)

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

        A run that ends at ``max_steps`` with samples still running warns
        (``eagle.TruncationWarning``, a ``RuntimeWarning``, saying how many); raise
        ``runner.max_steps`` and ``run()`` again to continue them. A kernel without a
        ``Terminated`` parameter does not warn: its samples cannot finish before
        ``max_steps``, so every run of it ends there (``Report.truncated`` is still True).

        A runner made with ``check_finite=True`` raises ``eagle.NonFiniteState`` naming the
        first sample and parameter whose state became NaN or infinite: after the launch that
        did it where the host sees launches (the CPU; the arrays and counters then hold that
        launch boundary), else at the end of the run (a GPU).

        One ``run()`` at a time: calling it while this runner runs in another thread raises
        ``eagle.RunnerBusy`` naming the runner and that thread, and changes nothing.

        Args:
            progress: show a tqdm bar of samples done (CPU: updated between launches; GPU:
                the device writes its live count to pinned host memory, a host thread reads it).
            checkpoint_every: seconds between checkpoints written to ``checkpoint_path`` at
                launch boundaries (CPU), plus one at the end of the run.
            checkpoint_path: where ``checkpoint_every`` writes (see ``checkpoint()``). Given
                alone, one checkpoint is written at the end of the run.

        Example::

            runner = eagle.until_done(plan, max_steps=10_000, **arrays)
            report = runner.run(progress=True)
            if report.truncated:           # samples still running at max_steps
                runner.max_steps *= 2
                report = runner.run()      # continues them where they stopped
        """
        report = self._run(progress, checkpoint_every, checkpoint_path)
        warn_if_truncated(self, report, stacklevel=3)
        return report

    def _run(self, progress: bool, checkpoint_every: float | None, checkpoint_path) -> Report:
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
        with deferred_interrupts() as interrupts:  # raised at launch boundaries only
            self._hold.acquire("run")
            at_boundary = True  # the state is at a launch boundary (nothing is mid-launch)
            try:
                start = time.perf_counter()
                if isinstance(self._loop, backends.DeviceLoop):
                    self._loop.watch(progress)  # its device writes progress only when asked
                build_s = self._loop.build()
                interrupts.check()  # a Ctrl-C during the compile: no launch has begun
                launches0, steps0 = self.launches, self.steps
                last_checkpoint = time.perf_counter()
                finite = _FiniteCheck(self) if self.check_finite else None
                with run_progress(self, progress) as bar, polling(bar, self._loop, self.n):

                    def after_launch():
                        nonlocal last_checkpoint, at_boundary
                        at_boundary = True
                        if bar is not None:
                            bar.update(self.n - self.live - bar.n)
                        if finite is not None:
                            finite.check()
                        if checkpoint_every is not None and \
                                time.perf_counter() - last_checkpoint >= checkpoint_every:
                            self._save(checkpoint_path)
                            last_checkpoint = time.perf_counter()
                        if self._hold.snapshots:
                            self._hold.serve()
                        at_boundary = False

                    at_boundary = False
                    self._loop.run(self, after_launch)
                    at_boundary = True
                interrupts.check()  # one held while a device ran the whole loop
                if finite is not None and not self._loop.sees_launches:
                    finite.check()
                report = self._report(build_s, launches0, steps0, start)
                if checkpoint_path is not None:
                    self._save(checkpoint_path)
                return report
            except KeyboardInterrupt:
                # a loop the host sees stops at a launch boundary (eagle.interrupts)
                at_boundary = at_boundary or self._loop.sees_launches
                raise
            finally:
                self._hold.release(at_boundary)

    def record(self, launches: int, taken: int, live: int) -> None:
        """Add ``launches`` launches in which the slowest sample took ``taken`` steps, after
        which ``live`` samples are left (what a backend's loop reports)."""
        self.launches += launches
        self.steps += taken
        self.live = live

    def graph_loop(self):
        """This runner's loop recorded as a graph (made on first use): what
        ``GraphComposer`` records. ``TypeError`` where the backend records no graphs."""
        if not isinstance(self._loop, backends.DeviceLoop):
            raise TypeError(f"graph_loop(): this runner runs on {self.device}, whose loop is "
                            "not recorded as a graph")
        return self._loop.graph_loop()

    def sync_from_device(self) -> None:
        """Read the step and launch counters back after a ``GraphComposer`` replayed this
        runner's loop (``run()`` does this itself)."""
        launches, steps, live = self.graph_loop().read_counters()
        self.launches += launches
        self.steps, self.live = steps, live

    def checkpoint(self, path) -> Path:
        """Save the runner's whole state (arrays, flags, counters, plan identity) to ``path``,
        atomically: a crash while writing leaves the previous checkpoint intact.

        Safe from any thread. While ``run()`` is going on in another thread, the request waits
        for the next launch boundary, where the running thread writes the checkpoint (arrays
        and counters of one and the same step) and then goes on; the call returns once it is
        written. Where the host does not see launches (a GPU, whose loop is one graph launch)
        it raises ``eagle.RunnerBusy`` instead: checkpoint between ``run()`` calls there.
        """
        with deferred_interrupts():  # never half a checkpoint, never the runner left held
            return self._hold.checkpoint(path)

    def _save(self, path) -> Path:
        from .checkpoint import save

        return save(self, path)

    @classmethod
    def restore(cls, path, plan: Plan, xp=None) -> Runner:
        """A runner continuing from the checkpoint at ``path``, for the same kernel as
        ``plan``. The arrays are new NumPy arrays (``xp.asarray`` of them when ``xp`` is given,
        e.g. ``cupy``); ``runner.arrays`` holds them. ``CheckpointError`` when the file does
        not fit ``plan`` (another kernel, body, dtypes or parameters). Temporaries that killed
        writes to ``path`` left beside it are removed."""
        from .checkpoint import load_for

        meta, bindings, flags = load_for(path, plan, xp)
        try:
            runner = until_done(plan, max_steps=meta["max_steps"],
                                steps_per_launch=meta["steps_per_launch"], seed=meta["seed"],
                                **bindings)
        except BindingError as exc:
            raise CheckpointError(f"{path}: its arrays do not fit {plan.kernel.name!r}: "
                                  f"{exc}") from None
        if plan.kernel.program.terminated_param is None:  # the flags live in the runner
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
        to re-initialise. ``RunnerBusy`` while a ``run()`` is going on."""
        with deferred_interrupts():
            self._hold.acquire("reset")
            try:
                self.backend.clear(self.bound.flags)
                self.steps = 0
                self.launches = 0
                self.live = None
            finally:
                self._hold.release()

    def __repr__(self) -> str:
        return (f"<eagle.Runner {self.plan.kernel.name} n={self.n} on {self.device}, "
                f"{self.steps}/{self.max_steps} steps>")


def until_done(plan: Plan | hawk.Kernel, /, max_steps: int, steps_per_launch: int | None = None,
               *, eager: bool = False, check_finite: bool = False, stream=None,
               seed: int | None = None,
               **bindings) -> Runner:
    """Bind ``plan``'s kernel to arrays and return a ``Runner`` (nothing runs yet).

    Every binding is checked first (missing, unknown, shape, dtype, device, layout, aliasing,
    complex values, and dtypes the kernel's body cannot use, found by specialising the kernel
    for them); a bad one raises ``TypeError``/``ValueError`` (``eagle.BindingTypeError``/
    ``BindingValueError``) naming the parameter, with no array touched. A kernel is accepted
    in place of a plan and deployed for the arrays' device. The keywords here cannot be
    kernel parameter names (``hawk.kernel.RESERVED_PARAMETER_NAMES``).

    ``eager=True`` makes the host read the live count after every launch and decide whether to
    launch again: the loop a graph replaces, kept for comparison and debugging (on the CPU the
    host decides anyway).

    ``stream`` (GPU): the CUDA stream ``run()`` works on, from any library (a CuPy or PyTorch
    stream, an object with ``__cuda_stream__``, or a raw handle), so the run is ordered after
    the work already queued there and before what comes next; by default eagle's own stream,
    ordered after the streams the arrays' producers declare.

    ``check_finite=True`` makes ``run()`` check the state (``Mutable``/``Out``, float) of the
    samples that were live for NaN/inf: after every launch where the host sees launches (the
    CPU), at the end of ``run()`` where it does not (a GPU), raising ``eagle.NonFiniteState``
    that names the first sample and parameter. Off, it costs nothing.

    ``seed`` (an int in ``[0, 2**64)``) keys the random streams of a kernel that draws
    (``hawk.uniform()``, ``hawk.normal()``, ...): a draw is a pure function of the seed, the
    sample's index, its step number and the draw's place in the body (``hawk.philox``), so the
    same seed gives the same results bit for bit however the run is cut into launches, threads,
    ``run()`` calls or checkpoints. A kernel that draws and gets no seed is a
    ``BindingTypeError``; a kernel that does not draw ignores the seed.

    Args:
        plan: a ``Plan`` from ``eagle.deploy``, or a ``@hawk.kernel`` (deployed for the arrays'
            device). Positional only.
        max_steps: the most steps any sample takes over all of the runner's ``run()`` calls
            (until ``reset()``): an int from 1 to 2**62 - 1; a bool, float or 0 is refused.
        steps_per_launch: steps per launch, an int >= 1 like ``max_steps``; None (default):
            the backend's own schedule (on the CPU it starts small and grows while every live
            sample takes every step of a launch).
        eager: host-decided loop on every device (see above); default False.
        check_finite: check the live samples' state for NaN/inf (see above); default False.
        stream: a GPU stream to run on (see above); refused (``ValueError``) on the CPU.
        seed: the random streams' key, an int in ``[0, 2**64)`` (see above); default None.
        **bindings: one value per kernel parameter, by name: a ``Scalar``/``Mutable``/``Out``
            array of shape ``(n,)`` (``(k, n)`` for a ``VecK``) or a number shared by every
            sample (a read-only ``Scalar`` only), a number for a ``Param``, and optionally a
            ``bool`` array of shape ``(n,)`` for ``Terminated`` (made, all False, when
            omitted). The arrays are the caller's and are updated in place.

    Example::

        runner = eagle.until_done(eagle.deploy(oscillator), max_steps=10_000,
                                  x=np.ones(n), v=np.zeros(n), t=np.zeros(n),
                                  omega=np.linspace(1.0, 3.0, n), t_end=1.0, dt=1e-3)
        report = runner.run()   # x, v and t now hold the final state
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
    bound = bind(plan.kernel, bindings, plan.device, seed=seed)
    return Runner(plan, bound, max_steps, steps_per_launch, bool(eager), bool(check_finite),
                  stream)


def simulate(kernel: hawk.Kernel, /, max_steps: int, device: str | None = None,
             steps_per_launch: int | None = None, *, check_finite: bool = False,
             progress: bool = False, seed: int | None = None, **bindings) -> Report:
    """``deploy`` + ``until_done`` + ``run`` in one call; the arrays are updated in place.
    Warns (``eagle.TruncationWarning``) when ``max_steps`` ends it with samples running, unless
    the kernel has no ``Terminated`` parameter (it can only stop at ``max_steps``).

    Args:
        kernel: a ``@hawk.kernel`` function. Positional only.
        max_steps: the most steps any sample takes, an int >= 1 (as for ``until_done``).
        device: ``"cpu"``, ``"gpu"``, ``"cuda:K"``, or None (default) to follow the arrays
            (as for ``deploy``).
        steps_per_launch: steps per launch, or None for the backend's schedule (as for
            ``until_done``).
        check_finite: raise ``eagle.NonFiniteState`` when a live sample's state becomes NaN
            or infinite (as for ``until_done``); default False.
        progress: show a tqdm bar of samples done, as ``Runner.run(progress=True)`` does.
        seed: the key of the random streams of a kernel that draws, an int in ``[0, 2**64)``
            (see ``until_done``); default None.
        **bindings: the kernel's arguments by parameter name, as for ``until_done``.

    Returns the ``Report`` of the run.

    Example::

        report = eagle.simulate(oscillator, max_steps=10_000, x=np.ones(n), v=np.zeros(n),
                                t=np.zeros(n), omega=np.linspace(1.0, 3.0, n), t_end=1.0,
                                dt=1e-3)
        assert report.done == n and not report.truncated
    """
    runner = until_done(deploy(kernel, device), max_steps=max_steps,
                        steps_per_launch=steps_per_launch, check_finite=check_finite, seed=seed,
                        **bindings)
    report = runner._run(progress, None, None)
    warn_if_truncated(runner, report, stacklevel=3)
    return report
