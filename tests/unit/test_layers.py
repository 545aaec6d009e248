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
    ("core", "metric_registry"),  # the registry imports nothing of the package
    ("host",),
    ("workload",),
    ("loadgen",),
    ("metrics",),
    ("measurement",),
    ("engines", "models"),
    ("launch",),
    # The study package, floor by floor: its data and seams; coordination over the shared
    # storage; one trial; a configuration on fresh starts; the loop and what comes after it.
    ("study.config", "study.record", "study.space", "study.samplers", "study.outcome",
     "study.enqueued", "study.measurer", "study.tracker", "study.run_folder", "study.policy"),
    ("study.coordination",),
    ("study.state", "study.quality_guard", "study.trial"),
    ("study.repeats",),
    ("study.loop", "study.replay", "study.results", "study.status", "study"),  # study: its face
    ("tracking",),
    ("report", "deploy"),
    ("ui",),
    ("commands",),
    ("cli", "cli_help", "__main__"),
]
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def unit_of(path: Path) -> str:
    """A module's unit: its top-level package, or within ``study`` its sub-package or module."""
    parts = [p.removesuffix(".py") for p in path.relative_to(PACKAGE).parts]
    if parts[0] == "study" and len(parts) > 1 and parts[1] != "__init__":
        return f"study.{parts[1]}"
    return parts[0]


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
            if parts[0] == "tuner" and len(parts) > 2 and parts[1] == "study":
                found.add(f"study.{parts[2]}")
            elif parts[0] == "tuner" and len(parts) > 1:
                found.add(parts[1])
    return found


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if unit_of(p) not in ("__init__", "study"))


def test_every_unit_has_a_layer() -> None:
    units = {unit_of(p) for p in MODULES}
    assert units <= set(RANK), f"give these a layer in LAYERS: {sorted(units - set(RANK))}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down(path: Path) -> None:
    me = unit_of(path)
    upward = sorted(u for u in imported_units(path) - {me, "__version__"}
                    if RANK.get(u, -1) > RANK[me])
    assert upward == [], f"{path.relative_to(PACKAGE)} ({me}) imports from a layer above: {upward}"


def test_the_study_coordinates_below_its_loop() -> None:
    assert RANK["study.coordination"] < RANK["study.trial"] < RANK["study.repeats"]
    assert RANK["study.repeats"] < RANK["study.loop"]
