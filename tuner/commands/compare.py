"""``tune compare``: is it worth switching engines, or should we tune the one we have?

For each engine: run (or reuse) its study, then measure its defaults and its tuned best again
on fresh starts, interleaved across engines and repeats, on the same seeded requests. The
comparison and its report are rebuilt from the stored files alone by ``tune report``.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel
from rich.console import Console

from tuner.commands.prepare import EngineFactory, Prepared, local_artifacts, prepare, real_engines
from tuner.core import ConfigError, Settings, StudyError, validate
from tuner.engines import load_engine_spec
from tuner.host import running_on
from tuner.launch import guarded
from tuner.metric_registry import TTFT_P95
from tuner.report import (
    Comparison,
    all_plots,
    comparison_verdict,
    engine_deltas,
    engine_result,
    html_page,
    markdown,
    notes,
    operations,
    table,
)
from tuner.study import (
    RunFolder,
    StudyConfig,
    StudyProgress,
    TrialResult,
    cheapest,
    defaults_trial,
    run_search,
)
from tuner.study.repeats import Candidate, MeasuredRun, measure_interleaved
from tuner.tracking import KIND_TAG, MODEL_TRAINING
from tuner.ui import progress_display
from tuner.workload import load_workload


class StudyRef(BaseModel):
    """What the comparison needs to rebuild itself from one engine's study."""

    engine: str
    display_name: str
    engine_version: str
    study_dir: str
    defaults_trial: int | None
    tuned_trial: int | None
    study_run_id: str | None


class CompareInputs(BaseModel):
    workload: str
    seed: int
    studies: list[StudyRef]
    runs: list[MeasuredRun]


def load_trials(study_dir: Path) -> list[TrialResult]:
    return RunFolder(study_dir).load_trials()


def build(inputs: CompareInputs) -> Comparison:
    """The comparison, from the stored studies and re-measurements (nothing runs)."""
    workload_path = Path(inputs.workload)
    workload = load_workload(workload_path)
    resolution = workload.capacity.search_resolution()
    results, samples = [], {}
    for ref in inputs.studies:
        trials = load_trials(Path(ref.study_dir))
        by_number = {t.number: t for t in trials}
        picked = {kind: by_number[n] for kind, n in (("defaults", ref.defaults_trial),
                                                     ("tuned", ref.tuned_trial))
                  if n is not None and n in by_number}
        spec = load_engine_spec(ref.engine)
        ops = operations(trials, maintenance=spec.maintenance,
                         metrics_endpoint=spec.metrics_path is not None)
        result, s = engine_result(ref.engine, ref.display_name, ref.engine_version,
                                  ref.study_dir, trials, picked, inputs.runs, inputs.seed, ops,
                                  resolution)
        results.append(result)
        samples[ref.engine] = s
    deltas = engine_deltas(results, samples, inputs.runs, resolution)
    return Comparison(workload=str(workload_path), slo_ttft_p95_ms=workload.slo.required(TTFT_P95),
                      engines=results, engine_deltas=deltas,
                      verdict=comparison_verdict(results, deltas, resolution),
                      runs=inputs.runs)


def write_report(comparison: Comparison, folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    plots = all_plots(comparison, folder)
    (folder / "compare.json").write_text(json.dumps(comparison.model_dump(mode="json"),
                                                    indent=2) + "\n")
    (folder / "report.md").write_text(markdown(comparison, plots))
    (folder / "report.html").write_text(html_page(comparison, plots))
    return {"compare.json": folder / "compare.json", "report.md": folder / "report.md",
            "report.html": folder / "report.html", **{p.name: p for p in plots.values()}}


def log_to_mlflow(uri: str, name: str, comparison: Comparison, files: dict[str, Path],
                  studies: list[StudyRef]) -> str:
    """A parent run holding the report and plots, tagged with each engine's study run."""
    from mlflow.exceptions import MlflowException  # imported here: 1.6 s, none on bad input
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    try:
        exp = client.get_experiment_by_name(name)
        location = local_artifacts(uri)
        exp_id = exp.experiment_id if exp else client.create_experiment(
            name, artifact_location=location.resolve().as_uri() if location else None,
            tags={KIND_TAG: MODEL_TRAINING})
        tags = {"tuner.role": "compare", "tuner.verdict": comparison.verdict[:500]}
        tags.update({f"tuner.study_run.{s.engine}": s.study_run_id or "" for s in studies})
        run = client.create_run(exp_id, run_name=name, tags=tags)
        for e in comparison.engines:
            if e.tuning_delta is not None:
                client.log_metric(run.info.run_id, f"tuning_delta.{e.engine}",
                                  e.tuning_delta.value)
            t = e.tuning_verdict
            if t is not None and t.low is not None and t.high is not None:
                for key, value in (("ratio", t.ratio), ("ratio_low", t.low),
                                   ("ratio_high", t.high)):
                    client.log_metric(run.info.run_id, f"tuning_delta.{e.engine}.{key}", value)
        for d in comparison.engine_deltas:
            client.log_metric(run.info.run_id, f"engine_delta.{d.kind}.{d.other}",
                              d.ratio.value)
            v = d.verdict
            if v is not None and v.low is not None and v.high is not None:
                for key, value in (("ratio", v.ratio), ("ratio_low", v.low),
                                   ("ratio_high", v.high)):
                    client.log_metric(run.info.run_id,
                                      f"engine_delta.{d.kind}.{d.other}.{key}", value)
        with tempfile.TemporaryDirectory() as tmp:
            for fname, path in files.items():
                (Path(tmp) / fname).write_bytes(path.read_bytes())
            client.log_artifacts(run.info.run_id, tmp)
        client.set_terminated(run.info.run_id, "FINISHED")
        return str(run.info.run_id)
    except MlflowException as exc:
        raise StudyError(f"MLflow at {uri}: {exc.message}") from exc


def compare_command(engines: list[str], workload: Path, models: dict[str, str], *,
                    trials: int, repeats: int, out: Path, seed: int,
                    tracking_uri: str | None, launcher: str,
                    settings: Settings, console: Console, progress_console: Console,
                    engine_factory: EngineFactory = real_engines) -> Comparison:
    if len(engines) < 2:
        raise ConfigError("--engines needs at least two engines, e.g. --engines vllm,llamacpp")
    missing = [e for e in engines if e not in models]
    if missing:
        raise ConfigError(f"no model for {', '.join(missing)}: pass --model DIR for all "
                          "engines or --model ENGINE=DIR for each")
    name = f"compare-{workload.stem}"
    folder = out / name
    uri = (tracking_uri or settings.tracking_uri
           or f"sqlite:///{(folder / 'mlflow.db').resolve()}")
    configs = [validate(StudyConfig, dict(
        engine=e, workload=workload, model=models[e], trials=trials, launcher=launcher,
        out_dir=folder, study_name=f"{e}-{workload.stem}", tracking_uri=uri, seed=seed,
        remeasure_top=0), "options") for e in engines]
    folder.mkdir(parents=True, exist_ok=True)
    preps: list[Prepared] = [prepare(cfg, settings, engine_factory) for cfg in configs]
    refs: list[StudyRef] = []
    cands: list[Candidate] = []
    t0 = time.monotonic()
    with guarded(*{type(p.launcher): p.launcher for p in preps}.values()), \
            running_on(preps[0].hardware.client_cpus,
                       realtime=preps[0].hardware.client_realtime), \
            progress_display(console, progress_console) as progress:
        for prep in preps:
            progress.status("study", f"{prep.cfg.name}: {prep.spec.display_name} "
                            f"{prep.engine_version}")
            ctx = prep.context(progress)
            state = StudyProgress()
            run_search(prep.cfg, ctx, prep.tracker, state, start_tracking=prep.start_tracking)
            found = defaults_trial(state.results)
            defaults = found if found is not None and found.feasible else None
            best = cheapest(state.results)
            tuned = best if best is not None and not best.defaults else None
            for t in (defaults, tuned):
                if t is not None:
                    cands.append(Candidate(prep.spec.name, t, ctx))
            shown = tuned or defaults  # when nothing beat the defaults, they are the tuned best
            refs.append(StudyRef(
                engine=prep.spec.name, display_name=prep.spec.display_name,
                engine_version=prep.engine_version, study_dir=str(prep.cfg.run_dir),
                defaults_trial=defaults.number if defaults else None,
                tuned_trial=shown.number if shown else None,
                study_run_id=prep.tracker.parent_id))
        runs, _ = measure_interleaved(cands, repeats=repeats)
    inputs = CompareInputs(workload=str(workload), seed=seed, studies=refs, runs=runs)
    (folder / "inputs.json").write_text(inputs.model_dump_json(indent=2))
    comparison = build(inputs)
    files = write_report(comparison, folder)
    run_id = log_to_mlflow(uri, name, comparison, files, refs)
    console.print(table(comparison))
    for line in notes(comparison):
        console.print(line)
    console.print(comparison.verdict)
    console.print(f"report in {folder / 'report.html'} and {folder / 'report.md'}; "
                  f"compare.json; MLflow run {run_id} at {uri} "
                  f"({time.monotonic() - t0:.0f}s)")
    return comparison


def report_command(folder: Path, console: Console) -> Comparison:
    """Rebuild the comparison's report from its stored inputs, running nothing."""
    path = folder / "inputs.json"
    if not path.is_file():
        raise ConfigError(f"{path} not found: point --dir at a folder `tune compare` wrote")
    comparison = build(CompareInputs.model_validate_json(path.read_text()))
    write_report(comparison, folder)
    console.print(table(comparison))
    for line in notes(comparison):
        console.print(line)
    console.print(comparison.verdict)
    console.print(f"report rebuilt in {folder}")
    return comparison
