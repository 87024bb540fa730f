"""``repeat_while`` on a GPU: the body recorded once, looped by a WHILE node on the device.

The graph is ``set_condition -> WHILE { body (a child graph) -> set_condition }``, where
``set_condition`` is a one-thread kernel that reads ``condition[0]`` from device memory, counts
the iteration and sets the WHILE node's condition to ``condition[0] != 0`` (and the iteration
limit not reached). One graph launch runs the whole loop; the host reads the iteration count
once at the end. The body is captured on a non-blocking stream (another thread's legacy-
default-stream work cannot invalidate the capture) and the loop runs on a blocking one.
"""

from __future__ import annotations

import numpy as np

from .driver import activate, call, device_info, driver, ordinal_of
from .graph import add_kernel_node, add_while_node, condition_handle
from .launcher import Module, pack
from .memory import DeviceBuffer, wait_for_producers
from .nvrtc import compile_source
from .repeat import CONDITION_TYPES, condition_flag, record_body
from .stream import Stream, StreamCapturer

__all__ = ["repeat_while_on_gpu", "condition_module", "CONDITION_SOURCE"]

CONDITION_SOURCE = """
typedef unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void CUDARTAPI cudaGraphSetConditional(
    cudaGraphConditionalHandle handle, unsigned int value);
""" + "".join(f"""
extern "C" __global__ void eagle_set_condition_{kind}{size}(
    cudaGraphConditionalHandle handle, const {ctype}* condition, long long* iterations,
    long long limit, int counts)
{{
    if (counts) *iterations += 1;
    const bool again = condition[0] != 0 && (limit < 0 || *iterations < limit);
    cudaGraphSetConditional(handle, again ? 1u : 0u);
}}
""" for (kind, size), (_, ctype) in CONDITION_TYPES.items())

def condition_module(ordinal: int, compiler=compile_source) -> Module:
    """The condition kernels compiled (by ``compiler``) and loaded on device ``ordinal``."""
    return Module(compiler(CONDITION_SOURCE, device_info(ordinal).arch,
                           name="eagle_repeat_while.cu"), ordinal)


def repeat_while_on_gpu(condition, body, max_iterations: int | None, device: str,
                        module: Module) -> int:
    """See ``eagle.repeat_while``; ``condition`` is a one-element integer GPU array and
    ``module`` the loaded ``CONDITION_SOURCE``."""
    ordinal = ordinal_of(device)
    context = activate(ordinal)
    flag, key = condition_flag(condition, device)
    function = module.function(f"eagle_set_condition_{key[0]}{key[1]}")
    body_graph = record_body(body, StreamCapturer, Stream(ordinal, non_blocking=True))
    d = driver()
    counter = DeviceBuffer(8, ordinal)
    counter.upload(np.zeros(1, np.int64))
    limit = -1 if max_iterations is None else max_iterations
    graph = call(d.cuGraphCreate, 0)
    try:
        handle = condition_handle(graph, context, default=0)
        arguments = ["u64", "ptr", "ptr", "long long", "int"]
        first = pack(arguments, [int(handle), flag.ptr, counter.ptr, limit, 0])
        start = add_kernel_node(graph, function, 1, 1, first)
        _, _, loop_body = add_while_node(graph, context, [start], handle)
        child = call(d.cuGraphAddChildGraphNode, loop_body, None, 0, body_graph.handle)
        again = pack(arguments, [int(handle), flag.ptr, counter.ptr, limit, 1])
        add_kernel_node(loop_body, function, 1, 1, again, [child])
        executable = call(d.cuGraphInstantiate, graph, 0)
        stream = Stream(ordinal)  # blocking: ordered with the user's default-stream work
        wait_for_producers(stream, [flag])
        try:
            call(d.cuGraphLaunch, executable, stream.handle)
            result = counter.download(np.zeros(1, np.int64), stream)
            stream.synchronize()
        finally:
            activate(ordinal)
            d.cuGraphExecDestroy(executable)
    finally:
        d.cuGraphDestroy(graph)
    return int(result[0])
