"""What ``nvidia-smi`` prints, read into GPUs: when NVML cannot be loaded, the tool is asked.

``nvidia-smi -q -x`` first: one call gives every GPU's UUID, PCI bus id, minor number, memory
total and in use, MIG mode and compute processes, so a busy or a MIG GPU is seen without a
second call. The document lists the GPUs in the driver's order, PCI bus order (each ``<gpu>``'s
``id`` is its bus id), so a GPU's index is its place in the document; minor numbers
(``/dev/nvidiaN``) and module ids may run in another order and are kept only as records. Lines
before the document (nvidia-smi prints an error there for a GPU it cannot reach) are problems.

The CSV query (``--query-gpu`` and ``--query-compute-apps``) is the second way, for a document
that cannot be read. Readers are pure functions of the tool's output, tested on real captures.
"""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET

from tuner.host.gpu import Gpu, Inventory

NVIDIA_SMI_XML = ["nvidia-smi", "-q", "-x"]
SMI_FIELDS = ("index", "uuid", "name", "memory.total", "memory.used", "mig.mode.current")
NVIDIA_SMI_QUERY = ["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}",
                    "--format=csv,noheader,nounits"]
NVIDIA_SMI_APPS = ["nvidia-smi", "--query-compute-apps=gpu_uuid,pid",
                   "--format=csv,noheader,nounits"]
MISSING = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]",
           "[insufficient permissions]", "[gpu is lost]"}
"""How nvidia-smi writes a field it cannot read (``[N/A]`` with nounits, ``N/A`` without)."""


def parse_nvidia_smi_xml(text: str) -> Inventory:
    """The GPUs of ``nvidia-smi -q -x`` output, and what could not be read."""
    start = text.find("<?xml")
    start = text.find("<nvidia_smi_log") if start < 0 else start
    head = text[:start] if start >= 0 else text
    problems = [line.strip() for line in head.splitlines() if line.strip()]
    if start < 0:
        return Inventory([], problems)
    try:
        root = ET.fromstring(text[start:].strip())
    except ET.ParseError as exc:
        return Inventory([], [*problems, f"nvidia-smi -q -x: not a readable document ({exc})"])
    gpus: list[Gpu] = []
    for index, node in enumerate(root.iter("gpu")):
        uuid = _at(node, "uuid")
        if uuid is None:
            problems.append(f"GPU {node.get('id', index)}: nvidia-smi -q -x gives no UUID")
            continue
        gpus.append(Gpu(
            index=index, uuid=uuid, name=_at(node, "product_name") or "unknown GPU",
            memory_mib=_mib(_at(node, "fb_memory_usage/total")) or 0,
            memory_used_mib=_mib(_at(node, "fb_memory_usage/used")),
            mig=(_at(node, "mig_mode/current_mig") or "").lower() == "enabled",
            processes=sum(1 for p in node.iterfind("processes/process_info")
                          if "C" in (_at(p, "type") or "C")),  # compute, not graphics only
            pci_bus_id=node.get("id"), minor_number=_int(_at(node, "minor_number"))))
    return Inventory(gpus, problems)


def _at(node: ET.Element, path: str) -> str | None:
    """The text at ``path`` below ``node`` (a path of direct children, so a MIG device's
    memory is never read as its GPU's), or None where nvidia-smi wrote N/A or nothing."""
    found = node.find(path)
    return _field(found.text or "") if found is not None else None


def _mib(text: str | None) -> int | None:
    """``81920 MiB`` -> 81920 (the document's one unit for GPU memory)."""
    return _int(text) if text is not None and text.endswith("MiB") else None


def _field(text: str) -> str | None:
    text = text.strip()
    return None if text.lower() in MISSING else text


def _int(text: str | None) -> int | None:
    """``81559`` or, without ``nounits``, ``81559 MiB`` -> 81559."""
    try:
        return None if not text else int(float(text.split()[0]))
    except ValueError:
        return None


def parse_nvidia_smi(text: str) -> Inventory:
    """Parse ``NVIDIA_SMI_QUERY`` output (also the old four-field form ``index,name,memory,uuid``).
    A field nvidia-smi cannot read (``[N/A]``) is tolerated; a line that is not a GPU (an
    error such as "Unable to determine the device handle for GPU0000:41:00.0: Unknown Error",
    printed for a GPU in error) becomes a problem."""
    gpus: list[Gpu] = []
    problems: list[str] = []
    for line in text.strip().splitlines():
        parts = [_field(p) for p in line.split(",")]
        if len(parts) == 4:  # index, name, memory.total, uuid
            parts = [parts[0], parts[3], parts[1], parts[2], None, None]
        index = _int(parts[0]) if parts else None
        if len(parts) != len(SMI_FIELDS) or index is None or not parts[1]:
            if line.strip():
                problems.append(line.strip())
            continue
        gpus.append(Gpu(index=index, uuid=parts[1] or "", name=parts[2] or "unknown GPU",
                        memory_mib=_int(parts[3]) or 0, memory_used_mib=_int(parts[4]),
                        mig=(parts[5] or "").lower() == "enabled"))
    return Inventory(gpus, problems)


def count_processes(gpus: list[Gpu], apps_csv: str) -> list[Gpu]:
    """``gpus`` with the compute processes of ``nvidia-smi --query-compute-apps=gpu_uuid,pid``."""
    per_uuid: dict[str, int] = {}
    for line in apps_csv.strip().splitlines():
        uuid = _field(line.split(",")[0])
        if uuid:
            per_uuid[uuid] = per_uuid.get(uuid, 0) + 1
    return [g.model_copy(update={"processes": per_uuid.get(g.uuid, 0)}) for g in gpus]


def _run(argv: list[str]) -> tuple[int, str, str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (subprocess.SubprocessError, OSError) as exc:
        return -1, "", str(exc)
    return done.returncode, done.stdout, done.stderr


def _exited(code: int, out: str, err: str) -> str:
    detail = (err.strip() or out.strip()).splitlines()
    return f"nvidia-smi exited {code}" + (f": {detail[-1]}" if detail else "")


def read_nvidia_smi() -> Inventory:
    """The GPUs as ``nvidia-smi -q -x`` gives them; the CSV query when that gives none."""
    code, out, err = _run(NVIDIA_SMI_XML)
    found = parse_nvidia_smi_xml(out)
    if code != 0:
        # A non-zero exit with some GPUs listed: one GPU is in error, the others are usable.
        found.problems.append(_exited(code, out, err))
    if found.gpus:
        return found
    code, out, err = _run(NVIDIA_SMI_QUERY)
    by_csv = parse_nvidia_smi(out)
    if code != 0:
        by_csv.problems.append(_exited(code, out, err))
    code, apps, _ = _run(NVIDIA_SMI_APPS)
    if code == 0:
        by_csv.gpus = count_processes(by_csv.gpus, apps)
    return by_csv if by_csv.gpus else found
