"""What the tuner knows of one GPU, and of all of them as one read found them."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel


class Gpu(BaseModel):
    index: int
    """The driver's index (NVML's and nvidia-smi's): PCI bus order."""
    name: str
    memory_mib: int
    """0 where the driver could not say."""
    uuid: str
    memory_used_mib: int | None = None
    mig: bool = False
    """MIG mode is on: CUDA sees only its slices (``MIG-...``), never the whole GPU."""
    processes: int = 0
    """Compute processes on it when it was read (those nvidia-smi can see from here)."""
    pci_bus_id: str | None = None
    """``00000000:19:00.0``, where the reader gives it."""
    minor_number: int | None = None
    """Its device file, ``/dev/nvidia<minor>``: not the index on every host."""


@dataclass
class Inventory:
    gpus: list[Gpu]
    problems: list[str] = field(default_factory=list)
    """What went wrong reading the GPUs (a GPU fallen off the bus, a failing tool)."""
