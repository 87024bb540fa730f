"""The native layer's handles released from other threads than the one that made them, from
Python, against the stand-in libcuda.

A Python object's finaliser runs on whichever thread drops its last reference, so every
``eagle.cuda._native`` handle (stream, event, device buffer, module, launcher, captured graph,
executable graph) must release cleanly from a thread that never touched CUDA, and from several
threads at once. The stand-in counts what is alive (``fakecuda_counter``): after each part
everything made is gone and no release failed (a double free, a release with no context, a
capturing stream destroyed). The C++ side of the same checks is ``native/tests/threads.cpp``
(ctest, run by ``make native``).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from test_native import LIBRARY, NATIVE, ROOT, STANDIN, _env, native  # noqa: F401

KERNELS = NATIVE / "lib" / "libfakecuda_test_kernels.so"  # scale_add, countdown, decrement

_THREADS = """
import ctypes
import gc
import threading

import numpy as np

from eagle.cuda import _native as nat

lib = nat.library()
fake = ctypes.CDLL(STANDIN)
fake.fakecuda_counter.restype = ctypes.c_longlong
LIVE = ("streams", "events", "modules", "graphs", "execs", "allocations", "captures",
        "failed releases")
N, BLOCK = 300, 64
IMAGE = b"EAGLE-HOST-MODULE\\n" + KERNELS.encode() + b"\\0"
TYPES = (ctypes.c_int * 4)(7, 7, 0, 2)  # out*, in*, double a, long long n


def census():
    return {name: fake.fakecuda_counter(name.encode()) for name in LIVE}


def handle(ptr):
    h = nat._Handle.__new__(nat._Handle)
    h._ptr = ptr
    return h


def make(a=1.5):
    \"\"\"One of each handle: a launch of out += a * in captured on a non-blocking stream,
    instantiated and replayed twice on a blocking one.\"\"\"
    capture_stream, replay = nat.Stream(0, non_blocking=True), nat.Stream(0)
    event = nat.Event(0).record(capture_stream)
    replay.wait(event)
    source, out = nat.Buffer(8 * N), nat.Buffer(8 * N)
    source.upload(np.ones(N))
    out.upload(np.zeros(N))
    ptr = ctypes.c_void_p()
    nat.check(lib.eagle_module_load(0, IMAGE, len(IMAGE), ctypes.byref(ptr)))
    module = nat._Module(ptr)
    ptr = ctypes.c_void_p()
    nat.check(lib.eagle_launcher_create(module._ptr, b"scale_add", TYPES, 4, BLOCK,
                                        ctypes.byref(ptr)))
    launcher = handle(ptr)
    values = (nat.Value * 4)(nat.Value(0, 0.0, out.ptr), nat.Value(0, 0.0, source.ptr),
                             nat.Value(1, a, 0), nat.Value(0, 0.0, N))
    with nat.StreamCapturer(capture_stream) as capture:
        nat.check(lib.eagle_launcher_launch(launcher._ptr, (N + BLOCK - 1) // BLOCK, values, 4,
                                            None))
    executable = capture.graph.instantiate()
    executable.launch(replay, 2)
    replay.synchronize()
    back = np.empty(N)
    out.download(back)
    assert (back == 2 * a).all(), back
    return [capture_stream, replay, event, source, out, module, launcher, capture.graph,
            executable]


def release_on(threads, shares):
    \"\"\"Drop each share of handles on its own thread, all threads at once.\"\"\"
    gate = threading.Barrier(threads)

    def drop(share):
        gate.wait()
        share.clear()

    workers = [threading.Thread(target=drop, args=(share,)) for share in shares]
    del shares[:]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    gc.collect()


make()  # what the layer makes once and keeps (eagle's default stream) is made before counting
nat.current_stream(0)
fake.fakecuda_reset()
start = census()

# 1. made here, released on a thread that never touched CUDA
release_on(1, [make()])
print("one thread:", census() == start, census())

# 2. twelve sets made here, released by six threads at once
sets = [make(1.0 + k) for k in range(12)]
release_on(6, [sets[k] + sets[k + 6] for k in range(6)])
del sets
print("six threads:", census() == start, census())

# 3. eight threads each making, running and releasing their own, while sharing one set whose
# last references they all drop at the same moment
shared = make()
right = []
gate = threading.Barrier(8)


def work(k, copies):
    for _ in range(10):
        right.append(make(k + 1.0) is not None)
    gate.wait()
    copies.clear()


workers = [threading.Thread(target=work, args=(k, list(shared))) for k in range(8)]
del shared
for worker in workers:
    worker.start()
for worker in workers:
    worker.join()
gc.collect()
print("shared by eight:", census() == start and len(right) == 80, census())

# 4. a capture left open (never exited) and dropped on another thread: the thread that began
# it must not go on launching into it, and the dropping thread keeps its own current stream
stream = nat.Stream(0, non_blocking=True)
capture = nat.StreamCapturer(stream).__enter__()
own = []


def drop_capture(box):
    mine = nat.Stream(0, non_blocking=True)
    with mine.as_current():
        box.clear()
        gc.collect()
        own.append(nat.current_stream(0).handle == mine.handle)


box = [capture]
del capture
worker = threading.Thread(target=drop_capture, args=(box,))
worker.start()
worker.join()
print("open capture:", own == [True], nat.current_stream(0).handle != stream.handle)
"""


@pytest.mark.slow
def test_handles_made_on_one_thread_release_on_others(native, tmp_path):  # noqa: F811
    env = {**_env(tmp_path), "EAGLE_CUDA_LIBRARY": str(LIBRARY), "PYTHONPATH": str(ROOT / "src")}
    code = f"STANDIN, KERNELS = {str(STANDIN)!r}, {str(KERNELS)!r}\n" + _THREADS
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = done.stdout.splitlines()
    assert [line.split(" {")[0] for line in lines] == [
        "one thread: True", "six threads: True", "shared by eight: True",
        "open capture: True True"], done.stdout
