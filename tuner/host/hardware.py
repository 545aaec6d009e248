"""What the host has: CPU cores, memory, NUMA nodes and GPUs, and how a CPU host's cores are
split between the engine and the load generator.

GPUs come from ``gpu_inventory`` (NVML, else nvidia-smi), narrowed to those the tuner was given.
"""

from __future__ import annotations

import logging
import os
import platform
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Literal

import psutil
from pydantic import BaseModel

from tuner.host.gpu import Gpu
from tuner.host.gpu_inventory import gpu_devices, read_gpus, usable
from tuner.host.page_reporting import reporting_order

log = logging.getLogger(__name__)


class Hardware(BaseModel):
    device: Literal["cpu", "gpu"]
    cpu_model: str
    cpu_cores: int
    memory_gib: float
    numa_nodes: int
    gpus: list[Gpu]
    engine_cpus: list[int] = []
    client_cpus: list[int] = []
    client_realtime: bool = False
    """The load generator runs at a real-time priority on its cores (see CLIENT_RT_PRIORITY)."""
    cpu_flags: list[str] = []
    """The instruction sets engines decide by (of CPU_FLAGS) that this host's CPU has."""
    page_reporting_order: int | None = None
    """This VM reports free blocks of 2^order pages to its hypervisor, which takes them back
    (see host.page_reporting); None: it does not."""

    @property
    def gpu_count(self) -> int:
        return len(self.gpus)

    @property
    def engine_cores(self) -> int:
        """The cores an engine may use: its own share when the host is split, else all."""
        return len(self.engine_cpus) or self.cpu_cores

    def pinning(self) -> str:
        if not self.client_cpus:
            return "engine and load generator share all cores (not pinned)"
        return (f"engine on cores {cpu_list(self.engine_cpus)}, load generator on "
                f"{cpu_list(self.client_cpus)}"
                + (" at real-time priority" if self.client_realtime else ""))

    def describe(self) -> str:
        if self.gpus:
            names = sorted({g.name for g in self.gpus})
            return f"{self.gpu_count}x {', '.join(names)}"
        return (f"CPU {self.cpu_model} ({self.cpu_cores} cores, {self.memory_gib:.0f} GiB; "
                f"{self.pinning()})")


def cpu_list(cpus: list[int]) -> str:
    """The kernel's list syntax (``0-5,7``), as taskset, Docker's cpuset and vLLM read it."""
    runs: list[list[int]] = []
    for c in sorted(cpus):
        if runs and c == runs[-1][-1] + 1:
            runs[-1].append(c)
        else:
            runs.append([c])
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def parse_cpu_list(text: str) -> set[int]:
    """``0-2,5`` -> {0, 1, 2, 5}."""
    cpus: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


CLIENT_RT_PRIORITY = 1
"""The load generator's real-time priority (SCHED_RR) on a split host: on its own cores it still
meets the engine's helper processes, and measured on Linux 6.18 a plain or even nice -15
generator waited up to 230 ms for its core behind them, a real-time one 0.3 ms."""


def realtime_allowed() -> bool:
    """Whether this process may take a real-time priority (root, or CAP_SYS_NICE)."""
    before = os.sched_getscheduler(0), os.sched_getparam(0)
    try:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(CLIENT_RT_PRIORITY))
    except (OSError, AttributeError):
        return False
    os.sched_setscheduler(0, before[0], before[1])
    return True


@contextmanager
def running_on(cpus: list[int], *, realtime: bool = False) -> Iterator[None]:
    """Run this thread, and the threads and processes it starts, on ``cpus`` for the block (the
    load generator's share of a split host), at a real-time priority if ``realtime`` (engines
    started meanwhile drop it again: ``launch.process``); nothing changes when ``cpus`` is
    empty."""
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    os.sched_setaffinity(0, cpus)
    if realtime:
        with suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(CLIENT_RT_PRIORITY))
    try:
        yield
    finally:
        with suppress(OSError):
            os.sched_setscheduler(0, policy, param)
        os.sched_setaffinity(0, before)


def split_cores(cpus: list[int]) -> tuple[list[int], list[int]]:
    """Disjoint cores for the engine and for the load generator on a CPU host, so that neither
    steals the other's: the generator gets the last eighth (at least one core), the engine the
    rest. One core cannot be split: ([], [])."""
    cpus = sorted(cpus)
    if len(cpus) < 2:
        return [], []
    client = max(1, len(cpus) // 8)
    return cpus[:-client], cpus[-client:]


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields in /proc/cpuinfo (none where it cannot be read)."""
    try:
        first = Path("/proc/cpuinfo").read_text().split("\n\n")[0]
    except OSError:
        return {}
    return {k.strip(): v.strip() for k, v in (ln.split(":", 1) for ln in first.splitlines()
                                              if ":" in ln)}


def _cpu_model() -> str:
    return _cpuinfo().get("model name") or platform.processor() or platform.machine()


CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile")
"""The CPU flags validity rules may ask about (vLLM CPU's FP8 KV cache needs AVX-512 or AMX)."""


def _cpu_flags() -> list[str]:
    have = set(_cpuinfo().get("flags", "").split())
    return [f for f in CPU_FLAGS if f in have]


IDENTITY_FLAGS = ("avx512f", "avx2", "amx_int8")
"""The instruction sets that name a machine in a kept figure (vLLM CPU runs ~4x apart)."""


def cpu_identity() -> str:
    """The CPU as a kept figure names it: ``Intel(R) Xeon(R) Processor (family 6 model 167),
    2 cores, avx512f+avx2+amx_int8``. Figures compare only between one identity's runs."""
    field = _cpuinfo()
    flags = [f for f in IDENTITY_FLAGS if f in field.get("flags", "").split()]
    return (f"{field.get('model name', '?')} (family {field.get('cpu family', '?')} model "
            f"{field.get('model', '?')}), {os.cpu_count()} cores, {'+'.join(flags) or 'no avx2'}")


def _numa_nodes() -> int:
    nodes = list(Path("/sys/devices/system/node").glob("node[0-9]*"))
    return max(1, len(nodes))


def detect_gpus() -> list[Gpu]:
    """The GPUs this tuner may use (see ``gpu_inventory.usable``); [] on a host without an
    NVIDIA driver."""
    found = read_gpus()
    return [] if found is None else usable(found, os.environ.get("CUDA_VISIBLE_DEVICES"),
                                           expected=gpu_devices())


def detect(force_device: Literal["cpu", "gpu"] | None = None, *,
           pin_cores: bool = False) -> Hardware:
    """The host. ``pin_cores``: on a CPU host, split the cores between engine and client."""
    gpus = [] if force_device == "cpu" else detect_gpus()
    cpus = sorted(os.sched_getaffinity(0))
    engine, client = split_cores(cpus) if pin_cores and not gpus else ([], [])
    return Hardware(
        device="gpu" if gpus else "cpu",
        cpu_model=_cpu_model(),
        cpu_cores=len(cpus),
        memory_gib=psutil.virtual_memory().total / 2**30,
        numa_nodes=_numa_nodes(),
        gpus=gpus,
        engine_cpus=engine,
        client_cpus=client,
        client_realtime=bool(client) and realtime_allowed(),
        cpu_flags=_cpu_flags(),
        page_reporting_order=reporting_order(),
    )
