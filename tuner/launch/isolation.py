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

import socket
import threading
import time
import uuid
from pathlib import Path

RESERVE_S = 600.0
"""A port this tuner handed out is not handed out again for this long: an engine binds its
port only once it has loaded, long after ``free_port`` closed the probe socket, and a parallel
trial asking meanwhile must not be given the same one."""
_given: dict[int, float] = {}
_given_lock = threading.Lock()


def free_port(host: str = "127.0.0.1", *, now: float | None = None) -> int:
    """A port nothing listens on now and that this tuner has not handed out lately."""
    with _given_lock:
        clock = time.monotonic() if now is None else now
        for port, at in list(_given.items()):
            if clock - at > RESERVE_S:
                del _given[port]
        for _ in range(64):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind((host, 0))
                port = int(sock.getsockname()[1])
            if port not in _given:
                _given[port] = clock
                return port
        raise OSError("no free port found in 64 tries")


def launch_values(host: str) -> dict[str, str]:
    """The per-launch template values (besides the model's): ports and a launch id."""
    return {"port": str(free_port(host)), "master_port": str(free_port(host)),
            "launch_id": uuid.uuid4().hex[:12]}


def cache_folder(cache_root: Path, engine: str, name: str, devices: list[str]) -> Path:
    """The engine's cache ``name``: one per GPU lease (by its first GPU) on a GPU host, one for
    the engine on a CPU host (where trials never run at once)."""
    folder = cache_root / "engines" / engine / name
    return folder / devices[0] if devices else folder
