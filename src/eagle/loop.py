"""``repeat_while``: the one loop primitive beneath ``until_done``."""

from __future__ import annotations

from . import backend as backends

__all__ = ["repeat_while"]


def repeat_while(condition, body, *, max_iterations: int | None = None) -> int:
    """Run ``body()`` again and again while ``condition[0]`` is nonzero; return the iterations.

    It means exactly this Python loop::

        iterations = 0
        while condition[0] and (max_iterations is None or iterations < max_iterations):
            body()          # launches work that updates condition[0]
            iterations += 1
        return iterations

    ``condition`` is a one-element integer array that ``body``'s launches update. With a NumPy
    ``condition`` the loop above is what runs (a host loop; ``until_done`` on the CPU is built
    on it). With a GPU ``condition`` (CuPy, PyTorch, ``__cuda_array_interface__``) ``body`` is
    called once, its launches on eagle's current stream are recorded, and the loop runs as one
    CUDA graph whose WHILE node reads ``condition`` on the device: no iteration returns to the
    host. So on a GPU ``body`` must only issue launches (``Launcher``, ``LoadedVector``): Python
    side effects happen once, and nothing in it may allocate or synchronise.

    Args:
        condition: a one-element integer array (NumPy, or a GPU array) read before each
            iteration; its device chooses the backend.
        body: a callable taking no arguments; anything else is a ``TypeError``.
        max_iterations: keyword only; the most iterations, a non-negative int, or None
            (default) for no bound; a bool or negative value is a ``ValueError``.
    """
    if not callable(body):
        raise TypeError(f"repeat_while(condition, body): body must be callable, got "
                        f"{type(body).__name__}")
    if max_iterations is not None and (isinstance(max_iterations, bool)
                                       or not isinstance(max_iterations, int)
                                       or max_iterations < 0):  # fmt: skip
        raise ValueError(f"max_iterations must be a non-negative int or None, got "
                         f"{max_iterations!r}")
    device = backends.device_of(condition)
    return backends.backend_for(device).repeat_while(condition, body, max_iterations, device)
