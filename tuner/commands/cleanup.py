"""``tune cleanup``: remove the engines of tuners that are gone."""

from __future__ import annotations

from rich.console import Console

from tuner.core import ConfigError, Settings
from tuner.launch import DockerLauncher, ProcessLauncher


def cleanup_command(settings: Settings, console: Console) -> list[str]:
    removed = ProcessLauncher().cleanup_orphans()
    try:
        removed += DockerLauncher(settings=settings).cleanup_orphans()
    except ConfigError as exc:
        console.print(f"containers not checked: {exc}")
    for item in removed:
        console.print(f"removed {item}")
    console.print(f"{len(removed)} orphaned engine(s) removed")
    return removed
