"""The GPUs this tuner may use: read through NVML (nvidia-ml-py) first, ``nvidia-smi`` second
(:mod:`tuner.host.nvidia_smi`), narrowed to what the tuner was given (an inherited
``CUDA_VISIBLE_DEVICES``), without MIG-enabled GPUs, and with what each GPU already holds
(memory in use, compute processes), so that the GPU pool leases no GPU that another job is
using.

Readers are pure functions of recorded tool output (or of an NVML module), so every path is
tested without a GPU. Indices are the driver's (NVML's and nvidia-smi's), which follow the PCI
bus order; CUDA's own default order is fastest-first, so launchers name GPUs by UUID
(``launch.process``, ``launch.docker``).
"""

from __future__ import annotations

import importlib
import logging
import shutil
from pathlib import Path
from typing import Any

from tuner.core import ConfigError
from tuner.host.gpu import Gpu, Inventory
from tuner.host.nvidia_smi import read_nvidia_smi

log = logging.getLogger(__name__)
BUSY_MEMORY_MIB = 1024
"""A GPU with more memory in use than this (and no process of ours on it) is another job's: an
idle GPU holds a few hundred MiB at most (driver context, persistence mode)."""


def read_nvml(nvml: Any) -> Inventory:
    """Read the GPUs through an NVML module (``pynvml`` of nvidia-ml-py, or a recorded fake with
    the same functions). A GPU whose handle or UUID cannot be read becomes a problem."""
    nvml.nvmlInit()
    try:
        gpus: list[Gpu] = []
        problems: list[str] = []
        for index in range(nvml.nvmlDeviceGetCount()):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                gpus.append(_nvml_gpu(nvml, index, handle))
            except nvml.NVMLError as exc:
                problems.append(f"GPU {index}: {exc}")
        return Inventory(gpus, problems)
    finally:
        nvml.nvmlShutdown()


def _nvml_gpu(nvml: Any, index: int, handle: Any) -> Gpu:
    def optional(name: str) -> Any:  # a field this GPU does not support: None
        try:
            return getattr(nvml, name)(handle)
        except nvml.NVMLError:
            return None

    memory = optional("nvmlDeviceGetMemoryInfo")
    mig = optional("nvmlDeviceGetMigMode")
    pci = optional("nvmlDeviceGetPciInfo")
    return Gpu(index=index, uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
               name=_text(optional("nvmlDeviceGetName") or "unknown GPU"),
               memory_mib=memory.total // 2**20 if memory else 0,
               memory_used_mib=memory.used // 2**20 if memory else None,
               mig=bool(mig and mig[0]),
               processes=len(optional("nvmlDeviceGetComputeRunningProcesses") or []),
               pci_bus_id=_text(pci.busId) if pci else None,
               minor_number=optional("nvmlDeviceGetMinorNumber"))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def read_gpus() -> Inventory | None:
    """NVML first, nvidia-smi second; None when this host has neither (no NVIDIA driver)."""
    try:
        nvml = importlib.import_module("pynvml")
    except ImportError:
        nvml = None
    if nvml is not None:
        try:
            return read_nvml(nvml)
        except Exception as exc:  # noqa: BLE001 - any NVML failure falls back to nvidia-smi
            log.debug("NVML unavailable (%s); asking nvidia-smi", exc)
    if shutil.which("nvidia-smi") is None:
        return None
    return read_nvidia_smi()


NO_DEVICES = {"", "none", "void", "nodevfiles", "-1"}


def visible(gpus: list[Gpu], cuda_visible: str | None) -> list[Gpu]:
    """The GPUs an inherited ``CUDA_VISIBLE_DEVICES`` gives this tuner (a scheduler's or a
    container runtime's allocation), in its order; all of them when it is unset. Entries are
    driver indices or (prefixes of) UUIDs, as CUDA reads them; CUDA stops at the first entry
    that names no GPU (CUDA Programming Guide, "CUDA Environment Variables"), and so does this.
    Integer entries are read in the driver's PCI order: the tuner hands engines UUIDs with
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID``."""
    if cuda_visible is None:
        return gpus
    if cuda_visible.strip().lower() in NO_DEVICES:
        return []
    chosen: list[Gpu] = []
    for entry in (e.strip() for e in cuda_visible.split(",")):
        if entry.startswith("MIG-"):
            raise ConfigError(f"CUDA_VISIBLE_DEVICES={cuda_visible}: MIG slices are not "
                              "supported; give the tuner whole GPUs (indices or GPU- UUIDs)")
        if entry.lstrip("-").isdigit():
            hits = [g for g in gpus if g.index == int(entry)]
        else:
            hits = [g for g in gpus if entry and g.uuid.startswith(entry)]
        if len(hits) != 1:
            break
        if hits[0] not in chosen:
            chosen.append(hits[0])
    return chosen


def gpu_devices(dev: Path = Path("/dev")) -> int:
    """The GPU device files the NVIDIA kernel driver made (``/dev/nvidia0`` ...): GPUs this host
    has, whatever nvidia-smi says."""
    return sum(1 for p in dev.glob("nvidia[0-9]*") if p.name[6:].isdigit())


def usable(found: Inventory, cuda_visible: str | None, *, expected: int = 0) -> list[Gpu]:
    """The GPUs this tuner may lease: those it was given, without MIG-enabled ones (said once,
    in a warning naming them). Raises when GPUs were expected (``expected`` device files, a
    GPU listed, MIG) and none is usable; a host where nvidia-smi exists but finds no device
    and no device file exists is a CPU host."""
    if found.problems:
        log.warning("reading the GPUs: %s", "; ".join(found.problems))
        if not found.gpus and not expected:
            return []
    if cuda_visible is not None and cuda_visible.strip().lower() in NO_DEVICES:
        return []  # given no GPU on purpose: a CPU host
    given = visible(found.gpus, cuda_visible)
    mig = [g for g in given if g.mig]
    if mig:
        log.warning("GPU %s: MIG mode is on; the tuner leases whole GPUs only and skips them "
                    "(turn MIG off: nvidia-smi -i N -mig 0)", ", ".join(str(g.index) for g in mig))
    whole = [g for g in given if not g.mig]
    if not whole and (found.problems or mig or (found.gpus and cuda_visible is not None)):
        why = ("; ".join(found.problems) if found.problems and not found.gpus else
               "every GPU it may use has MIG on" if mig else
               f"CUDA_VISIBLE_DEVICES={cuda_visible} names none of them" if found.gpus else
               "; ".join(found.problems))
        raise ConfigError(f"this host has NVIDIA GPUs but none is usable ({why}); fix that, "
                          "or pass --device cpu")
    return whole


def busy(gpu: Gpu) -> str | None:
    """Why another job holds ``gpu`` (compute processes, memory in use), or None."""
    if gpu.processes:
        return f"{gpu.processes} compute process(es) on it"
    if gpu.memory_used_mib is not None and gpu.memory_used_mib > BUSY_MEMORY_MIB:
        return f"{gpu.memory_used_mib} MiB of its memory in use"
    return None


def busy_now() -> dict[str, str]:
    """UUID -> why, for the GPUs another job holds right now (empty when nothing can be read)."""
    found = read_gpus()
    return {} if found is None else {g.uuid: why for g in found.gpus
                                     if (why := busy(g)) is not None}
