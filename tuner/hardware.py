"""What the host has: CPU cores, memory, NUMA nodes and GPUs.

GPUs are read from ``nvidia-smi --query-gpu`` (CSV); its output is parsed by a
pure function so the parsing is tested on recorded output.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Literal

import psutil
from pydantic import BaseModel

log = logging.getLogger(__name__)

NVIDIA_SMI_QUERY = ["nvidia-smi", "--query-gpu=index,name,memory.total,uuid",
                    "--format=csv,noheader,nounits"]


class Gpu(BaseModel):
    index: int
    name: str
    memory_mib: int
    uuid: str


class Hardware(BaseModel):
    device: Literal["cpu", "gpu"]
    cpu_model: str
    cpu_cores: int
    memory_gib: float
    numa_nodes: int
    gpus: list[Gpu]

    @property
    def gpu_count(self) -> int:
        return len(self.gpus)

    def describe(self) -> str:
        if self.gpus:
            names = sorted({g.name for g in self.gpus})
            return f"{self.gpu_count}x {', '.join(names)}"
        return f"CPU {self.cpu_model} ({self.cpu_cores} cores, {self.memory_gib:.0f} GiB)"


def parse_nvidia_smi(text: str) -> list[Gpu]:
    """Parse ``nvidia-smi --query-gpu=index,name,memory.total,uuid --format=csv,noheader``."""
    gpus = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4:
            continue
        gpus.append(Gpu(index=int(parts[0]), name=parts[1], memory_mib=int(float(parts[2])),
                        uuid=parts[3]))
    return gpus


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _numa_nodes() -> int:
    nodes = list(Path("/sys/devices/system/node").glob("node[0-9]*"))
    return max(1, len(nodes))


def detect_gpus() -> list[Gpu]:
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(NVIDIA_SMI_QUERY, capture_output=True, text=True, timeout=30,
                             check=True).stdout
    except (subprocess.SubprocessError, OSError) as exc:
        log.warning("nvidia-smi failed (%s); treating the host as CPU-only", exc)
        return []
    return parse_nvidia_smi(out)


def detect(force_device: Literal["cpu", "gpu"] | None = None) -> Hardware:
    gpus = [] if force_device == "cpu" else detect_gpus()
    return Hardware(
        device="gpu" if gpus else "cpu",
        cpu_model=_cpu_model(),
        cpu_cores=len(os.sched_getaffinity(0)),
        memory_gib=psutil.virtual_memory().total / 2**30,
        numa_nodes=_numa_nodes(),
        gpus=gpus,
    )
