"""``tune report --dir DIR``: a comparison's report rebuilt (a folder ``tune compare`` wrote),
or a study's trade-offs (a folder ``tune`` wrote): its Pareto front of cost against p95 TTFT
and p95 ITL as a table, the picks at its ends, and ``plots/pareto.png``; and what the study
kept for a tracking server that was down (``tracking-pending/``) is logged there now.
``--storage URL --study NAME`` shows a shared study's from its storage and tracking server,
on any machine. Runs nothing."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from tuner.core import ConfigError
from tuner.metric_registry import TTFT_P95
from tuner.metrics import money
from tuner.report import front_table, tradeoff_plot, write_trials_csv
from tuner.study import RunFolder
from tuner.study.results import Pick, StudyFolder, choose, read_study_folder
from tuner.tracking import deliver_kept


def report_command(folder: Path, console: Console) -> None:
    if not folder.exists():
        raise ConfigError(f"--dir {folder}: no such folder; give the folder tune compare or "
                          "tune wrote (tune-runs/compare-<workload> or tune-runs/<study>)")
    if not folder.is_dir():
        raise ConfigError(f"--dir {folder}: a file, not a folder; give the folder it is in")
    if (folder / "inputs.json").is_file():
        from tuner.commands.compare import report_command as comparison_report

        comparison_report(folder, console)
        return
    if not RunFolder(folder).config.is_file():
        raise ConfigError(f"{folder}: neither a comparison (inputs.json) nor a study (config.json)"
                          "; point --dir at a folder tune compare or tune wrote")
    study_report(folder, console)
    kept = deliver_kept(folder)
    if kept is not None:
        console.print(kept, highlight=False, soft_wrap=True)


def shared_report_command(name: str, storage: str, tracking: str | None, out: Path,
                          console: Console) -> None:
    """``--storage URL --study NAME``: a shared study's trade-offs, from its storage and
    tracking server, written under ``out/<study>/``."""
    from tuner.commands.shared_results import shared_study

    folder = shared_study(name, storage, tracking, out, console)
    study_report(folder, console, source=f"--storage {folder.config['storage']} --study {name}")


def study_report(found: Path | StudyFolder, console: Console, source: str | None = None
                 ) -> None:
    """The study's trade-offs, from its folder (or a shared study read as one)."""
    folder = found if isinstance(found, StudyFolder) else read_study_folder(found)
    path = folder.path
    points, front = folder.points(), folder.front()
    RunFolder(path).plots.mkdir(parents=True, exist_ok=True)
    table = write_trials_csv(folder.trials, RunFolder(path).trials_csv)
    whose = "of the study (every worker's)" if source else "of this host"
    console.print(f"every trial {whose}, a row each: {table}", highlight=False,
                  soft_wrap=True)
    if not front:
        console.print(f"{folder.name}: no trial met the SLOs; there is no trade-off to show")
        return
    console.print(front_table(folder.name, front, len(points)))
    cheapest, fastest = choose(front, Pick("cheapest")), choose(front, Pick("fastest"))
    console.print(f"cheapest: trial {cheapest.trial} at "
                  f"{money(cheapest.cost_per_m_output_tokens)}/M output tokens; fastest: "
                  f"trial {fastest.trial} at p95 TTFT {fastest.figure(TTFT_P95) or 0:.1f} ms, "
                  f"{money(fastest.cost_per_m_output_tokens)}/M", highlight=False)
    plot = tradeoff_plot(points, front, RunFolder(path).plot("pareto"))
    console.print(f"plot in {plot}; deploy a point with: tune export "
                  f"{source or f'--study {path}'} --format docker "
                  "--pick cheapest|fastest|'ttft_p95_ms<=X'", highlight=False, soft_wrap=True)
