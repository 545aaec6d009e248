"""The GPU inventory on written tool output: nvidia-smi's CSV and NVML's answers for hosts
this machine is not. Real captures (test_nvidia_smi_captures.py) cover what they hold: a busy
8-GPU host, a MIG GPU, the CSV query with units, the index order. The text here is written for
what none of them holds: a host of mixed models with MIG on one GPU, [N/A] memory, a GPU fallen
off the bus, the compute-apps query, and NVML itself."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tuner.core import ConfigError
from tuner.host import (
    Inventory,
    busy,
    count_processes,
    gpu_devices,
    parse_nvidia_smi,
    read_nvml,
    usable,
    visible,
)

# nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,mig.mode.current
#            --format=csv,noheader,nounits  on a mixed 8-GPU host: an A100 with MIG on, an L4
# whose MIG field reads [N/A] (no MIG on that model), another job's 70 GiB on GPU 5.
MIXED_8 = """\
0, GPU-0a1b2c3d-0000-4000-8000-000000000000, NVIDIA H100 80GB HBM3, 81559, 0, Disabled
1, GPU-1a1b2c3d-0000-4000-8000-000000000001, NVIDIA H100 80GB HBM3, 81559, 2, Disabled
2, GPU-2a1b2c3d-0000-4000-8000-000000000002, NVIDIA A100-SXM4-40GB, 40960, 0, Enabled
3, GPU-3a1b2c3d-0000-4000-8000-000000000003, NVIDIA L4, 23034, 0, [N/A]
4, GPU-4a1b2c3d-0000-4000-8000-000000000004, NVIDIA L4, 23034, [N/A], [N/A]
5, GPU-5a1b2c3d-0000-4000-8000-000000000005, NVIDIA H100 80GB HBM3, 81559, 71680, Disabled
6, GPU-6a1b2c3d-0000-4000-8000-000000000006, NVIDIA H100 80GB HBM3, [N/A], 0, Disabled
7, GPU-7a1b2c3d-0000-4000-8000-000000000007, NVIDIA H100 80GB HBM3, 81559, 0, Disabled
"""
# The same query with GPU 3 fallen off the bus: nvidia-smi lists the others, prints the error in
# its place and exits 15.
ONE_LOST = """\
0, GPU-0a1b2c3d-0000-4000-8000-000000000000, NVIDIA H100 80GB HBM3, 81559, 0, Disabled
1, GPU-1a1b2c3d-0000-4000-8000-000000000001, NVIDIA H100 80GB HBM3, 81559, 0, Disabled
Unable to determine the device handle for GPU0000:41:00.0: Unknown Error
"""
# nvidia-smi --query-compute-apps=gpu_uuid,pid --format=csv,noheader,nounits
APPS = """\
GPU-5a1b2c3d-0000-4000-8000-000000000005, 48213
GPU-7a1b2c3d-0000-4000-8000-000000000007, 50112
GPU-7a1b2c3d-0000-4000-8000-000000000007, 50113
"""


def test_mixed_host_with_missing_fields_parses() -> None:
    found = parse_nvidia_smi(MIXED_8)
    assert found.problems == []
    assert [g.index for g in found.gpus] == list(range(8))
    assert {g.name for g in found.gpus} == {"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB",
                                            "NVIDIA L4"}
    assert [g.mig for g in found.gpus] == [False, False, True, False, False, False, False, False]
    assert found.gpus[4].memory_used_mib is None
    assert found.gpus[6].memory_mib == 0  # [N/A] total: unknown, not a crash


def test_the_old_four_field_form_still_parses() -> None:
    found = parse_nvidia_smi("0, NVIDIA H100 80GB HBM3, 81559, GPU-1f7c\n"
                             "1, NVIDIA H100 80GB HBM3, 81559, GPU-22aa\n")
    assert [(g.index, g.uuid, g.memory_mib) for g in found.gpus] == [
        (0, "GPU-1f7c", 81559), (1, "GPU-22aa", 81559)]


def test_a_gpu_in_error_is_a_problem_not_a_cpu_host() -> None:
    found = parse_nvidia_smi(ONE_LOST)
    assert [g.index for g in found.gpus] == [0, 1]
    assert found.problems == ["Unable to determine the device handle for GPU0000:41:00.0: "
                              "Unknown Error"]


def test_when_every_gpu_fails_the_host_is_not_silently_cpu() -> None:
    lost = Inventory([], ["nvidia-smi exited 15: Unable to determine the device handle for "
                          "GPU0000:41:00.0: Unknown Error"])
    with pytest.raises(ConfigError, match=r"NVIDIA GPUs but none is usable.*--device cpu"):
        usable(lost, None, expected=8)  # /dev/nvidia0..7: the driver has the GPUs


def test_nvidia_smi_without_a_device_is_a_cpu_host(tmp_path: Path) -> None:
    # nvidia-smi installed, no GPU here: "No devices were found" (exit 6), no /dev/nvidiaN.
    nothing = Inventory([], ["No devices were found", "nvidia-smi exited 6: No devices were "
                                                      "found"])
    for name in ("nvidiactl", "nvidia-uvm", "nvidia-modeset"):
        (tmp_path / name).touch()
    assert gpu_devices(tmp_path) == 0
    assert usable(nothing, None, expected=gpu_devices(tmp_path)) == []
    (tmp_path / "nvidia0").touch()
    (tmp_path / "nvidia1").touch()
    assert gpu_devices(tmp_path) == 2


def test_mig_gpus_are_skipped_with_one_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        gpus = usable(parse_nvidia_smi(MIXED_8), None)
    assert 2 not in [g.index for g in gpus]
    assert len(gpus) == 7
    assert [r.getMessage() for r in caplog.records if "MIG" in r.getMessage()] == [
        "GPU 2: MIG mode is on; the tuner leases whole GPUs only and skips them (turn MIG off: "
        "nvidia-smi -i N -mig 0)"]
    only_mig = Inventory([parse_nvidia_smi(MIXED_8).gpus[2]])
    with pytest.raises(ConfigError, match="MIG on"):
        usable(only_mig, None)


@pytest.mark.parametrize(("given", "indices"), [
    (None, [0, 1, 2, 3, 4, 5, 6, 7]),
    ("4,5", [4, 5]),                                        # Slurm's allocation, by index
    ("GPU-6a1b2c3d,GPU-0a1b2c3d-0000-4000-8000-000000000000", [6, 0]),  # by (prefix of) UUID
    ("3,9,1", [3]),                                         # CUDA stops at an unknown entry
    ("", []),                                               # "no GPU devices are visible"
    ("-1", []),
    ("NoDevFiles", []),
])
def test_the_inventory_starts_from_an_inherited_cuda_visible_devices(
        given: str | None, indices: list[int]) -> None:
    gpus = parse_nvidia_smi(MIXED_8).gpus
    assert [g.index for g in visible(gpus, given)] == indices


def test_given_no_gpu_on_purpose_the_host_is_a_cpu_host() -> None:
    assert usable(parse_nvidia_smi(MIXED_8), "") == []


def test_an_allocation_naming_no_gpu_here_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="CUDA_VISIBLE_DEVICES=GPU-ffff names none of them"):
        usable(parse_nvidia_smi(MIXED_8), "GPU-ffff")
    with pytest.raises(ConfigError, match="MIG slices are not supported"):
        visible(parse_nvidia_smi(MIXED_8).gpus, "MIG-0a1b2c3d-0000-4000-8000-000000000000/1/0")


def test_foreign_jobs_make_a_gpu_busy() -> None:
    gpus = count_processes(parse_nvidia_smi(MIXED_8).gpus, APPS)
    assert {g.index: busy(g) for g in gpus if busy(g)} == {
        5: "1 compute process(es) on it", 7: "2 compute process(es) on it"}
    # Processes of another container's PID namespace are not listed; their memory still is.
    assert busy(parse_nvidia_smi(MIXED_8).gpus[5]) == "71680 MiB of its memory in use"
    assert busy(parse_nvidia_smi(MIXED_8).gpus[1]) is None  # 2 MiB: an idle driver context


# NVML, as nvidia-ml-py answers it: a recorded host of three GPUs, GPU 1 lost, GPU 2 an L4
# that does not support MIG queries and runs another job.
class NVMLError(Exception):
    pass


@dataclass
class Memory:
    total: int
    used: int


@dataclass
class PciInfo:
    busId: str  # noqa: N815 - NVML's name


class RecordedNvml:
    NVMLError = NVMLError

    def __init__(self) -> None:
        self.inits = 0
        self.shutdowns = 0

    def nvmlInit(self) -> None:  # noqa: N802 - NVML's names
        self.inits += 1

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return 3

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:  # noqa: N802
        if i == 1:
            raise NVMLError("GPU is lost")
        return i

    def nvmlDeviceGetUUID(self, h: int) -> bytes:  # noqa: N802
        return f"GPU-{h}a1b2c3d-0000-4000-8000-00000000000{h}".encode()

    def nvmlDeviceGetName(self, h: int) -> str:  # noqa: N802
        return ["NVIDIA H100 80GB HBM3", "", "NVIDIA L4"][h]

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Memory:  # noqa: N802
        return Memory(total=[85520809984, 0, 24152899584][h], used=[0, 0, 20 * 2**30][h])

    def nvmlDeviceGetMigMode(self, h: int) -> tuple[int, int]:  # noqa: N802
        if h == 2:
            raise NVMLError("Not Supported")
        return (0, 0)

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[Any]:  # noqa: N802
        return [object()] if h == 2 else []

    def nvmlDeviceGetPciInfo(self, h: int) -> PciInfo:  # noqa: N802
        return PciInfo(busId=["00000000:19:00.0", "", "00000000:3B:00.0"][h])

    def nvmlDeviceGetMinorNumber(self, h: int) -> int:  # noqa: N802
        if h == 2:
            raise NVMLError("Not Supported")
        return 3


def test_nvml_is_read_with_unsupported_fields_and_a_lost_gpu() -> None:
    nvml = RecordedNvml()
    found = read_nvml(nvml)
    assert [(g.index, g.name, g.memory_mib, g.mig, g.processes) for g in found.gpus] == [
        (0, "NVIDIA H100 80GB HBM3", 81559, False, 0), (2, "NVIDIA L4", 23034, False, 1)]
    assert found.gpus[0].uuid == "GPU-0a1b2c3d-0000-4000-8000-000000000000"
    assert [(g.pci_bus_id, g.minor_number) for g in found.gpus] == [
        ("00000000:19:00.0", 3), ("00000000:3B:00.0", None)]
    assert found.problems == ["GPU 1: GPU is lost"]
    assert busy(found.gpus[1]) == "1 compute process(es) on it"
    assert (nvml.inits, nvml.shutdowns) == (1, 1)
