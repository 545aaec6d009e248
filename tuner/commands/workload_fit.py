"""``tune workload fit``: a workload YAML and a fit report from a request log."""

from __future__ import annotations

from pathlib import Path

import yaml
from rich.console import Console

from tuner.core import ConfigError, validate
from tuner.report import plot_fit
from tuner.workload import Workload, fit_workload, read_request_log


def workload_fit_command(log_path: Path, out: Path, *, model: str, rate: str,
                         console: Console) -> Path:
    """Write ``out`` (the workload), its empirical length files beside it,
    ``<out stem>.fit.md`` (the report) and ``<out stem>.fit.png`` (fitted vs observed CDFs);
    return the report's path."""
    if rate not in ("mean", "peak"):
        raise ConfigError(f"--rate {rate}: give mean or peak")
    log = read_request_log(log_path)
    fitted = fit_workload(log, source=str(log_path), model=model, stem=out.stem, rate=rate)
    out.parent.mkdir(parents=True, exist_ok=True)
    for name, values in fitted.empirical.items():
        (out.parent / name).write_text("".join(f"{int(v)}\n" for v in values), encoding="utf-8")
    validate(Workload, fitted.workload, f"{out} (fitted)", context={"base_dir": out.parent})
    header = (f"# Fitted by `tune workload fit --from {log_path}`; see {out.stem}.fit.md.\n"
              "# slo and cost are placeholders: set your own.\n")
    out.write_text(header + yaml.safe_dump(fitted.workload, sort_keys=False), encoding="utf-8")
    report = out.with_name(f"{out.stem}.fit.md")
    plot = plot_fit(fitted.parts, out.with_name(f"{out.stem}.fit.png"))
    lines = [*fitted.report, "", f"![fitted vs observed CDFs]({plot.name})"]
    report.write_text("\n".join(lines) + "\n", encoding="utf-8")
    console.print(f"workload in {out}, fit report in {report}")
    for line in fitted.not_fitted:
        console.print(f"not fitted: {line}", highlight=False)
    return report
