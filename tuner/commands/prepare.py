"""The composition root of a study: specs, host, model, launcher, measurer and tracker.

Shared by ``tune`` (one engine) and ``tune compare`` (several). Bad input surfaces here, as
one-line ConfigErrors, before any engine starts.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from tuner import __version__
from tuner.commands.named_config import check_config
from tuner.core import ConfigError, Settings, without_password
from tuner.engines import EngineSpec, ModelInfo, load_engine_spec, load_model_info
from tuner.host import Hardware, busy_now, detect, program_version, reporting_warning
from tuner.launch import DockerLauncher, GpuPool, Launcher, ProcessLauncher
from tuner.loadgen import Progress
from tuner.study import (
    HttpMeasurer,
    Measurer,
    SearchSpace,
    StudyConfig,
    TrialContext,
    check_baseline,
    check_enqueued,
    load_search_space,
)
from tuner.study.results import NoiseRecord, load_noise_record, write_host
from tuner.tracking import MlflowTracker, Outbox
from tuner.workload import Workload, load_workload, workload_sha256

log = logging.getLogger(__name__)


def engine_version(spec: EngineSpec) -> str:
    """The installed engine's version: its Python package's, or what its program prints."""
    for dist in spec.distributions:
        try:
            return f"{dist} {version(dist)}"
        except PackageNotFoundError:
            continue
    argv = spec.process.version_argv if spec.process else []
    printed = program_version(argv) if argv else None
    return f"{argv[0]} {printed}" if printed else "unknown"


@dataclass
class Prepared:
    cfg: StudyConfig
    workload: Workload
    spec: EngineSpec
    space: SearchSpace
    hardware: Hardware
    model: ModelInfo
    launcher: Launcher
    tracker: MlflowTracker
    served_name: str
    engine_version: str
    settings: Settings
    removed: list[str]
    tracking_params: dict[str, str]
    measurer: Measurer | None = None
    """The measurer the composition root gave; None: the HTTP measurer, made per context."""
    noise: NoiseRecord | None = None
    """What ``tune measure`` recorded of this host and engine's start-to-start noise."""

    def start_tracking(self, parent_id: str | None = None) -> str:
        """The study's MLflow parent run (the stored one when given); its id."""
        return self.tracker.start_study(self.cfg.name, tags={"tuner.engine": self.spec.name},
                                        params=self.tracking_params, parent_id=parent_id)

    def busy_gpus(self) -> dict[str, str]:
        """The GPUs other jobs hold now: memory or processes on them, or another tuner's
        containers on them (which may not have allocated anything yet)."""
        others = (self.launcher.foreign_gpus() if isinstance(self.launcher, DockerLauncher)
                  else {})
        return {**others, **busy_now()}

    def context(self, progress: Progress) -> TrialContext:
        """What the trials share, made as the run begins (every check of the input done): a
        CPU host that hands freed memory back to its hypervisor is named here, once a study."""
        hw, settings, cfg = self.hardware, self.settings, self.cfg
        slow_memory = reporting_warning(hw.page_reporting_order) if hw.device == "cpu" else None
        if slow_memory:
            progress.note(f"note: {slow_memory}")
        pool = GpuPool([g.uuid for g in hw.gpus], busy=self.busy_gpus) if hw.gpus else None
        secret = {"HF_TOKEN": settings.hf_token} if settings.hf_token else {}
        measurer = self.measurer or HttpMeasurer(
            spec=self.spec, workload=self.workload, served_name=self.served_name,
            tokenizer=Path(self.model.path), models_dir=settings.models_dir,
            startup_timeout_s=cfg.startup_timeout_s, progress=progress, workers=cfg.workers)
        return TrialContext(spec=self.spec, space=self.space, workload=self.workload,
                            hardware=hw, model=self.model, model_ref=cfg.model,
                            served_name=self.served_name, launcher=self.launcher,
                            measurer=measurer, run_dir=cfg.run_dir, progress=progress,
                            secret_env=secret, labels={"tuner.study": cfg.name},
                            gpu_pool=pool)


def local_artifacts(uri: str) -> Path | None:
    """With a local SQLite store, artifacts go beside it (MLflow's default is ./mlruns, in
    whatever folder the tool was started from); remote stores keep their own."""
    if uri.startswith("sqlite:///"):
        return Path(uri.removeprefix("sqlite:///")).parent / "mlartifacts"
    return None


EngineFactory = Callable[[StudyConfig, Settings], tuple[Launcher, Measurer | None]]
"""What starts and measures a study's engines: a launcher, and a measurer (None: the HTTP
measurer, made for each trial context). The one seam where the engines are chosen: the CLI
passes :func:`real_engines`; tests pass fakes to the commands, or to :func:`tuner.cli.main`
in a process of their own (tests/integration/fake_tune.py)."""


def make_launcher(cfg: StudyConfig, settings: Settings) -> Launcher:
    if cfg.launcher == "docker":
        return DockerLauncher(tag=cfg.image_tag, image=cfg.image, network=cfg.network,
                              settings=settings)
    return ProcessLauncher(cache_root=settings.cache_dir, memory_gib=settings.engine_memory_gib)


def real_engines(cfg: StudyConfig, settings: Settings) -> tuple[Launcher, Measurer | None]:
    """The engines a user runs: the configured launcher, the HTTP measurer."""
    return make_launcher(cfg, settings), None


def host_for(cfg: StudyConfig, settings: Settings) -> Hardware:
    """The host; on a CPU host its cores split between engine and load generator unless
    TUNER_PIN_CORES=0 (the commands pin the generator with ``running_on``)."""
    hw = detect(None if cfg.device == "auto" else cfg.device, pin_cores=settings.pin_cores)
    if cfg.device == "gpu" and not hw.gpus:
        raise ConfigError("--device gpu: this host has no GPU that nvidia-smi can see; use "
                          "--device cpu (or auto)")
    if cfg.parallel > 1 and not hw.gpus:
        raise ConfigError("--parallel needs GPUs: on a CPU host, trials at once would share cores "
                          "and measure each other; use --parallel 1")
    return hw


def with_resolution(workload: Workload, resolution: float | None) -> Workload:
    """The workload with the command line's ``--resolution``, which wins over its
    ``capacity.resolution`` (or ``tolerance``), saying so in one line when it had one."""
    if resolution is None:
        return workload
    given = workload.capacity.model_fields_set & {"resolution", "tolerance"}
    if given:
        log.warning("--resolution %g wins over the workload's capacity.%s (±%g)", resolution,
                    sorted(given)[0], workload.capacity.search_resolution())
    capacity = workload.capacity.model_copy(update={"resolution": resolution})
    return workload.model_copy(update={"capacity": capacity})


def paired_unit_s(workload: Workload, noise: NoiseRecord | None) -> tuple[float, str] | None:
    """The time one paired unit (a fresh start of the defaults and one of a candidate) takes
    on this host, and what the figure rests on: ``tune measure``'s record of a start here, or
    else the least the capacity search can take (two steps a start, which bracket; the
    engine's start-up not counted); None when neither is known."""
    if noise is not None and noise.start_s is not None:
        return 2 * noise.start_s, (f"a fresh start of {noise.engine} took {noise.start_s:.0f} s "
                                   f"here (tune measure, {noise.measured_at[:10]})")
    step = workload.capacity.step_duration_s or workload.stop.duration_s
    if step is None:
        return None
    return 2 * 2 * step, (f"at least two steps of {step:g} s a start, not counting the "
                          "engine's start-up")


def check_time_budget(cfg: StudyConfig, workload: Workload, noise: NoiseRecord | None) -> None:
    """A time budget that cannot hold one paired unit is bad input (the verdict against the
    defaults needs at least one)."""
    need = paired_unit_s(workload, noise)
    if cfg.time_budget_s is None or cfg.remeasure_top == 0 or need is None:
        return
    seconds, why = need
    if cfg.time_budget_s < seconds:
        raise ConfigError(f"--time-budget {cfg.time_budget_s:g} is too small for one paired "
                          f"unit (a fresh start of the defaults and one of a candidate): {why}, "
                          f"so a pair needs about {seconds:.0f} s; give --time-budget "
                          f"{math.ceil(seconds)} or more")


def served_name(cfg: StudyConfig, spec: EngineSpec, workload: Workload) -> str:
    """The model name requests give: ``--served-name``, else the workload's model; for an
    engine with no option to name it, the model as the engine is started with it."""
    if not spec.serves_model_path:
        return cfg.served_name or workload.model
    if cfg.served_name:
        raise ConfigError(f"--served-name {cfg.served_name}: {spec.display_name} has no option "
                          "to name the model it serves (requests name it by --model); leave "
                          "--served-name out")
    if cfg.launcher == "docker" and spec.container is not None:
        return spec.container.model_mount
    return cfg.model


def prepare(cfg: StudyConfig, settings: Settings,
            engine_factory: EngineFactory = real_engines) -> Prepared:
    workload = with_resolution(load_workload(cfg.workload), cfg.resolution)
    spec = load_engine_spec(cfg.engine)
    space = load_search_space(cfg.search_space or cfg.engine)
    if space.engine != spec.name:
        raise ConfigError(f"search space is for {space.engine!r}, not {spec.name!r}; pass "
                          "--search-space for this engine")
    space.check_against(spec)
    hw = host_for(cfg, settings)
    model = load_model_info(cfg.model)
    space = space.for_host(hw, model, cfg.parallel).for_mode(
        spec, "container" if cfg.launcher == "docker" else "process")
    check_enqueued(cfg.enqueue, spec, space)
    if cfg.baseline is not None:
        check_baseline(cfg.baseline.knobs, spec, space)
        check_config(cfg.baseline.knobs, "--baseline", spec, hw, model,
                     workload.max_request_tokens())
    eng_version = engine_version(spec)
    noise = load_noise_record(settings.cache_dir, spec.name, eng_version, hw.describe())
    check_time_budget(cfg, workload, noise)
    launcher, measurer = engine_factory(cfg, settings)
    image, image_ref = "none", None
    if isinstance(launcher, DockerLauncher):  # a missing image is bad input, before any trial
        found = launcher.ensure_image(launcher.image_for(spec, hw.device))
        image, image_ref = f"{found['image']} ({found['image_digest']})", found["image"]
    if isinstance(launcher, ProcessLauncher):  # so is a missing program
        launcher.check_program(spec)
    removed = launcher.cleanup_orphans()
    cfg.run_dir.mkdir(parents=True, exist_ok=True)
    cfg.folder.config.write_text(cfg.model_copy(update={  # no password written
        "storage": cfg.storage and without_password(cfg.storage),
        "tracking_uri": cfg.tracking_uri and without_password(cfg.tracking_uri),
    }).model_dump_json(indent=2))
    tracker = MlflowTracker(cfg.tracking, local_artifacts(cfg.tracking),
                            outbox=Outbox(cfg.folder.outbox))
    served = served_name(cfg, spec, workload)
    write_host(cfg.folder, hardware=hw, served_name=served, image=image_ref,
               engine_version=eng_version)
    params = {
        "engine": spec.name, "engine_version": eng_version, "model": cfg.model,
        "served_name": served, "workload": str(cfg.workload),
        "workload_sha256": workload_sha256(cfg.workload) or "", "hardware": hw.describe(),
        "hardware_json": hw.model_dump_json(), "tuner_version": __version__,
        "launcher": cfg.launcher, "image": image, "seed": str(cfg.seed),
        "parallel": str(cfg.parallel), "slo": workload.slo.model_dump_json(),
        "usd_per_hour": str(workload.cost.usd_per_hour)}
    return Prepared(cfg=cfg, workload=workload, spec=spec, space=space, hardware=hw,
                    model=model, launcher=launcher, tracker=tracker, served_name=served,
                    engine_version=eng_version, settings=settings, removed=removed,
                    tracking_params=params, measurer=measurer,
                    noise=noise)
