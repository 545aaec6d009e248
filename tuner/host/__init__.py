"""The face of tuner.host: what other packages use of it; the rest is private."""

from tuner.host.disk_space import (
    atomic_open,
    check_free,
    no_space,
    out_of_space,
    stops_when_full,
    what_filled,
    write_atomic,
)
from tuner.host.gpu import Gpu, Inventory
from tuner.host.gpu_inventory import busy, busy_now, gpu_devices, read_nvml, usable, visible
from tuner.host.hardware import (
    IDENTITY_FLAGS,
    Hardware,
    cpu_identity,
    cpu_list,
    detect,
    parse_cpu_list,
    realtime_allowed,
    running_on,
    split_cores,
)
from tuner.host.nvidia_smi import (
    SMI_FIELDS,
    count_processes,
    parse_nvidia_smi,
    parse_nvidia_smi_xml,
)
from tuner.host.page_reporting import reporting_order, reporting_warning
from tuner.host.programs import find_program, program_version

__all__ = [
    "Gpu", "Hardware", "IDENTITY_FLAGS", "Inventory", "SMI_FIELDS", "atomic_open", "busy",
    "busy_now", "check_free", "count_processes", "cpu_identity", "cpu_list", "detect",
    "find_program", "gpu_devices", "no_space", "out_of_space", "parse_cpu_list",
    "parse_nvidia_smi", "parse_nvidia_smi_xml", "program_version", "read_nvml", "realtime_allowed",
    "reporting_order", "reporting_warning", "running_on", "split_cores", "stops_when_full",
    "usable", "visible", "what_filled", "write_atomic",
]
