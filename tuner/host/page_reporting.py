"""Whether this VM hands freed memory back to its hypervisor (virtio-balloon free page
reporting), which makes every engine start fault its memory in again.

With reporting on, a free block of at least 2^order pages is reported about 2 s after it is
freed, and the hypervisor takes it back; the next process to touch it waits for the host. On
the 2-core EPYC VM this project is measured on (order 5), a fresh process touched 1 GiB in
2-8 s (7-29 µs a 4-KiB page) against 0.07 s (0.27 µs) with order 10, vLLM's start-up spent
25-40 s filling its 4 GiB KV cache, and an engine was several times slower for its first
15-25 s at a high load (experiments/verdicts/results/first_touch.txt, slow_phase.txt).
"""

from __future__ import annotations

from pathlib import Path

PARAMS = Path("/sys/module/page_reporting/parameters")
VIRTIO = Path("/sys/bus/virtio/devices")
BALLOON_DEVICE = "0x0005"
REPORTING_FEATURE = 5  # VIRTIO_BALLOON_F_REPORTING
QUIET_ORDER = 10
"""The largest order the kernel takes (blocks of 4 MiB): reporting then all but stops."""
FIX = f"echo {QUIET_ORDER} > {PARAMS}/page_reporting_order"


def reporting_order(virtio: Path = VIRTIO, params: Path = PARAMS) -> int | None:
    """The order of the free blocks this VM reports to its hypervisor; None when no balloon
    device reports free pages (a host that is not such a VM)."""
    reports = False
    for dev in virtio.glob("*") if virtio.is_dir() else []:
        try:
            kind = (dev / "device").read_text().strip()
            features = (dev / "features").read_text().strip()
        except OSError:
            continue
        if kind == BALLOON_DEVICE and features[REPORTING_FEATURE:REPORTING_FEATURE + 1] == "1":
            reports = True
    if not reports:
        return None
    try:
        return int((params / "page_reporting_order").read_text())
    except (OSError, ValueError):
        return None


def reporting_warning(order: int | None) -> str | None:
    """The line a CPU study prints when freed memory goes back to the hypervisor quickly."""
    if order is None or order >= QUIET_ORDER:
        return None
    return (f"this VM hands memory back to its hypervisor 2 s after it is freed (virtio-balloon "
            f"free page reporting, blocks of 2^{order} pages): every engine start faults its "
            "memory in again from the host, which lengthens start-up (25-40 s for vLLM's 4 GiB "
            "KV cache on a 2-core EPYC VM) and slows the first seconds under load, so capacity "
            f"varies from start to start; for benchmarking, as root: {FIX}")
