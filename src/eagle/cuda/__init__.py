"""eagle's CUDA layer over NVIDIA's ``cuda.bindings`` driver API.

``Stream``, ``StreamCapturer``, ``Graph``/``GraphExec``, ``Module`` and ``Launcher`` are the pieces
``until_done`` and ``GraphPipeline`` are built from; ``is_available()`` and ``device_info()`` say
what this machine has. Importing this package needs neither a GPU nor ``cuda.bindings``; using a
device does (``pip install 'eagle-hawk[cuda]'``).
"""

from .driver import DeviceInfo, device_count, device_info, is_available, unavailable_reason
from .graph import Graph, GraphExec
from .launcher import KernelArguments, Launcher, Module
from .memory import DeviceArray, DeviceBuffer
from .stream import Stream, StreamCapturer, current_stream

__all__ = [
    "is_available", "unavailable_reason", "device_count", "device_info", "DeviceInfo",
    "Stream", "StreamCapturer", "current_stream", "Graph", "GraphExec", "Module", "Launcher",
    "KernelArguments", "DeviceArray", "DeviceBuffer",
]  # fmt: skip
