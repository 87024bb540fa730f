"""Ctrl-C at random moments of ``run()``: a child process for ``test_interrupt_stress.py``.

Usage: ``python interrupt_stress.py MODE TRIALS SEED FOLDER``, where MODE names what each run
does (``progress``, ``checkpoint``, ``both``) and who sends the SIGINTs: ``self-`` + MODE, a
timer thread of this process at a random moment of each trial (1 to 3 signals a trial);
``parent-`` + MODE, the test that started this process, whenever it likes.

Each trial runs a fresh runner over fresh arrays and calls ``run()`` again after every
KeyboardInterrupt until a run returns; the arrays must then equal, bit for bit, those of a run
nobody interrupted; with a progress bar, another thread then draws a bar of its own (it waits
forever for a tqdm lock a KeyboardInterrupt left held). The last line printed is
``trials=T interrupts=I mismatches=M``. A run that never returns is the caller's watchdog's to
catch; this process prints the stacks of its threads first (``faulthandler``).
"""

from __future__ import annotations

import faulthandler
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import eagle  # noqa: E402
from kernels import spread_oscillator  # noqa: E402

N = 2_000
MAX_STEPS = 400
STEPS_PER_LAUNCH = 3


def fresh_bindings() -> dict:
    dt = 1e-3
    return dict(x=np.ones(N), v=np.zeros(N), t=np.zeros(N), omega=np.linspace(1.0, 3.0, N),
                t_end=dt * (1 + 299 * np.arange(N) / (N - 1)), dt=dt)


def run_options(mode: str, folder: Path) -> dict:
    options = {}
    if mode in ("progress", "both"):
        options["progress"] = True
    if mode in ("checkpoint", "both"):
        options.update(checkpoint_every=0.003, checkpoint_path=folder / "run.npz")
    return options


class BarDrawer(threading.Thread):
    """Draws and closes a progress bar from its own thread when asked, as eagle's GPU progress
    poller and a user's own bars do: it never finishes if a lock of tqdm's was left held. The
    main thread asks and waits by plain attributes and ``time.sleep``: starting or joining a
    thread takes locks of Python's own, and the signals this harness sends could leave one of
    those held."""

    def __init__(self):
        super().__init__(daemon=True)
        self.asked = self.drawn = 0

    def draw(self) -> None:
        self.asked += 1
        while self.drawn != self.asked:
            time.sleep(0.0005)

    def run(self) -> None:
        from tqdm import tqdm

        while True:
            time.sleep(0.0005)
            if self.drawn != self.asked:
                with tqdm(total=1, desc="another thread", leave=False) as bar:
                    bar.update(1)
                self.drawn = self.asked


class Sender(threading.Thread):
    """Sends SIGINT to this process at the moments last given to ``aim``. The main thread
    talks to it by assigning one attribute: a harness whose main thread took a lock (a
    ``threading.Timer``'s ``cancel`` does) could be left holding it by the very interrupts it
    sends, and hang itself."""

    def __init__(self):
        super().__init__(daemon=True)
        self.target: tuple[int, tuple[float, ...]] = (0, ())  # (generation, moments)

    def aim(self, moments) -> None:
        self.target = (self.target[0] + 1, tuple(sorted(moments)))

    def run(self) -> None:
        generation, sent = 0, 0
        while True:
            time.sleep(0.0002)
            aimed, moments = self.target
            if aimed != generation:
                generation, sent = aimed, 0
            if sent < len(moments) and time.perf_counter() >= moments[sent]:
                os.kill(os.getpid(), signal.SIGINT)
                sent += 1


def main(mode: str, trials: int, seed: int, folder: Path) -> None:
    sender, mode = mode.split("-", 1)
    plan = eagle.deploy(spread_oscillator, device="cpu")
    options = run_options(mode, folder)
    expected = fresh_bindings()
    eagle.until_done(plan, max_steps=MAX_STEPS, steps_per_launch=STEPS_PER_LAUNCH,
                     **expected).run()
    start = time.perf_counter()
    eagle.until_done(plan, max_steps=MAX_STEPS, steps_per_launch=STEPS_PER_LAUNCH,
                     **fresh_bindings()).run(**options)
    span = 1.2 * (time.perf_counter() - start)  # a signal may land anywhere in a run, or after
    rng = random.Random(seed)
    count = dict(trials=0, interrupts=0, mismatches=0)

    sender_thread = Sender() if sender == "self" else None
    drawer = BarDrawer() if "progress" in options else None
    for thread in (sender_thread, drawer):
        if thread is not None:
            thread.start()

    def trial():
        bindings = fresh_bindings()
        runner = eagle.until_done(plan, max_steps=MAX_STEPS, steps_per_launch=STEPS_PER_LAUNCH,
                                  **bindings)
        if sender_thread is not None:
            now = time.perf_counter()
            sender_thread.aim([now + rng.uniform(0.0, span) for _ in range(rng.randint(1, 3))])
        until_it_returns(lambda: runner.run(**options))
        if sender_thread is not None:
            sender_thread.aim([])  # those that have not been sent by the end of the run
        time.sleep(0.002)  # a signal on its way lands here, and the run is asked again
        until_it_returns(lambda: runner.run(**options))
        same = all(np.array_equal(bindings[k], expected[k]) for k in ("x", "v", "t"))
        count["mismatches"] += not same
        if drawer is not None:
            drawer.draw()
        count["trials"] += 1

    def until_it_returns(call):
        while True:
            try:
                return call()
            except KeyboardInterrupt:
                count["interrupts"] += 1

    def trials_left():
        while count["trials"] < trials:
            try:
                trial()
            except KeyboardInterrupt:  # landed in this harness's own code: do it again
                count["interrupts"] += 1

    # tqdm's monitor thread wakes every 10 s to take the bars' lock: in a real run shown with
    # a bar that is often; here runs last milliseconds, so it wakes every few.
    from tqdm import tqdm

    tqdm.monitor_interval = 0.005
    signal.signal(signal.SIGINT, signal.default_int_handler)
    print(f"ready span={span:.4f}", flush=True)
    # The trials, then SIGINT ignored (a signal still pending then is dropped: Python runs the
    # handler in force when it gets to it; and ignored at the C level, the parent's signals
    # cannot kill the interpreter while it exits), in one retried block of this frame: Python
    # raises a KeyboardInterrupt on entering a function and after a call returns, so a
    # helper's entry or return is a moment outside any try (the CI's parent-sent run once lost
    # its child at the entry of the helper that ignored SIGINT). What is left outside a try is
    # this loop's back edge after an interrupt was counted: two signals microseconds apart.
    phase = "trials"
    while phase != "done":
        try:
            if phase == "trials":
                until_it_returns(trials_left)
                phase = "switch"
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            phase = "done"
        except KeyboardInterrupt:
            count["interrupts"] += 1
    print(" ".join(f"{k}={v}" for k, v in count.items()), flush=True)


if __name__ == "__main__":
    faulthandler.enable()
    faulthandler.dump_traceback_later(float(os.environ.get("STRESS_WATCHDOG_S", "600")),
                                      exit=True)
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
