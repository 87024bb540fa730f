"""What ``repeat_while`` on a GPU does the same way in both layers (``loop.py`` over
``cuda.bindings``, ``_native.py`` over the C++ layer): the condition array checked, and the body
recorded once, on a non-blocking stream (another thread's legacy-default-stream work cannot
invalidate the capture).
"""

from __future__ import annotations

from ..errors import CaptureError

__all__ = ["CONDITION_TYPES", "condition_flag", "record_body"]

#: the condition arrays a loop reads, by NumPy (kind, itemsize): (the C++ layer's dtype name,
#: the C type of ``loop.CONDITION_SOURCE``'s kernel for it)
CONDITION_TYPES = {("b", 1): ("bool", "bool"), ("i", 1): ("int8", "signed char"),
                   ("u", 1): ("uint8", "unsigned char"), ("i", 4): ("int32", "int"),
                   ("u", 4): ("uint32", "unsigned int"), ("i", 8): ("int64", "long long"),
                   ("u", 8): ("uint64", "unsigned long long")}  # fmt: skip


def condition_flag(condition, device: str):
    """``condition`` as a ``DeviceArray`` and its (kind, itemsize) key in ``CONDITION_TYPES``;
    ``TypeError`` unless it is a one-element integer or bool array."""
    from .memory import as_device_array

    flag = as_device_array(condition, device)
    key = (flag.dtype.kind, flag.dtype.itemsize)
    if flag.shape not in ((1,), ()) or key not in CONDITION_TYPES:
        raise TypeError("repeat_while(condition, body): condition must be a one-element integer "
                        f"or bool array, got shape {flag.shape} dtype {flag.dtype}")
    return flag, key


def record_body(body, capturer, stream):
    """``body()`` recorded once by ``capturer(stream)`` (either layer's ``StreamCapturer``);
    its graph, or ``CaptureError`` naming what the body raised."""
    with capturer(stream) as capture:
        try:
            body()
        except Exception as exc:
            raise CaptureError(f"repeat_while's body failed while being recorded: "
                               f"{type(exc).__name__}: {exc}") from exc
    return capture.graph
