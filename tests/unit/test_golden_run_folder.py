"""What a study writes, pinned: the file tree of its run folder, the header of every CSV file
and the keys of every JSON file, for a fake-engine study (3 trials, the best re-measured twice
beside the defaults). The golden file (tests/data/golden-run-folder.json) was written before
the study package was reorganised (issue 34) and must not change with a move of code.

``TUNER_WRITE_GOLDEN=1`` writes the golden file anew; a change to it is a change of what users
get, and its commit says so."""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.unit.fakes.launcher import FakeLauncher, FakeMeasurer
from tests.unit.fakes.model import fake_model
from tuner.commands.tune import tune_command
from tuner.core import Settings
from tuner.study import StudyConfig

pytestmark = pytest.mark.slow
DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "golden-run-folder.json"


def make(cfg: StudyConfig, settings: Settings) -> tuple[FakeLauncher, FakeMeasurer]:
    return FakeLauncher(), FakeMeasurer()


def key_paths(value: Any, prefix: str = "") -> set[str]:
    """Every key of a JSON document as a path (``a.b``, ``a[].c``); list items merged."""
    paths: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            paths.add(path)
            paths |= key_paths(item, path)
    elif isinstance(value, list):
        for item in value:
            paths |= key_paths(item, f"{prefix}[]")
    return paths


def shape_of(run_dir: Path) -> dict[str, Any]:
    files = sorted(p for p in run_dir.rglob("*") if p.is_file())

    def name(path: Path) -> str:  # MLflow's run ids are new each time
        return re.sub(r"[0-9a-f]{32}", "<run>", str(path.relative_to(run_dir)))

    headers: dict[str, list[str]] = {}
    for path in files:
        if path.suffix == ".csv":
            with path.open(newline="") as fh:
                headers.setdefault(name(path), next(csv.reader(fh), []))
    keys: dict[str, set[str]] = {}  # files of one name in several runs: their keys together
    for path in files:
        if path.suffix == ".json":
            keys.setdefault(name(path), set()).update(key_paths(json.loads(path.read_text())))
    return {"tree": sorted({name(p) for p in files}), "csv_headers": headers,
            "json_keys": {k: sorted(v) for k, v in keys.items()}}


def test_a_study_writes_the_pinned_files(tmp_path: Path) -> None:
    model = fake_model(tmp_path / "model")
    settings = Settings(pin_cores=False, cache_dir=tmp_path / "cache")
    cfg = StudyConfig(engine="vllm", workload=DATA / "workload-ci.yaml", model=str(model),
                      search_space=DATA / "space-ci.yaml", trials=3, remeasure_top=1,
                      remeasure_repeats=2, study_name="golden", seed=7,
                      out_dir=tmp_path / "runs", heartbeat_s=1)
    quiet = Console(file=(tmp_path / "progress.txt").open("w"))
    tune_command(cfg, settings, Console(file=(tmp_path / "out.txt").open("w")), quiet, make)
    shape = shape_of(cfg.run_dir)
    if os.environ.get("TUNER_WRITE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(shape, indent=1, sort_keys=True) + "\n")
    assert shape == json.loads(GOLDEN.read_text())
