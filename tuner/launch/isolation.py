"""What keeps trials that run at once on one host apart: ports, sockets and caches.

Parallel trials on a GPU host run the same engine side by side. Anything an engine takes by a
fixed default name would be shared: TGI's shard socket (``--shard-uds-path``, default
``/tmp/text-generation-server``) and torch.distributed's master port (``--master-port``, default
29500), both in TGI's launcher (launcher/src/main.rs ``Args``); a compile cache written by two
engines at once. Each launch gets its own port, master port and socket path (the templates
``{port}``, ``{master_port}``, ``{launch_id}`` of an engine spec), and each GPU lease its own
cache folder: one engine at a time writes it (its first GPU is held by one trial at a time), and
the next trial on that GPU starts warm.
"""

from __future__ import annotations

import random
import socket
import threading
import time
import uuid
from pathlib import Path

EPHEMERAL_FALLBACK = (32768, 60999)
"""Linux's default ``net.ipv4.ip_local_port_range``."""
LOWEST_PORT = 10000
RESERVE_S = 600.0
"""A port this tuner handed out is not handed out again for this long: an engine binds its
port only once it has loaded, long after ``free_port`` closed the probe socket, and a parallel
trial asking meanwhile must not be given the same one."""
_given: dict[int, float] = {}
_given_lock = threading.Lock()


def ephemeral_range(path: Path = Path("/proc/sys/net/ipv4/ip_local_port_range")
                    ) -> tuple[int, int]:
    """The ports the kernel gives outgoing connections (and ``bind(0)``)."""
    try:
        low, high = (int(x) for x in path.read_text().split())
    except (OSError, ValueError):
        return EPHEMERAL_FALLBACK
    return low, high


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1", *, now: float | None = None,
              rng: random.Random | None = None) -> int:
    """A port nothing listens on now, that this tuner has not handed out lately, and below the
    kernel's ephemeral range: between this probe and the engine's bind, the load generator of
    a parallel trial opens thousands of connections, and each takes an ephemeral port as its
    source, which a port from that range could become."""
    pick = rng or random
    with _given_lock:
        clock = time.monotonic() if now is None else now
        for port, at in list(_given.items()):
            if clock - at > RESERVE_S:
                del _given[port]
        low = ephemeral_range()[0]
        for _ in range(256 if low > LOWEST_PORT else 0):
            port = pick.randrange(LOWEST_PORT, low)
            if port not in _given and _bindable(host, port):
                _given[port] = clock
                return port
        for _ in range(64):  # no room below the ephemeral range: the kernel's choice
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind((host, 0))
                port = int(sock.getsockname()[1])
            if port not in _given:
                _given[port] = clock
                return port
        raise OSError("no free port found")


def launch_values(host: str) -> dict[str, str]:
    """The per-launch template values (besides the model's): ports and a launch id."""
    return {"port": str(free_port(host)), "master_port": str(free_port(host)),
            "launch_id": uuid.uuid4().hex[:12]}


def cache_folder(cache_root: Path, engine: str, name: str, devices: list[str]) -> Path:
    """The engine's cache ``name``: one per GPU lease (by its first GPU) on a GPU host, one for
    the engine on a CPU host (where trials never run at once)."""
    folder = cache_root / "engines" / engine / name
    return folder / devices[0] if devices else folder
