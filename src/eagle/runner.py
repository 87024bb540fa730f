"""``until_done``, ``Runner`` and ``Report``: running a plan until every sample is done.

A runner is safe to share between threads: it runs one loop at a time (a second ``run()``
raises ``RunnerBusy``), and ``checkpoint()`` from another thread waits for the next launch
boundary and is written there by the running thread, so a checkpoint is never torn. Runs that
end with samples still running say so (``TruncationWarning``; not for a kernel without
``Terminated``, which can only end at ``max_steps``), and ``check_finite=True`` stops
at the first launch that left a NaN or infinity in a live sample.
"""

from __future__ import annotations

import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import hawk
from hawk.ir import Role

from . import backend as backends
from .bindings import bind, check_max_steps, check_steps_per_launch
from .errors import (
    BindingError,
    CheckpointError,
    NonFiniteState,
    RunnerBusy,
    TruncationWarning,
)
from .interrupts import deferred_interrupts
from .plan import Plan, deploy
from .progress import progress_bar

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
        truncated: ``max_steps`` was reached with samples still running (after any run
            that reached ``max_steps`` of a kernel without ``Terminated``, whose samples
            never finish; that alone gives no ``TruncationWarning``).
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
        state = f"{self.done}/{self.n} done" + (" (truncated at max_steps)" if self.truncated
                                                 else "")
        how = f"{self.mode}, {counted(self.threads, 'thread')}" if self.threads else self.mode
        return (f"{state} after {counted(self.steps, 'step')} in "
                f"{counted(self.launches, 'launch', 'launches')} on {self.device} "
                f"({how}): {self.wall_s * 1e3:.2f} ms, build {self.build_s * 1e3:.2f} ms")


def counted(k: int, one: str, many: str | None = None) -> str:
    """``k`` things in words: ``1 launch``, ``6 launches`` (``many``: default ``one + "s"``)."""
    return f"{k} {one if k == 1 else many or one + 's'}"


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
        # Who holds the runner: None, or (what, thread) with what "run", "checkpoint" or
        # "reset"; checkpoint requests from other threads wait in _snapshots for a boundary.
        self._guard = threading.Condition()
        self._holder: tuple[str, threading.Thread] | None = None
        self._snapshots: list[_Snapshot] = []
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
        if stream is not None:  # a loop that runs on device streams offers use_stream
            use_stream = getattr(self._loop, "use_stream", None)
            if use_stream is None:
                raise ValueError(f"until_done(stream=...): the runner runs on {self.device}, "
                                 "which has no CUDA streams; pass GPU arrays or drop stream=")
            use_stream(stream)

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
        _warn_if_truncated(self, report, stacklevel=3)
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
            self._acquire("run")
            at_boundary = True  # the state is at a launch boundary (nothing is mid-launch)
            try:
                start = time.perf_counter()
                watch = getattr(self._loop, "watch", None)
                if watch is not None:  # a loop whose device writes progress only when asked
                    watch(progress)
                build_s = self._loop.build()
                interrupts.check()  # a Ctrl-C during the compile: no launch has begun
                launches0, steps0 = self.launches, self.steps
                last_checkpoint = time.perf_counter()
                finite = _FiniteCheck(self) if self.check_finite else None
                with _progress_bar(self, progress) as bar, _polling(bar, self._loop, self.n):

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
                        if self._snapshots:
                            self._serve_snapshots()
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
                self._release(at_boundary)

    def _acquire(self, what: str) -> None:
        """Hold the runner for ``what`` ("run", "reset"); ``RunnerBusy`` while a run holds it;
        wait while a checkpoint or reset does (they are short)."""
        me = threading.current_thread()
        with self._guard:
            while self._holder is not None and self._holder[0] != "run":
                self._guard.wait()
            if self._holder is not None:
                thread = self._holder[1]
                where = ("in this same thread (from inside its own run)" if thread is me
                         else f"in thread {thread.name!r}")
                raise RunnerBusy(f"{what}(): {self!r} is already running {where}; one runner "
                                 "runs one loop at a time: wait for that run() to return, or "
                                 "give each thread its own runner over its own arrays")
            self._holder = (what, me)

    def _release(self, consistent: bool = True) -> None:
        """Let go of the runner, first writing the checkpoints other threads asked for
        meanwhile (or failing them where the state is not at a launch boundary)."""
        try:
            while True:
                with self._guard:
                    if not self._snapshots:
                        break
                self._serve_snapshots(None if consistent else CheckpointError(
                    f"{self!r}: the run stopped in the middle of a launch, so there is no "
                    "consistent state to checkpoint"))
        finally:
            with self._guard:
                self._holder = None
                self._guard.notify_all()

    def _serve_snapshots(self, error: BaseException | None = None) -> None:
        """On the running thread, at a launch boundary: write the requested checkpoints."""
        with self._guard:
            pending, self._snapshots = self._snapshots, []
        for request in pending:
            if error is not None:
                request.finish(error=error)
                continue
            try:
                request.finish(path=self._save(request.path))
            except BaseException as exc:
                request.finish(error=exc)
                if not isinstance(exc, Exception):
                    raise

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
        atomically: a crash while writing leaves the previous checkpoint intact.

        Safe from any thread. While ``run()`` is going on in another thread, the request waits
        for the next launch boundary, where the running thread writes the checkpoint (arrays
        and counters of one and the same step) and then goes on; the call returns once it is
        written. Where the host does not see launches (a GPU, whose loop is one graph launch)
        it raises ``eagle.RunnerBusy`` instead: checkpoint between ``run()`` calls there.
        """
        with deferred_interrupts():  # never half a checkpoint, never the runner left held
            return self._checkpoint(path)

    def _checkpoint(self, path) -> Path:
        me = threading.current_thread()
        request, held = None, False
        with self._guard:
            while True:
                if self._holder is None:
                    self._holder, held = ("checkpoint", me), True
                    break
                what, thread = self._holder
                if thread is me:  # the running thread itself, between launches
                    break
                if what == "run":
                    if not self._loop.sees_launches:
                        raise RunnerBusy(f"checkpoint(): {self!r} is running in thread "
                                         f"{thread.name!r} on {self.device}, whose whole loop "
                                         "runs on the device with no launch boundary the host "
                                         "sees; checkpoint after run() returns")
                    request = _Snapshot(path)
                    self._snapshots.append(request)
                    break
                self._guard.wait()  # another checkpoint or a reset: wait for it
        if request is not None:
            return request.wait()
        if not held:  # this thread holds the runner already, between two of its launches
            return self._save(path)
        try:
            return self._save(path)
        finally:
            self._release()

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
        from .checkpoint import load, remove_orphans

        remove_orphans(path)  # what killed writes to it left behind
        meta, arrays, flags = load(path)  # every field checked
        if meta["kernel"] != plan.kernel.name:
            raise CheckpointError(f"{path} was made by kernel {meta['kernel']!r}; it cannot "
                                  f"continue {plan.kernel.name!r}")
        params = {p.name: p for p in plan.kernel.params}
        stored = set(arrays) | set(meta["uniforms"]) | set(meta["dtypes"])
        if stored != set(params):
            odd = sorted(stored ^ set(params))[0]
            raise CheckpointError(f"{path} holds parameters {sorted(stored)}, but "
                                  f"{plan.kernel.name!r} has {list(params)} (first difference: "
                                  f"{odd!r})")
        for name, p in params.items():
            if (p.role is Role.TABLE) != (name in meta["tables"]):
                raise CheckpointError(f"{path}: {name!r} is a {p.annotation} of "
                                      f"{plan.kernel.name!r} but the checkpoint holds it as "
                                      f"{'a table' if name in meta['tables'] else 'no table'}")
            if (p.role is Role.PARAM) != (name in meta["uniforms"]):
                raise CheckpointError(f"{path}: {name!r} is a {p.role.value} of "
                                      f"{plan.kernel.name!r} but the checkpoint holds it as "
                                      f"{'a value' if name in meta['uniforms'] else 'an array'}")
        try:
            program = plan.kernel.specialize(meta["dtypes"])
        except (hawk.CompileError, TypeError) as exc:
            raise CheckpointError(f"{path}: field 'dtypes' does not fit {plan.kernel.name!r}: "
                                  f"{exc}") from None
        if meta["digest"] != program.digest():
            raise CheckpointError(f"{path} was made by kernel {meta['kernel']!r} with another "
                                  f"body or dtypes; it cannot continue {plan.kernel.name!r}")
        bindings = {k: np.array(value, dtype) if isinstance(value, list)  # a vector, a matrix
                    else np.dtype(dtype).type(value)
                    for k, (dtype, value) in meta["uniforms"].items()}
        bindings.update(arrays)
        flag_param = plan.kernel.program.terminated_param
        if flag_param is not None:
            bindings[flag_param.name] = flags
        if xp is not None:
            bindings = {k: xp.asarray(v) if isinstance(v, np.ndarray) else v
                        for k, v in bindings.items()}
        try:
            runner = until_done(plan, max_steps=meta["max_steps"],
                                steps_per_launch=meta["steps_per_launch"], seed=meta["seed"],
                                **bindings)
        except BindingError as exc:
            raise CheckpointError(f"{path}: its arrays do not fit {plan.kernel.name!r}: "
                                  f"{exc}") from None
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
        to re-initialise. ``RunnerBusy`` while a ``run()`` is going on."""
        with deferred_interrupts():
            self._acquire("reset")
            try:
                self.backend.clear(self.bound.flags)
                self.steps = 0
                self.launches = 0
                self.live = None
            finally:
                self._release()

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
    _warn_if_truncated(runner, report, stacklevel=3)
    return report


def _warn_if_truncated(runner: Runner, report: Report, stacklevel: int) -> None:
    """``TruncationWarning`` when a run ended at ``max_steps`` with samples still running,
    unless the kernel has no ``Terminated`` parameter: its samples cannot finish earlier, so
    running exactly ``max_steps`` is what it was asked to do (a Monte Carlo payoff evaluated
    once with ``max_steps=1``), not a limit it ran into. ``Report.truncated`` still says so."""
    if not report.truncated or runner.plan.kernel.program.terminated_param is None:
        return
    live = report.n - report.done
    warnings.warn(f"{runner.plan.kernel.name}: {live} of {report.n} samples were still running "
                  f"at max_steps={runner.max_steps}; raise runner.max_steps and run() again to "
                  "continue them (or pass a larger max_steps)", TruncationWarning,
                  stacklevel=stacklevel)


class _Snapshot:
    """A checkpoint another thread asked for while a run holds the runner."""

    def __init__(self, path):
        self.path = path
        self._done = threading.Event()
        self._path: Path | None = None
        self._error: BaseException | None = None

    def finish(self, path: Path | None = None, error: BaseException | None = None) -> None:
        self._path, self._error = path, error
        self._done.set()

    def wait(self) -> Path:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._path


class _FiniteCheck:
    """``check_finite``: the float state arrays (``Mutable``/``Out``) of the samples that were
    live before the last check, looked at for NaN/inf; the first sample (lowest index) and its
    first such parameter named."""

    def __init__(self, runner: Runner):
        self.runner = runner
        self.to_host = runner.backend.to_host
        self.names = [p.name for p in runner.plan.kernel.params
                      if p.role in (Role.MUTABLE, Role.OUT)
                      and runner.bound.arrays[p.name].dtype.kind == "f"]
        self.live = ~np.array(self.to_host(runner.bound.flags), dtype=bool)

    def check(self) -> None:
        runner = self.runner
        first = None
        for name in self.names:
            state = self.to_host(runner.bound.arrays[name])
            bad = ~np.isfinite(state)
            if bad.ndim == 2:
                bad = bad.any(axis=0)
            hits = np.flatnonzero(bad & self.live)
            if hits.size and (first is None or hits[0] < first[0]):
                first = (int(hits[0]), name, state)
        self.live = ~np.array(self.to_host(runner.bound.flags), dtype=bool)
        if first is None:
            return
        index, name, state = first
        value = state[..., index]
        value = float(value) if value.ndim == 0 else next(float(v) for v in value
                                                         if not np.isfinite(v))
        when = (f"after launch {runner.launches} (step {runner.steps}); the arrays and counters "
                f"hold that launch boundary" if runner._loop.sees_launches
                else f"at the end of run() (step {runner.steps}; on {runner.device} the loop is "
                     "checked once, at its end)")
        raise NonFiniteState(f"sample {index}'s {name!r} is {value} {when}: "
                             f"{runner.plan.kernel.name} produced a NaN or infinity in a live "
                             "sample (until_done(..., check_finite=True))", index, name, value)


@contextmanager
def _progress_bar(runner: Runner, enabled: bool):
    if not enabled:
        yield None
        return
    done = runner.n - (runner.live if runner.live is not None else runner.n)
    bar = progress_bar("run(progress=True)", total=runner.n, initial=done, unit="sample",
                       desc=runner.plan.kernel.name)
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
