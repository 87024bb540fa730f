"""The host team: the threads a CPU launch runs on.

A launch is one compiled, GIL-free function ``run_blocks`` that advances blocks of samples,
claiming them one at a time from a counter the launch's threads share; the team calls it once
per thread (the calling thread is one of them) and combines what each returns. eagle keeps its
own team rather than a compiler's parallel loop: when this backend emitted Numba source, it
compiled 2-3x faster without Numba's ``parallel=True`` pass, and several runners may launch from
several Python threads at once (Numba's default threading layer aborted the process when two
threads entered a parallel region together); the LLVM IR emitted now is one thread's code.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor, wait

__all__ = ["HostTeam", "team"]


class HostTeam:
    """A pool of worker threads shared by every CPU launch in the process."""

    def __init__(self):
        self._pool: ThreadPoolExecutor | None = None
        self._workers = 0
        self._lock = threading.Lock()

    def _pool_of(self, workers: int) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None or self._workers < workers:
                # The old pool finishes what it was given; new launches go to the larger one.
                old, self._pool = self._pool, ThreadPoolExecutor(
                    max_workers=workers, thread_name_prefix="eagle-host")
                self._workers = workers
                if old is not None:
                    old.shutdown(wait=False)
            return self._pool

    def run(self, function, nthreads: int, nblocks: int, arguments: tuple) -> tuple[int, int]:
        """Call ``function(*arguments)`` on each of ``min(nthreads, nblocks)`` threads; return
        the summed live count and the largest step count."""
        nthreads = max(1, min(nthreads, nblocks))
        if nthreads == 1:
            return function(*arguments)
        pool = self._pool_of(nthreads - 1)
        futures = [pool.submit(function, *arguments) for _ in range(1, nthreads)]
        try:
            live, steps = function(*arguments)
        finally:
            wait(futures)  # every thread is done with the arrays before anything is reported
        for future in futures:
            thread_live, thread_steps = future.result()
            live += thread_live
            steps = max(steps, thread_steps)
        return live, steps


team = HostTeam()
