"""``tune worker --study NAME --storage URL``: join a study from another host.

Everything about the study (engine, workload, model, search space, budget, sampler, MLflow
tracking server and parent run) comes from its storage; the launcher, ``--parallel`` and the
output folder are this host's. The worker takes trials until the study's budget is spent,
then takes units of the study's re-measurement until none is left (as every process on the
study does), prints the study's summary and exits.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console

from tuner.commands.prepare import EngineFactory, prepare, real_engines
from tuner.core import Settings
from tuner.host import running_on, stops_when_full
from tuner.launch import guarded
from tuner.study import StudyConfig, StudyProgress, StudyRecord, config_from, run_search
from tuner.study.coordination import ledger, read_record, worker_id
from tuner.study.repeats import remeasure_study
from tuner.ui import conclude, progress_display


def worker_command(name: str, storage: str, *, out: Path, launcher: str, parallel: int,
                   tracking_uri: str | None, host: dict[str, object], settings: Settings,
                   console: Console, progress_console: Console,
                   engine_factory: EngineFactory = real_engines) -> StudyProgress:
    t_start = time.monotonic()
    _, record = read_record(name, storage)
    cfg = config_from(record, name=name, storage=storage, out_dir=out, launcher=launcher,
                      parallel=parallel, tracking_uri=tracking_uri, **host)
    with stops_when_full(cfg.run_dir):  # one line; the finished trials are kept
        return _work(cfg, record, settings, console, progress_console, t_start, engine_factory)


def _work(cfg: StudyConfig, record: StudyRecord, settings: Settings, console: Console,
          progress_console: Console, t_start: float, engine_factory: EngineFactory
          ) -> StudyProgress:
    name = cfg.name
    prep = prepare(cfg, settings, engine_factory)
    hw = prep.hardware
    state = StudyProgress()
    with guarded(prep.launcher), running_on(hw.client_cpus, realtime=hw.client_realtime), \
            progress_display(console, progress_console) as progress:
        if prep.removed:
            progress.note(f"removed {len(prep.removed)} orphaned engine(s) of an earlier run")
        progress.status("study", f"{name} (worker {worker_id()}): {prep.spec.display_name} "
                        f"{prep.engine_version} on {hw.describe()}")
        ctx = prep.context(progress)
        study = run_search(cfg, ctx, prep.tracker, state, create=False,
                           start_tracking=prep.start_tracking)
        finished = remeasure_study(cfg, ctx, study, state,
                                   prep.noise.spread if prep.noise else None)
    led = ledger(study)
    console.print(f"worker {worker_id()} ran {len(state.own)} trial(s) of study {name}; the "
                  f"study has {led.launched} of {record.trials} launched trials done and "
                  f"{led.running} running")
    if finished is not None:
        conclude(prep, state, study, finished, t_start, console)
    return state
