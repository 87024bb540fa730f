"""The one atomic operation a CPU launch needs: its threads claim blocks from a shared counter.

Imported only by generated modules (``cpu.emit``), whose object code holds the operation
inline: a cached launch needs no symbol from here.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["claim"]


@intrinsic
def claim(typingctx, address, count):
    """The int64 at ``address`` (a ``voidptr``) before ``count`` is added to it, read and
    written as one atomic operation: each caller gets numbers no other caller gets. Relaxed
    ordering: the numbers are all that is shared; what a block's thread wrote is seen by the
    others once the team has joined."""
    if address != types.voidptr or count != types.int64:
        return None

    def codegen(context, builder, signature, arguments):
        pointer = builder.bitcast(arguments[0], ir.IntType(64).as_pointer())
        return builder.atomic_rmw("add", pointer, arguments[1], "monotonic")

    return types.int64(types.voidptr, types.int64), codegen
