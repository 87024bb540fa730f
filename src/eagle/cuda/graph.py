"""CUDA graphs: an owned ``Graph``, its instantiated ``GraphExec``, and kernel nodes.

``add_kernel_node`` and ``add_while_node`` build a graph explicitly (no stream capture), which is
how ``until_done`` records its loop: a WHILE node whose body is the step kernel followed by the
decide kernel that sets the node's condition on the device.
"""

from __future__ import annotations

from .driver import activate, call, driver, release

__all__ = ["Graph", "GraphExec", "add_kernel_node", "add_while_node", "condition_handle"]


class Graph:
    """A CUDA graph eagle owns (destroyed with the object).

    Args:
        handle: a ``CUgraph`` handle to take ownership of (a captured graph), or None
            (default) to create an empty graph.
    """

    def __init__(self, handle=None):
        d = driver()
        self.handle = call(d.cuGraphCreate, 0) if handle is None else handle

    def instantiate(self, ordinal: int = 0) -> GraphExec:
        """The executable graph on device ``ordinal`` (default 0), ready to ``launch``."""
        activate(ordinal)
        return GraphExec(call(driver().cuGraphInstantiate, self.handle, 0), ordinal)

    def node_count(self) -> int:
        return int(call(driver().cuGraphGetNodes, self.handle, 0)[1])

    def debug_dot(self, path: str) -> None:
        """Write the graph as Graphviz dot (``cuGraphDebugDotPrint``, verbose) to the file
        ``path`` (a str or path)."""
        call(driver().cuGraphDebugDotPrint, self.handle, str(path).encode(), 1)

    def __del__(self):
        handle, self.handle = getattr(self, "handle", None), None
        release("cuGraphDestroy", handle, None)


class GraphExec:
    """An instantiated graph on device ``ordinal``: ``launch(stream)`` replays it (from any
    thread: the device's context is made current first). Made by ``Graph.instantiate``.

    Args:
        handle: the ``CUgraphExec`` handle, owned by this object from now on.
        ordinal: the device's index (default 0).
    """

    def __init__(self, handle, ordinal: int = 0):
        self.handle = handle
        self.ordinal = ordinal

    def upload(self, stream) -> None:
        """Upload the graph's work to the device on ``stream`` (a ``Stream``) ahead of the
        first launch, so that launch does not pay for it."""
        activate(self.ordinal)
        call(driver().cuGraphUpload, self.handle, stream.handle)

    def launch(self, stream) -> None:
        """Replay the whole graph once on ``stream`` (a ``Stream``); returns without waiting
        for it (``stream.synchronize()`` waits)."""
        activate(self.ordinal)
        call(driver().cuGraphLaunch, self.handle, stream.handle)

    def __del__(self):
        handle, self.handle = getattr(self, "handle", None), None
        release("cuGraphExecDestroy", handle, getattr(self, "ordinal", 0))


def add_kernel_node(graph_handle, function, grid: int, block: int, arguments,
                    dependencies=()):
    """Add a launch of ``function`` with packed ``arguments`` (``KernelArguments``)."""
    d = driver()
    params = d.CUDA_KERNEL_NODE_PARAMS()
    params.func = function
    params.gridDimX, params.gridDimY, params.gridDimZ = grid, 1, 1
    params.blockDimX, params.blockDimY, params.blockDimZ = block, 1, 1
    params.sharedMemBytes = 0
    params.kernelParams = arguments.address
    params.extra = 0
    deps = list(dependencies)
    return call(d.cuGraphAddKernelNode, graph_handle, deps or None, len(deps), params)


def condition_handle(graph_handle, context, default: int = 1):
    """A conditional handle of ``graph_handle``, reset to ``default`` at every launch."""
    d = driver()
    return call(d.cuGraphConditionalHandleCreate, graph_handle, context, default,
                d.CU_GRAPH_COND_ASSIGN_DEFAULT)


def add_while_node(graph_handle, context, dependencies=(), handle=None):
    """Add a WHILE node on ``handle`` (default: a new one, condition 1 at every launch of the
    graph); return (node, handle, body graph handle)."""
    d = driver()
    if handle is None:
        handle = condition_handle(graph_handle, context)
    params = d.CUgraphNodeParams()
    params.type = d.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
    params.conditional.handle = handle
    params.conditional.type = d.CUgraphConditionalNodeType.CU_GRAPH_COND_TYPE_WHILE
    params.conditional.size = 1
    params.conditional.ctx = context
    deps = list(dependencies)
    node = call(d.cuGraphAddNode, graph_handle, deps or None, None, len(deps), params)
    return node, handle, params.conditional.phGraph_out[0]
