"""``tune export --study DIR --format F``: a study's chosen configuration as what people deploy
(or ``--storage URL --study NAME``: a shared study, read from its storage and tracking server).

The configuration is the study's winner (the re-measured one, or the cheapest trial), a
point of its Pareto front (``--pick cheapest|fastest|ttft_p95_ms<=X``), or one of this host's
trials (``--trial N``), whatever its outcome. Nothing is started.
"""

from __future__ import annotations

from pathlib import Path

from tuner.core import ConfigError, Settings
from tuner.deploy import Chosen, Sizing, Where, dns_name, export_format
from tuner.engines import Device, load_engine_spec
from tuner.launch import image_ref
from tuner.study import TrialResult
from tuner.study.results import (
    StudyFolder,
    TradeOff,
    choose,
    parse_pick,
    read_study_folder,
    tradeoff_points,
)


def target(folder: StudyFolder, pick: str | None, trial: int | None = None
           ) -> TradeOff | TrialResult:
    """The trial to export: trial ``trial``, the pick's point of the front, or the study's
    winner (its cheapest trial while it has no summary)."""
    if trial is not None:
        if pick is not None:
            raise ConfigError("--trial and --pick both choose the trial: give one of them")
        found = next((r for r in folder.trials if r.number == trial), None)
        if found is None:
            have = ", ".join(str(r.number) for r in folder.trials) or "none"
            raise ConfigError(f"--trial {trial}: not among this folder's trials ({have})")
        return found
    if pick is not None:
        return choose(folder.front(), parse_pick(pick))
    winner = folder.winner()
    if winner is not None:
        return winner
    return choose(folder.front(), parse_pick("cheapest"))


def chosen_of(folder: StudyFolder, picked: TradeOff | TrialResult, *, image: str | None,
              name: str | None, port: int, sizing: Sizing) -> Chosen:
    spec = load_engine_spec(folder.engine)
    device: Device = "gpu" if folder.device == "gpu" else "cpu"
    if isinstance(picked, TrialResult):
        number, defaults, knobs = picked.number, picked.defaults, picked.config
        figures = next(iter(tradeoff_points([picked])), None)
    else:
        number, defaults, knobs, figures = picked.trial, picked.defaults, picked.config, picked
    served = folder.host.get("served_name") or folder.config.get("served_name")
    if not served:
        raise ConfigError(f"{folder.path}: no host.json names the model the study served (an "
                          "earlier tuner made the folder); run the study again with this one")
    found = image or folder.host.get("image") or folder.config.get("image") or (
        image_ref(spec.container, device, folder.config.get("image_tag"))
        if spec.container else None)
    hardware = (folder.summary or {}).get("hardware")
    return Chosen(spec=spec, study=folder.name, trial=number, defaults=defaults, knobs=knobs,
                  device=device, accelerators=picked.accelerators,
                  model=str(folder.config["model"]), served_name=str(served), image=found,
                  name=name or dns_name(f"{folder.name}-t{number}"), port=port,
                  figures=figures, hardware=hardware, sizing=sizing)


def export_command(study: Path | StudyFolder, fmt: str, *, pick: str | None, image: str | None,
                   name: str | None, port: int, sizing: Sizing, settings: Settings,
                   trial: int | None = None, host_network: bool = False) -> str:
    """The exported file's text (written by the caller), of the study folder at ``study`` or of
    a study read from its shared storage (``tuner.commands.shared_results``)."""
    form = export_format(fmt)
    if not 1 <= port <= 65535:
        raise ConfigError(f"--port {port}: give a port from 1 to 65535")
    folder = study if isinstance(study, StudyFolder) else read_study_folder(study)
    chosen = chosen_of(folder, target(folder, pick, trial), image=image, name=name, port=port,
                       sizing=sizing)
    return form.render(chosen, Where(cache_root=settings.cache_dir,
                                     options_dir=folder.path / "export",
                                     host_network=host_network))
