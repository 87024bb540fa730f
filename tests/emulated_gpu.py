"""A GPU emulated on the host, to run eagle's GPU runner end to end without a device.

``EmulatedDriver`` extends the stand-in driver of ``fake_driver``: "device" memory is host
memory, a module is CUDA source compiled by the host C++ compiler (NVRTC is replaced by
returning the source itself), a kernel launch runs every thread in turn as a one-thread block,
and graphs are recorded (explicitly or by stream capture, with forks) and replayed, WHILE nodes
included: their conditions are set through ``cudaGraphSetConditional`` by the kernels
themselves. Everything eagle computes around the kernels (control blocks, counters, reports,
max_steps, reset, capture) therefore runs for real, against kernels that compute what the GPU
computes with ``--fmad=false`` for exact arithmetic.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import subprocess
from pathlib import Path

from fake_driver import OK, FakeDriver, real
from host_cuda import PRELUDE, compiler

_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+'
                     r"(?:__launch_bounds__\(\d+(?:,\s*\d+)?\)\s+)?"
                     r"(\w+)\s*\(([^)]*)\)\s*\{", re.S)
_HOOK = ctypes.CFUNCTYPE(None, ctypes.c_ulonglong, ctypes.c_uint)


def _arity(source: str) -> dict[str, int]:
    return {name: len([p for p in params.split(",") if p.strip()])
            for name, params in _KERNEL.findall(source)}


def _wrappers(source: str) -> str:
    """``host_launch_NAME(void** params, long long threads)`` for every kernel in ``source``."""
    out = []
    for name, params in _KERNEL.findall(source):
        types = []
        for param in (p.strip() for p in params.split(",") if p.strip()):
            text = param.replace("__restrict__", " ")
            types.append(" ".join(text.split()[:-1]).replace(" *", "*"))
        arguments = ", ".join(f"*({t}*)p[{k}]" for k, t in enumerate(types))
        out.append(f'extern "C" void host_launch_{name}(void** p, long long threads) {{\n'
                   f"    for (long long g = 0; g < threads; ++g) {{ blockIdx.x = g; "
                   f"{name}({arguments}); }}\n}}\n")
    return "".join(out)


class EmulatedDriver(FakeDriver):
    def __init__(self, folder: Path):
        super().__init__()
        self.folder = folder
        self.libraries: dict[int, ctypes.CDLL] = {}
        self.kernels: dict[int, tuple[ctypes.CDLL, str]] = {}
        self.graphs: dict[int, list] = {}
        self.capture_graph: dict[int, int] = {}  # stream -> graph it records into
        self.event_graph: dict[int, int] = {}
        self.conditions: dict[int, list] = {}  # handle -> [value, default, owner graph]
        self.executables: dict[int, int] = {}
        self.arity: dict = {}
        self._keep = []
        self._hook = _HOOK(self._set_condition)

    def _set_condition(self, handle, value):
        self.conditions[int(handle)][0] = int(value)

    # modules: CUDA source in, host code out
    def _cuModuleLoadData(self, image):
        source = ctypes.string_at(int(image)).decode()
        text = (PRELUDE + source + "\nextern \"C\" { void (*eagle_condition_hook)(unsigned long "
                "long, unsigned int) = 0; }\nextern \"C\" void cudaGraphSetConditional(unsigned "
                "long long h, unsigned int v) { eagle_condition_hook(h, v); }\n"
                + _wrappers(source))
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        library = self.folder / f"emulated_{digest}.so"
        if not library.exists():
            path = library.with_suffix(".cpp")
            path.write_text(text)
            done = subprocess.run([compiler(), "-std=c++17", "-O1", "-ffp-contract=off",
                                   "-shared", "-fPIC", "-w", str(path), "-o", str(library)],
                                  capture_output=True, text=True)
            if done.returncode:
                raise AssertionError(f"host compile failed:\n{done.stderr[:3000]}")
        lib = ctypes.CDLL(str(library))
        ctypes.c_void_p.in_dll(lib, "eagle_condition_hook").value = ctypes.cast(
            self._hook, ctypes.c_void_p).value
        handle = self._new()
        self.libraries[handle] = lib
        self.arity.update({(handle, name): count for name, count in _arity(source).items()})
        return OK, real.CUmodule(handle)

    def _cuModuleGetFunction(self, module, name):
        handle = self._new()
        self.kernels[handle] = (self.libraries[int(module)], bytes(name).decode())
        self.functions[handle] = bytes(name)
        self.arity[handle] = self.arity[(int(module), bytes(name).decode())]
        return OK, real.CUfunction(handle)

    def _snapshot(self, function: int, params: int) -> int:
        """Copy a launch's argument values, as the driver does when it records a node (every
        eagle argument is at most 8 bytes); return the new ``void**``."""
        count = self.arity[function]
        pointers = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        values = (ctypes.c_uint64 * count)(*[ctypes.c_uint64.from_address(pointers[k]).value
                                             for k in range(count)])
        array = (ctypes.c_void_p * count)(*[ctypes.addressof(values) + 8 * k
                                            for k in range(count)])
        self._keep += [values, array]
        return ctypes.addressof(array)

    def _run_kernel(self, function: int, params: int, threads: int) -> None:
        lib, name = self.kernels[function]
        getattr(lib, f"host_launch_{name}")(ctypes.c_void_p(params), ctypes.c_longlong(threads))

    def _cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.launches += 1
        threads = int(gx) * int(bx)
        graph = self.capture_graph.get(int(stream))
        if graph is not None:
            self.capturing[int(stream)] = self.capturing.get(int(stream), 0) + 1
            self.graphs[graph].append(("kernel", int(function),
                                       self._snapshot(int(function), int(params)), threads))
        else:
            self._run_kernel(int(function), int(params), threads)
        return (OK,)

    # graphs
    def _cuGraphCreate(self, flags):
        handle = self._new()
        self.graphs[handle] = []
        return OK, real.CUgraph(handle)

    def _cuGraphAddKernelNode(self, graph, dependencies, count, params):
        function = int(params.func)
        self.graphs[int(graph)].append(("kernel", function,
                                        self._snapshot(function, int(params.kernelParams)),
                                        int(params.gridDimX) * int(params.blockDimX)))
        return OK, real.CUgraphNode(self._new())

    def _cuGraphConditionalHandleCreate(self, graph, context, default, flags):
        handle = self._new()
        self.conditions[handle] = [int(default), int(default), int(graph)]
        return OK, real.CUgraphConditionalHandle(handle)

    def _cuGraphAddNode(self, graph, dependencies, data, count, params):
        body = self._new()
        self.graphs[body] = []
        out = (ctypes.c_void_p * 1)(body)  # where the driver would write phGraph_out
        self._keep.append(out)
        ctypes.cast(params.conditional.getPtr() + 16,
                    ctypes.POINTER(ctypes.c_void_p))[0] = ctypes.addressof(out)
        self.graphs[int(graph)].append(("while", int(params.conditional.handle), body))
        return OK, real.CUgraphNode(self._new())

    def _cuGraphAddChildGraphNode(self, graph, dependencies, count, child):
        self.graphs[int(graph)].append(("child", int(child)))
        return OK, real.CUgraphNode(self._new())

    def _cuGraphGetNodes(self, graph, count=0):
        return OK, [], len(self.graphs.get(int(graph), []))

    def _cuGraphInstantiate(self, graph, flags):
        handle = self._new()
        self.executables[handle] = int(graph)
        return OK, real.CUgraphExec(handle)

    def _run_graph(self, graph: int) -> None:
        for node in self.graphs[graph]:
            if node[0] == "kernel":
                self._run_kernel(*node[1:])
            elif node[0] == "child":
                self._run_graph(node[1])
            else:
                _, handle, body = node
                guard = 0
                while self.conditions[handle][0]:
                    self._run_graph(body)
                    guard += 1
                    assert guard < 1_000_000, "a WHILE node never ended"

    def _cuGraphLaunch(self, executable, stream):
        self.graph_launches += 1
        self.graph_launch_streams.append(int(stream))
        graph = self.executables[int(executable)]
        for state in self.conditions.values():  # CU_GRAPH_COND_ASSIGN_DEFAULT
            if state[2] in self.graphs and state[2] == graph:
                state[0] = state[1]
        self._run_graph(graph)
        return (OK,)

    # capture, with forks
    def _cuStreamBeginCapture(self, stream, mode):
        super()._cuStreamBeginCapture(stream, mode)
        graph = self._new()
        self.graphs[graph] = []
        self.capture_graph[int(stream)] = graph
        return (OK,)

    def _cuEventRecord(self, event, stream):
        if int(stream) in self.capture_graph:
            self.event_graph[int(event)] = self.capture_graph[int(stream)]
        return super()._cuEventRecord(event, stream)

    def _cuStreamWaitEvent(self, stream, event, flags):
        if int(event) in self.event_graph:
            self.capture_graph[int(stream)] = self.event_graph[int(event)]
        return super()._cuStreamWaitEvent(stream, event, flags)

    def _cuStreamGetCaptureInfo(self, stream):
        _, status = self._cuStreamIsCapturing(stream)
        graph = self.capture_graph.get(int(stream), 0)
        return OK, status, 1, real.CUgraph(graph), [], [], 0

    def _cuStreamEndCapture(self, stream):
        graph = self.capture_graph.get(int(stream))
        invalid = int(stream) in self.captures_invalidated
        super()._cuStreamEndCapture(stream)
        self.capture_graph.clear()
        self.event_graph.clear()
        if invalid:
            return real.CUresult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, None
        return OK, real.CUgraph(graph)

    def _cuMemsetD8(self, pointer, value, count):
        ctypes.memset(int(pointer), int(value), int(count))
        return (OK,)
