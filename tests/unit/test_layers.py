"""The package's layers point one way: a module imports only from its own layer or below.

Lowest first; units of one rank may import each other (the import-cycle check keeps those
acyclic). Imports under ``if TYPE_CHECKING:`` count too: a type from above is a back-edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tuner"

LAYERS: list[tuple[str, ...]] = [
    ("settings", "errors", "disk_space", "validation", "validation_errors", "gpu_inventory",
     "hardware"),
    ("workload",),
    ("loadgen",),
    ("metrics",),
    ("measurement",),
    ("engines", "models"),
    ("launch",),
    ("search",),
    ("tracking",),
    ("report", "deploy"),
    ("commands",),
    ("cli", "cli_help", "__main__"),
]
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def unit_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def imported_units(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "tuner":
                names = [f"tuner.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "tuner" and len(parts) > 1:
                found.add(parts[1])
    return found


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if unit_of(p) != "__init__")


def test_every_unit_has_a_layer() -> None:
    units = {unit_of(p) for p in MODULES}
    assert units <= set(RANK), f"give these a layer in LAYERS: {sorted(units - set(RANK))}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down(path: Path) -> None:
    me = unit_of(path)
    upward = sorted(u for u in imported_units(path) - {me, "__version__"}
                    if RANK.get(u, -1) > RANK[me])
    assert upward == [], f"{path.relative_to(PACKAGE)} ({me}) imports from a layer above: {upward}"
