"""A study's folder read back (``tune-runs/<study>/``), for what comes after the study.

``config.json`` (the run config), ``host.json`` (this host's side: hardware, served model
name, the engine image a Docker launcher ran), ``trials/trial-NNN.json`` (this host's trials in
full) and, once the study has ended, ``summary.json`` (its winner and its Pareto front over
every worker's trials). Nothing is run and the storage is not opened.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tuner.core import ConfigError
from tuner.host import Hardware
from tuner.study.outcome import TrialResult
from tuner.study.results.pareto import TradeOff, pareto_front, tradeoff_points
from tuner.study.run_folder import HOST, RunFolder


@dataclass(frozen=True)
class StudyFolder:
    path: Path
    config: dict[str, Any]
    host: dict[str, Any]
    trials: list[TrialResult] = field(default_factory=list)
    kept_front: list[TradeOff] = field(default_factory=list)
    """The front the summary keeps (every worker's trials)."""
    summary: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return str(self.config.get("study_name") or self.path.name)

    @property
    def engine(self) -> str:
        return str(self.config["engine"])

    @property
    def device(self) -> str:
        """cpu or gpu: the host's (older folders: from the summary's hardware line)."""
        hardware = self.host.get("hardware") or {}
        if "device" in hardware:
            return str(hardware["device"])
        if self.config.get("device") in ("cpu", "gpu"):
            return str(self.config["device"])
        if self.summary is not None:
            return "cpu" if str(self.summary.get("hardware", "")).startswith("CPU") else "gpu"
        raise ConfigError(f"{self.path}: nothing says which device the study ran on (no {HOST}, "
                          "no device in its record or summary); run the study again with this "
                          "tuner, or for a shared study give its MLflow server (--tracking-uri)")

    def points(self) -> list[TradeOff]:
        """The feasible trials as points: this host's, and the front the summary keeps of
        every worker's."""
        found = {p.trial: p for p in tradeoff_points(self.trials)}
        for p in self.kept_front:
            found.setdefault(p.trial, p)
        return sorted(found.values(), key=lambda p: p.trial)

    def front(self) -> list[TradeOff]:
        return pareto_front(self.points())

    def winner(self) -> TrialResult | None:
        """The trial the study ended choosing (re-measured winner or cheapest), if it ended."""
        best = (self.summary or {}).get("best_trial")
        return None if best is None else TrialResult.model_validate(best)


def write_host(folder: RunFolder, *, hardware: Hardware, served_name: str, image: str | None,
               engine_version: str) -> Path:
    """This host's side of the study (``host.json``), beside its ``config.json``."""
    path = folder.host
    path.write_text(json.dumps({"hardware": hardware.model_dump(mode="json"),
                                "served_name": served_name, "image": image,
                                "engine_version": engine_version}, indent=2) + "\n")
    return path


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: unreadable ({exc}); point at a folder tune wrote") from exc


def read_study_folder(path: Path) -> StudyFolder:
    folder = RunFolder(path)
    config = folder.config
    if not config.is_file():
        raise ConfigError(f"{path}: not a study folder (no config.json); give a folder tune "
                          "wrote, such as tune-runs/<study>")
    host = folder.host
    summary = folder.summary
    loaded = _json(summary) if summary.is_file() else None
    try:
        trials = folder.load_trials()
        kept = [TradeOff.model_validate(p) for p in (loaded or {}).get("pareto", [])]
    except ValidationError as exc:
        raise ConfigError(f"{path}: a trial record is unreadable ({exc.error_count()} "
                          "problems): it was written by another tuner version") from exc
    return StudyFolder(path=path, config=_json(config),
                       host=_json(host) if host.is_file() else {}, trials=trials,
                       kept_front=kept, summary=loaded)
