"""The size of the host team: how many threads the CPU backend runs a launch on."""

from __future__ import annotations

import os
import warnings

__all__ = ["set_num_threads", "get_num_threads"]

ENV_VAR = "EAGLE_NUM_THREADS"


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_num_threads = _cpus()


def set_num_threads(k: int) -> None:
    """Run CPU launches on ``k`` threads (1 to the CPUs this process may use)."""
    global _num_threads
    limit = _cpus()
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= limit:
        raise ValueError(f"set_num_threads(k) needs an int from 1 to {limit} (the CPUs this "
                         f"process may use), got {k!r}")
    _num_threads = k


def get_num_threads() -> int:
    """The threads the next CPU launch will use (``$EAGLE_NUM_THREADS`` sets the default)."""
    return _num_threads


def apply_environment() -> None:
    """Take the team size from ``$EAGLE_NUM_THREADS`` (read once, at ``import eagle``). More
    threads than the CPUs this process may use are clamped to that count with one
    ``RuntimeWarning`` (the same environment often moves between machines); a value that is not
    a positive integer raises ``ValueError``."""
    value = os.environ.get(ENV_VAR)
    if not value:
        return
    try:
        k = int(value)
    except ValueError:
        k = 0
    if k < 1:
        raise ValueError(f"${ENV_VAR}={value!r}: expected a positive whole number of threads "
                         f"(1 to {_cpus()}, the CPUs this process may use)")
    limit = _cpus()
    if k > limit:
        warnings.warn(f"${ENV_VAR}={value} is more than the {limit} CPUs this process may use; "
                      f"eagle runs on {limit} threads", RuntimeWarning, stacklevel=2)
        k = limit
    set_num_threads(k)
