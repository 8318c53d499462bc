"""Ports for the servers a test or a fault suite starts, outside the kernel's ephemeral range.

A port the system picks (bind to port 0) comes from the ephemeral range, which every outgoing
connection on the machine also draws its local port from: between the pick and the server's bind,
a connection (a worker's, a health check's) may take it, and the server then fails with "address
already in use" (a Patroni node did, and crash-recovered into a state its leader could not feed).
Ports below that range are never handed out to outgoing connections.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

# Where the candidates start: above the well-known services most machines run.
LOWEST = 10_000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux's default when it cannot be read)."""
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def is_free(port: int) -> bool:
    """Nothing is bound to 127.0.0.1:`port` now."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(taken: set[int] | frozenset[int] = frozenset()) -> int:
    """A loopback port nothing listens on now, below the ephemeral range and not in `taken`."""
    candidates = list(range(LOWEST, ephemeral_low()))
    for port in random.sample(candidates, min(len(candidates), 200)):
        if port not in taken and is_free(port):
            return port
    raise OSError(f"no free port found in {LOWEST}-{ephemeral_low() - 1}")
