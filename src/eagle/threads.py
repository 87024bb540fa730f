"""The size of the host team: how many threads the CPU backend runs a launch on."""

from __future__ import annotations

import os

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
    value = os.environ.get(ENV_VAR)
    if value:
        try:
            set_num_threads(int(value))
        except ValueError as exc:
            raise ValueError(f"${ENV_VAR}={value!r}: {exc}") from None
