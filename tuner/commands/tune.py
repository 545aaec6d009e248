"""``tune --engine E --workload W``: the whole study, end to end."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from rich.console import Console

from tuner.commands.prepare import EngineFactory, prepare, real_engines
from tuner.core import ConfigError, Settings, load_yaml
from tuner.host import running_on, stops_when_full
from tuner.launch import guarded
from tuner.study import RunFolder, StudyConfig, StudyProgress, ranked, run_search
from tuner.study.repeats import remeasure_study
from tuner.study.results import StudySummary
from tuner.ui import conclude, progress_display

log = logging.getLogger(__name__)


def tune_command(cfg: StudyConfig, settings: Settings, console: Console,
                 progress_console: Console, engine_factory: EngineFactory = real_engines
                 ) -> StudySummary:
    with stops_when_full(cfg.run_dir):  # one line; the finished trials are kept
        return _tune(cfg, settings, console, progress_console, engine_factory)


def _tune(cfg: StudyConfig, settings: Settings, console: Console,
          progress_console: Console, engine_factory: EngineFactory) -> StudySummary:
    t_start = time.monotonic()
    prep = prepare(cfg, settings, engine_factory)
    spec, hw, eng_version = prep.spec, prep.hardware, prep.engine_version
    state = StudyProgress()
    with guarded(prep.launcher), running_on(hw.client_cpus, realtime=hw.client_realtime), \
            progress_display(console, progress_console) as progress:
        if prep.removed:
            progress.note(f"removed {len(prep.removed)} orphaned engine(s) of an earlier run")
        progress.status("study", f"{cfg.name}: {spec.display_name} {eng_version} on "
                        f"{hw.describe()}")
        ctx = prep.context(progress)
        study = run_search(cfg, ctx, prep.tracker, state, start_tracking=prep.start_tracking)
        finished = remeasure_study(cfg, ctx, study, state,
                                   prep.noise.spread if prep.noise else None)
    return conclude(prep, state, study, finished, t_start, console)


def parse_enqueue(path: Path | None) -> list[dict[str, object]]:
    if path is None:
        return []
    data = load_yaml(path)
    items = data if isinstance(data, list) else [data]
    if not all(isinstance(i, dict) for i in items):
        raise ConfigError(f"{path}: give a mapping of knob values, or a list of them")
    return items


WARM_START_TOP = 3


def warm_start_configs(study_dir: Path | None, engine: str) -> list[dict[str, object]]:
    """The best configurations of another study of ``engine`` (another workload or model),
    cheapest first, to try first: a study that starts where another ended."""
    if study_dir is None:
        return []
    folder = RunFolder(study_dir)
    config = folder.config
    if not config.is_file():
        raise ConfigError(f"--warm-start {study_dir}: not a study folder (no config.json); give "
                          "a folder tune wrote, such as tune-runs/<study>")
    theirs = json.loads(config.read_text()).get("engine")
    if theirs != engine:
        raise ConfigError(f"--warm-start {study_dir}: a study of {theirs!r}, not {engine!r}; "
                          f"give a study of {engine}")
    results = folder.load_trials()
    return [{k: v for k, v in r.config.items() if v is not None}
            for r in ranked(results) if not r.defaults][:WARM_START_TOP]

