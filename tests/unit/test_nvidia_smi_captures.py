"""The nvidia-smi readers on real captures (tests/data/gpu-captures, SOURCES.md names each):
``-q -x`` documents of a busy 8-GPU VM and of a MIG A100, the CSV query of a MIG H100 under load,
and the ``-q`` text of four hosts, against which the index order the inventory assumes (PCI bus
order, not minor numbers or module ids) is checked."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from tuner.core import ConfigError
from tuner.host import (
    SMI_FIELDS,
    Inventory,
    busy,
    parse_nvidia_smi,
    parse_nvidia_smi_xml,
    usable,
    visible,
)

CAPTURES = Path(__file__).parents[1] / "data" / "gpu-captures"
V100S_8 = "nvidia-smi-q-x.8xV100S-PCIE-32GB.processes.xml"
A100_MIG = "nvidia-smi-q-x.A100-SXM4-80GB.mig.1-of-4-gpus.xml"
Q_TEXT = sorted(p.name for p in CAPTURES.glob("nvidia-smi-q.*.txt"))


def read(name: str) -> str:
    return (CAPTURES / name).read_text()


def v100s() -> Inventory:
    return parse_nvidia_smi_xml(read(V100S_8))


def test_a_busy_8_gpu_vm_is_read_whole_from_one_document() -> None:
    found = v100s()
    assert found.problems == []
    assert [g.index for g in found.gpus] == list(range(8))
    assert {g.name for g in found.gpus} == {"Tesla V100S-PCIE-32GB"}
    assert found.gpus[0].uuid == "GPU-76098dc1-d3bc-9a1b-7ea6-f7b48837829e"
    assert found.gpus[7].uuid == "GPU-1d955959-c95b-4f40-2cac-100d3006ffe2"
    assert {g.memory_mib for g in found.gpus} == {32510}
    assert [g.memory_used_mib for g in found.gpus] == [31689, 29545, 29539, 32099, 29517,
                                                       32141, 32157, 29501]
    assert [g.pci_bus_id for g in found.gpus][:2] == ["00000000:00:0D.0", "00000000:00:0E.0"]
    assert [g.minor_number for g in found.gpus] == list(range(8))
    assert not any(g.mig for g in found.gpus)  # <current_mig>N/A</current_mig>: no MIG there
    # One running python process each; the 69 accounted (finished) ones are not counted.
    assert [g.processes for g in found.gpus] == [1] * 8
    assert {busy(g) for g in found.gpus} == {"1 compute process(es) on it"}


def test_a_mig_gpu_is_seen_with_its_own_memory_not_its_slices() -> None:
    found = parse_nvidia_smi_xml(read(A100_MIG))
    # <attached_gpus>4, but upstream trimmed the document to one <gpu>: one GPU is read.
    assert [(g.index, g.name, g.mig) for g in found.gpus] == [(0, "NVIDIA A100-SXM4-80GB", True)]
    gpu = found.gpus[0]
    assert (gpu.memory_mib, gpu.memory_used_mib) == (81920, 50)  # the MIG devices' are 19968
    assert (gpu.uuid, gpu.pci_bus_id) == ("GPU-513536b6-7d19-9063-b049-1e69664bb298",
                                          "00000000:01:00.0")
    assert gpu.minor_number == 1  # its module id is 4: neither is the index
    assert gpu.processes == 0  # <processes />
    with pytest.raises(ConfigError, match="every GPU it may use has MIG on"):
        usable(found, None)


def test_an_error_before_the_document_is_a_problem_and_the_others_are_read() -> None:
    lost = "Unable to determine the device handle for gpu 0000:41:00.0: Unknown Error\n"
    found = parse_nvidia_smi_xml(lost + read(V100S_8))
    assert len(found.gpus) == 8
    assert found.problems == [lost.strip()]


@pytest.mark.parametrize(("text", "problem"), [
    ("", None),
    ("No devices were found\n", "No devices were found"),
    ("<nvidia_smi_log><gpu id=", "nvidia-smi -q -x: not a readable document"),
])
def test_no_document_gives_no_gpu_and_says_why(text: str, problem: str | None) -> None:
    found = parse_nvidia_smi_xml(text)
    assert found.gpus == []
    assert [p[:len(problem or "")] for p in found.problems] == ([problem] if problem else [])


def test_the_inherited_allocation_names_real_gpus_by_index_or_uuid() -> None:
    gpus = v100s().gpus
    assert [g.index for g in visible(gpus, "4,5")] == [4, 5]
    assert [g.index for g in visible(gpus, "GPU-d2446f91,GPU-76098dc1-d3bc-9a1b-7ea6-"
                                           "f7b48837829e")] == [6, 0]


def test_the_csv_query_of_a_mig_h100_under_load() -> None:
    """The real query printed 212 fields with units and a header; ours asks for six without
    either. Project ours out of it, units kept (a query without ``nounits`` prints them)."""
    rows = list(csv.reader(io.StringIO(read(
        "nvidia-smi-query-gpu.1xH100-80GB-HBM3.mig.load.masked.csv")), skipinitialspace=True))
    header = [re.sub(r" \[.*\]$", "", h) for h in rows[0]]
    ours = ", ".join(rows[1][header.index(f)] for f in SMI_FIELDS)
    found = parse_nvidia_smi(ours)
    assert found.problems == []
    assert [(g.index, g.name, g.memory_mib, g.memory_used_mib, g.mig) for g in found.gpus] == [
        (0, "NVIDIA H100 80GB HBM3", 81559, 11125, True)]
    assert busy(found.gpus[0]) == "11125 MiB of its memory in use"


def q_text_gpus(text: str) -> list[tuple[str, int]]:
    """(bus id, minor number) of each GPU of ``nvidia-smi -q`` text, in the document's order."""
    buses = re.findall(r"(?m)^GPU ([0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)$", text)
    minors = [int(m) for m in re.findall(r"(?m)^    Minor Number\s+: (\d+)$", text)]
    assert len(buses) == len(minors) == int(re.findall(r"Attached GPUs\s+: (\d+)", text)[0])
    return list(zip(buses, minors, strict=True))


def pci_order(bus_id: str) -> tuple[int, ...]:
    return tuple(int(part, 16) for part in re.split(r"[:.]", bus_id))


@pytest.mark.parametrize("name", Q_TEXT)
def test_nvidia_smi_lists_gpus_in_pci_bus_order_whatever_their_minor_numbers(name: str) -> None:
    """The inventory takes a GPU's place in nvidia-smi's list as its index, and reads integer
    CUDA_VISIBLE_DEVICES entries in that order (launchers set CUDA_DEVICE_ORDER=PCI_BUS_ID).
    Every real ``-q`` capture lists its GPUs in ascending PCI bus id, also where the minor
    numbers (/dev/nvidiaN) run in another order."""
    gpus = q_text_gpus(read(name))
    buses = [bus for bus, _ in gpus]
    assert buses == sorted(buses, key=pci_order)
    assert len(set(buses)) == len(buses)


def test_the_captures_include_minor_numbers_that_are_not_the_index() -> None:
    minors = {name: [m for _, m in q_text_gpus(read(name))] for name in Q_TEXT}
    assert minors["nvidia-smi-q.8xRTX6000Ada.minor-reversed.txt"] == [3, 2, 1, 0, 7, 6, 5, 4]
    assert minors["nvidia-smi-q.4xA100-SXM4-80GB.minor3-6.txt"] == [3, 4, 5, 6]


def test_the_table_of_the_same_host_numbers_gpus_in_the_same_bus_order() -> None:
    """nvidia-smi's own table of the 4-GPU host prints each index beside its bus id: index i is
    the i-th GPU of the -q document, not minor number i (those are 3..6)."""
    table = read("nvidia-smi.4xA100-SXM4-80GB.minor3-6.table.txt")
    printed = re.findall(r"(?m)^\|\s+(\d+)\s+NVIDIA.*?\|\s+([0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}"
                         r"\.\d)", table)
    by_q = [bus for bus, _ in q_text_gpus(read("nvidia-smi-q.4xA100-SXM4-80GB.minor3-6.txt"))]
    assert [(int(i), bus) for i, bus in printed] == list(enumerate(by_q))
    assert len(printed) == 4
