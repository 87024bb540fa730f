"""Bytes a Dask process sends and receives through its TCP comms, for measuring a run.

Dask keeps no per-process byte totals, so ``install()`` wraps the TCP comm's ``write`` (which
returns the bytes it queued) and the reads of message bodies, and keeps two counters. Use it on
every process of a cluster: ``dask scheduler --preload eagle.distributed.traffic`` and
``dask worker --preload eagle.distributed.traffic`` (Dask calls ``dask_setup`` at start), and
``install()`` in the client; then read ``counts()`` in each process (``client.run(counts)``,
``client.run_on_scheduler(counts)``). TLS comms are counted too (they are TCP comms); in-process
(``inproc://``) comms are not. The counting costs two additions per message.
"""

from __future__ import annotations

import struct

__all__ = ["install", "counts", "dask_setup"]

_counts = {"sent": 0, "received": 0}
_HEADER = struct.calcsize("Q")  # each message's length prefix, read apart from its body


def install() -> None:
    """Start counting in this process (once; later calls do nothing)."""
    from distributed.comm import tcp

    if getattr(tcp, "_eagle_traffic", False):
        return
    write, read, read_body = tcp.TCP.write, tcp.TCP.read, tcp.read_bytes_rw

    async def counted_write(self, msg, serializers=None, on_error="message"):
        sent = await write(self, msg, serializers=serializers, on_error=on_error)
        _counts["sent"] += sent
        return sent

    async def counted_read(self, deserializers=None):
        message = await read(self, deserializers=deserializers)
        _counts["received"] += _HEADER
        return message

    async def counted_body(stream, n):
        _counts["received"] += n
        return await read_body(stream, n)

    tcp.TCP.write, tcp.TCP.read, tcp.read_bytes_rw = counted_write, counted_read, counted_body
    tcp._eagle_traffic = True


def counts() -> dict[str, int]:
    """``{"sent": bytes, "received": bytes}`` through this process's TCP comms since
    ``install()``."""
    return dict(_counts)


def dask_setup(server) -> None:
    """Dask's preload hook (``--preload eagle.distributed.traffic``)."""
    install()
