"""The ``tune`` command: parse, build config models, call one library function, exit.

Exit codes: 0 done, 1 runtime failure, 2 bad input (one line naming the field and the fix),
3 measured but no load met the SLOs (``tune bench``), 4 a comparison resolved with nothing to
gain and 5 one left unresolved (``tune measure --against``), 130 interrupted (Ctrl-C or
SIGTERM).
``--debug`` adds tracebacks; it never changes the exit code.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from tuner import __version__, cli_help
from tuner.core import EXIT_INTERRUPTED, RESOLUTION, Settings, TunerError, study_exit_code
from tuner.host import cpu_list, out_of_space, what_filled

if TYPE_CHECKING:
    from tuner.commands.prepare import EngineFactory

T = TypeVar("T")

app = typer.Typer(add_completion=False, no_args_is_help=False, pretty_exceptions_enable=False,
                  rich_markup_mode=None, help=cli_help.TUNE)
out_console = Console()
err = Console(stderr=True)


def fail(message: str, code: int) -> typer.Exit:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def run_cli(fn: Callable[[], T], debug: bool) -> T:
    """Run ``fn``; translate the exception tree into one line and an exit code. ``--debug``
    adds the traceback before that line; the exit code is the same with it or without."""
    try:
        return fn()
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        raise fail("interrupted", EXIT_INTERRUPTED) from None
    except Exception as exc:
        if debug:
            traceback.print_exc()
        if isinstance(exc, TunerError):
            raise fail(str(exc), exc.cli_exit_code) from None
        if out_of_space(exc):  # a command other than a study's (those say more: disk_space)
            filled = what_filled(exc)
            raise fail(f"no space left on the device{f' ({filled})' if filled else ''}: what "
                       "was written whole is kept; free space there and run the command again",
                       1) from None
        hint = "" if debug else " (run with --debug for the traceback)"
        raise fail(f"internal error: {type(exc).__name__}: {exc}{hint}", 1) from None


def start(debug: bool) -> Settings:
    """Logging as asked, and the one Settings object (TUNER_* variables) of this command."""
    logging.getLogger("tuner").setLevel(logging.DEBUG if debug else logging.INFO)
    for noisy in ("httpx", "httpcore", "alembic", "mlflow"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        return Settings()
    except ValidationError as exc:  # a TUNER_* variable is malformed
        first = exc.errors()[0]
        name = "TUNER_" + "_".join(str(p) for p in first["loc"]).upper()
        raise fail(f"environment: {name}={first.get('input')!r}: {first['msg']}; fix or unset "
                   "it", 2) from None


Debug = Annotated[bool, typer.Option("--debug", help="show tracebacks and debug logs")]
Workers = Annotated[int | None, typer.Option(
    help="load-generator processes for open-loop runs; default: as many as the planned "
    "token rate needs, at most one per core the generator has")]


def engine_factory_of(ctx: typer.Context) -> EngineFactory:
    """The engines :func:`main` was given, else the real ones."""
    from tuner.commands.prepare import real_engines

    return ctx.obj if ctx.obj is not None else real_engines


def check_workers(workers: int | None) -> int | None:
    """Load-generator processes: 1 to 64, and no more than the cores this process may run on
    (each worker is one event loop on one core)."""
    if workers is not None and not 1 <= workers <= 64:
        raise fail(f"--workers {workers}: give 1 to 64 processes (or leave it out)", 2)
    cores = os.sched_getaffinity(0)
    if workers is not None and workers > len(cores):
        raise fail(f"--workers {workers}: this process may run on {len(cores)} core(s) "
                   f"({cpu_list(sorted(cores))}); give at most {len(cores)}", 2)
    return workers


@app.callback(invoke_without_command=True)
def tune(
    ctx: typer.Context,
    engine: Annotated[str | None, typer.Option(help="engine to tune (engines/*.yaml)")] = None,
    workload: Annotated[Path | None, typer.Option(help="workload YAML file")] = None,
    model: Annotated[str | None, typer.Option(
        help="model folder (or Hugging Face id in the local cache) the engine serves")] = None,
    trials: Annotated[int, typer.Option(help="launched trials to reach (trial 0 is the "
                                        "engine's defaults)")] = 20,
    time_budget: Annotated[float | None, typer.Option(
        help="seconds after which no new trial starts")] = None,
    budget_usd: Annotated[float | None, typer.Option(
        help="USD after which no new trial starts: engine time x accelerators x the "
        "workload's cost.usd_per_hour, over the finished trials")] = None,
    launcher: Annotated[str, typer.Option(help="process or docker")] = "process",
    image: Annotated[str | None, typer.Option(
        help="container image (docker); default: the engine spec's image")] = None,
    image_tag: Annotated[str | None, typer.Option(help="engine image tag (docker)")] = None,
    network: Annotated[str, typer.Option(
        help="docker networking: host (a free port) or publish (127.0.0.1 only)")] = "host",
    study_name: Annotated[str | None, typer.Option(
        help="default: <engine>-<workload file name>")] = None,
    storage: Annotated[str | None, typer.Option(
        help="Optuna storage URL; default: SQLite in the output folder")] = None,
    tracking_uri: Annotated[str | None, typer.Option(
        help="MLflow tracking URI; default: SQLite in the output folder")] = None,
    out: Annotated[Path, typer.Option(help="output folder (one sub-folder per study)")
                   ] = Path("tune-runs"),
    seed: Annotated[int, typer.Option(help="sampler seed")] = 0,
    sampler: Annotated[str, typer.Option(
        help="the search's sampler: tpe, tpe-multivariate, gp (needs torch), random, qmc or "
        "cmaes")] = "tpe",
    intensify: Annotated[bool, typer.Option(
        help="measure a trial that beats the best so far again on a fresh start (counted "
        "toward --trials) before it can lead")] = False,
    search_space: Annotated[Path | None, typer.Option(
        help="search space YAML; default: search_spaces/<engine>.yaml")] = None,
    remeasure_top: Annotated[int, typer.Option(
        help="best configurations to measure again on fresh starts, with the defaults "
        "(0: no re-measurement)")] = 2,
    repeats: Annotated[int, typer.Option(
        help="fresh starts per re-measured config (two or more: the interval then includes "
        "how much a restart moves the capacity)")] = 2,
    race: Annotated[int | None, typer.Option(
        help="race the re-measurement: after --repeats, add a fresh start of the defaults "
        "and of each candidate whose verdict against them is not yet decided at "
        "--resolution, a repeat at a time, up to this many starts each or until the time "
        "budget ends (default: no race)")] = None,
    resolution: Annotated[str | None, typer.Option(
        help="the smallest relative difference the capacity search and the verdict against "
        "the defaults resolve (0 to 0.5); default: the workload's capacity.resolution, 0.05"
        )] = None,
    enqueue: Annotated[Path | None, typer.Option(
        help="YAML of configurations (or a list of them) to try first")] = None,
    warm_start: Annotated[Path | None, typer.Option(
        help="a study folder of the same engine (another workload or model): its best "
        "configurations are tried first")] = None,
    baseline: Annotated[str | None, typer.Option(
        help="your current configuration, measured and re-measured beside the defaults and "
        "every verdict given against it too: a knob YAML, a best_config.yaml, a file tune "
        "export wrote, or a file holding the engine's command line as you run it")] = None,
    device: Annotated[str, typer.Option(help="auto, cpu or gpu")] = "auto",
    parallel: Annotated[int, typer.Option(
        help="trials at once on a GPU host, each on its own devices")] = 1,
    startup_timeout: Annotated[float | None, typer.Option(
        help="seconds to wait for an engine; default: the engine spec's")] = None,
    served_name: Annotated[str | None, typer.Option(
        help="model name the engine serves; default: the workload's model")] = None,
    workers: Workers = None,
    heartbeat: Annotated[int, typer.Option(
        help="seconds between a running trial's heartbeats in the storage; a trial silent "
        "for 4 of them (its worker died) is failed and run again by another")] = 30,
    verdict_exit: Annotated[bool, typer.Option(
        help="end with the verdict's exit code: 0 a resolved win over the defaults, 4 "
        "nothing beats them by more than --resolution, 5 unresolved (or nothing "
        "re-measured)")] = False,
    debug: Debug = False,
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, help="print the tuner's version and exit")] = False,
) -> None:
    """Tune an engine on a workload: search, re-measure, report the tuning delta."""
    if version:
        typer.echo(f"tune {__version__}")
        raise typer.Exit(0)
    if ctx.invoked_subcommand is not None:
        return
    settings = start(debug)
    missing = [n for n, v in (("--engine", engine), ("--workload", workload), ("--model", model))
               if v is None]
    if missing:
        if engine is None and workload is None and model is None:
            typer.echo(ctx.get_help())
            raise typer.Exit(0)
        raise fail(f"{', '.join(missing)} missing: tune --engine vllm --workload w.yaml "
                   "--model DIR", 2)

    verdict_code = 0

    def go() -> None:
        nonlocal verdict_code
        from tuner.commands.named_config import baseline_of
        from tuner.commands.tune import parse_enqueue, tune_command, warm_start_configs
        from tuner.core import parse_resolution, validate
        from tuner.study import StudyConfig

        cfg = validate(StudyConfig, dict(
            engine=engine, workload=workload, model=model, trials=trials,
            time_budget_s=time_budget, budget_usd=budget_usd, launcher=launcher, image=image,
            image_tag=image_tag,
            network=network, study_name=study_name, storage=storage,
            tracking_uri=tracking_uri or settings.tracking_uri, out_dir=out, seed=seed,
            sampler=sampler, intensify=intensify, search_space=search_space,
            remeasure_top=remeasure_top,
            remeasure_repeats=repeats, race_repeats=race,
            resolution=None if resolution is None else parse_resolution(resolution),
            enqueue=parse_enqueue(enqueue) + warm_start_configs(warm_start, engine or ""),
            baseline=baseline_of(baseline, engine or ""), device=device, parallel=parallel,
            startup_timeout_s=startup_timeout, served_name=served_name, workers=workers,
            heartbeat_s=heartbeat), "options")
        summary = tune_command(cfg, settings, out_console, err, engine_factory_of(ctx))
        if verdict_exit:
            verdict_code = study_exit_code(summary.verdict_kind)

    run_cli(go, debug)
    if verdict_code:
        raise typer.Exit(verdict_code)


Study = Annotated[str, typer.Option("--study", help="the study's name in the storage")]
SharedTracking = Annotated[str | None, typer.Option(
    "--tracking-uri", "--tracking", help="the study's MLflow tracking server (its host and "
    "summary); default: the one the study recorded, when it is a server")]
Storage = Annotated[str, typer.Option(
    help="the study's Optuna storage URL, e.g. postgresql://user:pw@db:5432/tuner")]


@app.command(help=cli_help.WORKER)
def worker(
    ctx: typer.Context,
    study: Study,
    storage: Storage,
    launcher: Annotated[str, typer.Option(help="process or docker (this host's)")] = "process",
    parallel: Annotated[int, typer.Option(
        help="trials at once on this host's GPUs, each on its own devices")] = 1,
    out: Annotated[Path, typer.Option(help="this host's output folder (engine logs, "
                                      "records)")] = Path("tune-runs"),
    tracking_uri: Annotated[str | None, typer.Option(
        help="MLflow tracking URI; default: the study's")] = None,
    image: Annotated[str | None, typer.Option(help="container image (docker)")] = None,
    image_tag: Annotated[str | None, typer.Option(help="engine image tag (docker)")] = None,
    network: Annotated[str, typer.Option(
        help="docker networking: host or publish")] = "host",
    workers: Workers = None,
    debug: Debug = False,
) -> None:
    """Join a study from another host: take its trials until its budget is spent."""
    settings = start(debug)

    def go() -> None:
        from tuner.commands.worker import worker_command

        worker_command(study, storage, out=out, launcher=launcher, parallel=parallel,
                       tracking_uri=tracking_uri or settings.tracking_uri,
                       host={"image": image, "image_tag": image_tag, "network": network,
                             "workers": check_workers(workers)},
                       settings=settings, console=out_console, progress_console=err,
                       engine_factory=engine_factory_of(ctx))

    run_cli(go, debug)


@app.command(help=cli_help.STATUS)
def status(study: Study, storage: Storage, debug: Debug = False) -> None:
    """A study's trials (done, running where, failed), its best so far and the time left."""
    from tuner.commands.status import status_command

    start(debug)
    run_cli(lambda: status_command(study, storage, out_console), debug)


@app.command(help=cli_help.BENCH)
def bench(
    endpoint: Annotated[str, typer.Option(help="base URL of an OpenAI-compatible server",
                                          metavar="URL")],
    workload: Annotated[Path, typer.Option(help="workload YAML file", metavar="FILE")],
    find_capacity: Annotated[bool, typer.Option(
        "--find-capacity", help="search the highest load that meets the SLOs")] = False,
    json_path: Annotated[Path | None, typer.Option(
        "--json", help="write every figure here, and the per-request records next to it",
        metavar="FILE")] = None,
    tokenizer: Annotated[Path | None, typer.Option(
        help="folder holding tokenizer.json; default: from the workload or the model")] = None,
    metrics_url: Annotated[str | None, typer.Option(
        help="Prometheus endpoint; default: <endpoint>/metrics")] = None,
    load: Annotated[float | None, typer.Option(
        help="the load instead of the workload's: its arrival rate (req/s; sessions/s for "
        "conversations) or concurrency; a capacity search starts there", min=0.001,
        metavar="LOAD")] = None,
    duration: Annotated[float | None, typer.Option(
        help="seconds instead of the workload's stop", min=0.001, metavar="SECONDS")] = None,
    seed: Annotated[int | None, typer.Option(
        help="the workload's seed instead of the file's (lengths, send times, prompts)",
        min=0, metavar="N")] = None,
    epoch: Annotated[int | None, typer.Option(
        help="prompts of this epoch (recorded in the JSON), to send the same requests again; "
        "default: fresh prompts each run, so a run never hits what an earlier one left in the "
        "server's prefix cache", min=0, metavar="N")] = None,
    workers: Workers = None,
    transport: Annotated[str | None, typer.Option(
        help="the load's httpx transport: raw (the default, the cheapest per token), aiohttp "
        "or httpx (httpx's own); proxies come from HTTP(S)_PROXY/ALL_PROXY/NO_PROXY, loopback "
        "excepted, and only aiohttp and httpx can use one", metavar="NAME")] = None,
    debug: Debug = False,
) -> None:
    """Replay a workload against a running server and report what it sustains."""
    from tuner.commands.bench import Overrides, bench_command

    settings = start(debug)
    overrides = Overrides(load=load, duration_s=duration, seed=seed, epoch=epoch)
    run_cli(lambda: bench_command(endpoint, workload, find_capacity=find_capacity,
                                  json_path=json_path, tokenizer=tokenizer,
                                  metrics_url=metrics_url, settings=settings,
                                  console=out_console, progress_console=err,
                                  workers=check_workers(workers), overrides=overrides,
                                  transport=transport), debug)


@app.command(help=cli_help.COMPARE)
def compare(
    ctx: typer.Context,
    engines: Annotated[str, typer.Option(help="engines to compare, comma-separated")],
    workload: Annotated[Path, typer.Option(help="workload YAML file (drives every engine)")],
    model: Annotated[list[str], typer.Option(
        help="model folder for all engines, or ENGINE=DIR per engine (repeatable)",
        metavar="DIR|ENGINE=DIR")],
    trials: Annotated[int, typer.Option(help="launched trials per engine study")] = 10,
    repeats: Annotated[int, typer.Option(
        help="fresh starts per re-measured configuration (defaults and tuned, per engine; "
        "two or more: the interval then includes how much a restart moves the capacity)")
    ] = 2,
    out: Annotated[Path, typer.Option(help="output folder")] = Path("tune-runs"),
    seed: Annotated[int, typer.Option(help="sampler and bootstrap seed")] = 0,
    tracking_uri: Annotated[str | None, typer.Option(
        help="MLflow tracking URI; default: SQLite in the comparison folder")] = None,
    launcher: Annotated[str, typer.Option(help="process or docker")] = "process",
    debug: Debug = False,
) -> None:
    """Tuning delta vs engine delta: tune (or reuse) each engine, measure, report."""
    from tuner.commands.compare import compare_command

    settings = start(debug)
    names = [e.strip() for e in engines.split(",") if e.strip()]

    def models() -> dict[str, str]:
        pairs = [m.split("=", 1) if "=" in m else ["*", m] for m in model]
        given = dict(pairs)
        if "*" in given:
            return {e: given.get(e, given["*"]) for e in names}
        return given

    run_cli(lambda: compare_command(names, workload, models(), trials=trials, repeats=repeats,
                                    out=out, seed=seed, tracking_uri=tracking_uri,
                                    launcher=launcher, settings=settings,
                                    console=out_console, progress_console=err,
                                    engine_factory=engine_factory_of(ctx)), debug)


@app.command(help=cli_help.MEASURE)
def measure(
    ctx: typer.Context,
    engine: Annotated[str, typer.Option(help="engine to measure (engines/*.yaml)")],
    workload: Annotated[Path, typer.Option(help="workload YAML file")],
    model: Annotated[str, typer.Option(help="model folder the engine serves")],
    repeats: Annotated[int, typer.Option(help="fresh engine starts")] = 3,
    config: Annotated[str, typer.Option(
        help="'defaults', a YAML file of knob values, a study's best_config.yaml, a file tune "
        "export wrote, or a file holding the engine's command line as you run it")
    ] = "defaults",
    study_dir: Annotated[Path | None, typer.Option(
        help="a study's folder, to measure one of its trials (with --trial)")] = None,
    trial: Annotated[int | None, typer.Option(help="a trial number of --study-dir")] = None,
    launcher: Annotated[str, typer.Option(help="process or docker")] = "process",
    image: Annotated[str | None, typer.Option(help="container image (docker)")] = None,
    out: Annotated[Path, typer.Option(help="output folder")] = Path("tune-runs"),
    device: Annotated[str, typer.Option(help="auto, cpu or gpu")] = "auto",
    startup_timeout: Annotated[float | None, typer.Option(
        help="seconds to wait for an engine; default: the engine spec's")] = None,
    served_name: Annotated[str | None, typer.Option(
        help="model name the engine serves; default: the workload's model")] = None,
    tracking_uri: Annotated[str | None, typer.Option(
        help="MLflow tracking URI; default: SQLite in the output folder")] = None,
    against: Annotated[str | None, typer.Option(
        help="measure --config side by side against this (named as --config is): --repeats "
        "pairs of interleaved fresh starts and the verdict of the pairs")] = None,
    resolution: Annotated[str, typer.Option(
        help="with --against: the smallest difference the verdict decides (relative, "
        "between 0 and 0.5)")] = str(RESOLUTION),
    resume: Annotated[Path | None, typer.Option(
        help="go on with the measurement in this folder (one tune measure wrote, stopped or "
        "finished) up to --repeats in all, with the same options; instead of --out")] = None,
    debug: Debug = False,
) -> None:
    """Start one configuration N times; print each capacity and cost, and their noise."""
    settings = start(debug)
    verdict_code = 0

    def go() -> None:
        nonlocal verdict_code
        from tuner.commands.measure import exit_code, measure_command
        from tuner.commands.named_config import named_config, trial_config
        from tuner.core import ConfigError, parse_resolution, validate
        from tuner.engines import load_engine_spec
        from tuner.study import StudyConfig
        from tuner.study.repeats import Side

        if repeats < 1:
            raise ConfigError(f"--repeats {repeats}: give at least 1 (fresh starts, or pairs "
                              "of them with --against)")
        share = parse_resolution(resolution)
        spec = load_engine_spec(engine)
        chosen = (trial_config(study_dir, trial) if trial is not None
                  else named_config(config, spec))
        other = None
        if against is not None:
            theirs = named_config(against, spec, flag="--against")
            other = Side(name=theirs.name, config=theirs.knobs, defaults=theirs.defaults)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        folder = (out, f"measure-{engine}-{workload.stem}-{stamp}") if resume is None else (
            resume.parent, resume.name)
        cfg = validate(StudyConfig, dict(
            engine=engine, workload=workload, model=model, trials=repeats, launcher=launcher,
            image=image, out_dir=folder[0], study_name=folder[1],
            tracking_uri=tracking_uri or settings.tracking_uri, device=device,
            startup_timeout_s=startup_timeout, served_name=served_name), "options")
        report = measure_command(cfg, settings, config=chosen.knobs, defaults=chosen.defaults,
                                 repeats=repeats, console=out_console, progress_console=err,
                                 engine_factory=engine_factory_of(ctx), against=other,
                                 resolution=share, name=chosen.name,
                                 resume=resume is not None)
        if other is not None:
            verdict_code = exit_code(report)

    run_cli(go, debug)
    if verdict_code:
        raise typer.Exit(verdict_code)


@app.command(help=cli_help.REPORT)
def report(
    folder: Annotated[Path | None, typer.Option(
        "--dir", help="a folder `tune compare` wrote, or a study's folder (tune-runs/<study>)")
                      ] = None,
    storage: Annotated[str | None, typer.Option(
        help="a shared study's Optuna storage URL (with --study), read from any machine")
                       ] = None,
    study: Annotated[str | None, typer.Option(
        "--study", help="the shared study's name in --storage")] = None,
    tracking_uri: SharedTracking = None,
    out: Annotated[Path, typer.Option(help="with --storage: write the report's files under "
                                      "OUT/<study>/")] = Path("tune-runs"),
    debug: Debug = False,
) -> None:
    """Rebuild a comparison's report, or show a study's trade-offs (cost vs p95 TTFT/ITL)."""
    from tuner.commands.report import report_command, shared_report_command

    settings = start(debug)

    def go() -> None:
        from tuner.core import ConfigError

        if storage is not None or study is not None:
            name, url = shared_source(storage, study, folder)
            shared_report_command(name, url, tracking_uri or settings.tracking_uri, out,
                                  out_console)
        elif folder is None:
            raise ConfigError("give --dir FOLDER (a folder tune or tune compare wrote), or "
                              "--storage URL --study NAME (a shared study)")
        else:
            report_command(folder, out_console)

    run_cli(go, debug)


def shared_source(storage: str | None, study: str | None, folder: Path | None
                  ) -> tuple[str, str]:
    """A shared study's name and storage URL, both given (and no --dir beside them)."""
    from tuner.core import ConfigError

    if folder is not None:
        raise ConfigError("--dir and --storage both name the study: give one of them")
    if storage is None or study is None:
        raise ConfigError("--storage and --study go together: give the storage URL and the "
                          "study's name in it")
    return study, storage


@app.command(help=cli_help.EXPORT)
def export(
    study: Annotated[str, typer.Option("--study", help="the study's folder (tune-runs/<study>), "
                                       "or with --storage its name there")],
    fmt: Annotated[str, typer.Option(
        "--format", help="command, docker, k8s (Deployment + Service), helm (vLLM production "
        "stack values) or kserve (ServingRuntime + InferenceService)")],
    pick: Annotated[str | None, typer.Option(
        help="a point of the study's Pareto front: cheapest, fastest, or bounds such as "
        "'ttft_p95_ms<=300,itl_p95_ms<=40'; default: the study's winner")] = None,
    trial: Annotated[int | None, typer.Option(
        help="export this trial of the folder instead, whatever its outcome")] = None,
    out: Annotated[Path | None, typer.Option(help="write here; default: standard output")
                   ] = None,
    image: Annotated[str | None, typer.Option(
        help="engine image; default: the one the trial ran, else the engine spec's")] = None,
    name: Annotated[str | None, typer.Option(
        help="container / Kubernetes name; default: <study>-t<trial>")] = None,
    port: Annotated[int, typer.Option(help="port the engine serves on")] = 8000,
    cpu: Annotated[int, typer.Option(help="cores a Kubernetes replica requests")] = 4,
    memory: Annotated[str, typer.Option(help="memory a Kubernetes replica requests")] = "16Gi",
    model_pvc: Annotated[str | None, typer.Option(
        help="Kubernetes PersistentVolumeClaim holding the model folder; default: "
        "<name>-model")] = None,
    host_network: Annotated[bool, typer.Option(
        "--host-network", help="docker: share the host's network (--network host) instead of "
        "publishing the port, for a daemon with no bridge network")] = False,
    storage: Annotated[str | None, typer.Option(
        help="a shared study's Optuna storage URL: --study is its name there")] = None,
    tracking_uri: SharedTracking = None,
    debug: Debug = False,
) -> None:
    """Write a study's chosen configuration as what you deploy (checked before it is written)."""
    settings = start(debug)

    def go() -> None:
        from tuner.commands.export import export_command
        from tuner.deploy import Sizing
        from tuner.study.results import StudyFolder

        source: Path | StudyFolder = Path(study)
        if storage is not None:
            from tuner.commands.shared_results import shared_study

            source = shared_study(study, storage, tracking_uri or settings.tracking_uri,
                                  Path("tune-runs"), err)
        text = export_command(source, fmt, pick=pick, image=image, name=name, port=port,
                              sizing=Sizing(cpu=cpu, memory=memory, model_pvc=model_pvc),
                              settings=settings, trial=trial, host_network=host_network)
        if out is None:
            typer.echo(text, nl=False)
        else:
            out.write_text(text)
            err.print(f"wrote {out}", highlight=False)

    run_cli(go, debug)


@app.command(help=cli_help.CLEANUP)
def cleanup(debug: Debug = False) -> None:
    """Remove engines (processes and containers) that a killed tuner left behind; only ours."""
    from tuner.commands.cleanup import cleanup_command

    settings = start(debug)
    run_cli(lambda: cleanup_command(settings, out_console), debug)


workload_app = typer.Typer(help="Workloads from your own traffic.", no_args_is_help=True)
app.add_typer(workload_app, name="workload")


@workload_app.command("fit", help=cli_help.WORKLOAD_FIT)
def workload_fit(
    log: Annotated[Path, typer.Option("--from", help="request log: OpenAI-style JSONL, a "
                                      "Mooncake trace, or CSV timestamp,input_tokens,"
                                      "output_tokens")],
    out: Annotated[Path, typer.Option(help="workload YAML to write (the report beside it)")
                   ] = Path("fitted.yaml"),
    model: Annotated[str, typer.Option(help="model name the workload sends")] = "tiny-llama",
    rate: Annotated[str, typer.Option(help="arrival rate: the log's mean, or its peak "
                                      "minute")] = "mean",
    debug: Debug = False,
) -> None:
    """Fit a workload (classes, lengths, arrivals, prefixes, sessions) to a request log."""
    from tuner.commands.workload_fit import workload_fit_command

    start(debug)
    run_cli(lambda: workload_fit_command(log, out, model=model, rate=rate,
                                         console=out_console), debug)


@app.command("make-model", help=cli_help.MAKE_MODEL)
def make_model(
    out_dir: Annotated[Path | None, typer.Argument(
        help="folder to write the model into; default: $TUNER_CACHE_DIR/models/<shape>")
    ] = None,
    shape: Annotated[str, typer.Option(
        help="the model's shape: tiny-llama, smollm2-135m, smollm2-360m, qwen2.5-0.5b (or "
             "the part after the dash: 360m)")
    ] = "tiny-llama",
    seed: Annotated[int, typer.Option(help="seed for the tokenizer corpus and weights")] = 0,
    gguf: Annotated[bool, typer.Option(
        "--gguf", help="also write GGUF files for llama.cpp (F16, Q8_0, Q4_0)")] = False,
    debug: Debug = False,
) -> None:
    """Make a random-weight model of a shape (BPE tokenizer trained locally)."""
    from tuner import models

    settings = start(debug)
    chosen = run_cli(lambda: models.shape_named(shape), debug)
    target = out_dir or settings.models_dir / chosen.name
    path = run_cli(lambda: models.make_model(target, chosen.name, seed=seed), debug)
    out_console.print(f"{chosen.name} model in {path}")
    if gguf:
        for variant, file in run_cli(lambda: models.make_gguf_variants(path), debug).items():
            out_console.print(f"GGUF {variant}: {file}")


def main(engines: EngineFactory | None = None) -> None:
    """The ``tune`` command. ``engines``: what starts and measures the engines (the
    composition root's choice; the real ones unless a test's entry script passes fakes)."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        code = app(standalone_mode=False, obj=engines)
    except typer.TyperException as exc:  # an unknown option, a bad value: one line, exit 2
        if exc.format_message().startswith("Usage:"):  # a group given no command: its help
            typer.echo(exc.format_message())
            raise SystemExit(exc.exit_code) from None
        ctx = getattr(exc, "ctx", None)
        where = getattr(ctx, "command_path", None) or "tune"
        raise SystemExit(fail(f"{exc.format_message()} (see {where} --help)",
                              exc.exit_code).exit_code) from None
    except typer.Abort:
        raise SystemExit(fail("interrupted", EXIT_INTERRUPTED).exit_code) from None
    sys.exit(code if isinstance(code, int) else 0)
