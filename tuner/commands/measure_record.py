"""What ``tune measure`` keeps in its folder (``measure.json``), and how a later run goes on
from it (``tune measure --resume DIR``).

The file is written after every start, marked ``complete: false`` until the run ends, so a
run that is stopped (Ctrl-C, SIGTERM, the end of a session) loses only the start it was in.
A resumed run measures the same thing or nothing: the same engine, model, workload file,
configuration and, paired, the same other side, on a host that describes itself the same
way and has the same CPU (:func:`tuner.host.cpu_identity`); anything else is one line naming
what differs (exit 2). ``--repeats`` is the total: raising it on a finished run measures more
starts, or more pairs, of the same comparison.

Reading a verdict and then measuring more is a look (docs/measuring.md): the resumed run's
verdict shares its level over the looks, as a race's does, so adding pairs until the verdict
resolves does not make a false one likelier than the interval says.

A paired run goes on from its last whole pair: the lone start of a pair that the stop cut is
measured again, so the two starts of every pair stay adjacent in time (the drift a pair
cancels is the drift between its two starts).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from tuner.core import ConfigError
from tuner.metrics import PooledSpread, RatioVerdict, Spread
from tuner.study import RunFolder, TrialResult
from tuner.study.repeats import Side


class MeasureReport(BaseModel):
    engine: str
    engine_version: str
    workload: str
    workload_sha256: str | None = None
    model: str | None = None
    hardware: str
    machine: str | None = None
    """The CPU by :func:`tuner.host.cpu_identity` (model, family, cores, flags)."""
    config: dict[str, Any]
    defaults: bool
    repeats: list[TrialResult]
    sides: list[str] = Field(default_factory=list, description="which configuration each "
                             "start measured (paired: the two names, interleaved)")
    capacity: Spread | None
    """Over the starts whose capacity was bracketed (a bound has no place in a mean or CV)."""
    cost: Spread | None
    bounds: int = 0
    """Starts whose capacity is only a lower bound (nothing failed): left out of the spread."""
    against: dict[str, Any] | None = None
    against_defaults: bool | None = None
    verdict: RatioVerdict | None = None
    """Paired: the interval of the configuration's advantage (the other's cost over its)."""
    verdict_line: str | None = None
    start_spread: PooledSpread | None = None
    """The start-to-start spread of capacity, pooled over the configurations measured (one-way:
    within each), with its upper 95% bound: this host and engine's noise floor."""
    left_out: list[str] = Field(default_factory=list, description="pairs the verdict could "
                                "not count, with why")
    wall_s: float
    complete: bool = True
    """False while the run goes on (the file is written after every start)."""
    resumed: int = 0
    """How many times a later run went on from this measurement (``--resume``)."""
    planned: int | None = None
    """``--repeats`` as asked: starts, or pairs with ``--against``."""
    looks: int = 1
    """The verdicts read on the way to this one, the last included: a run that asks for more
    than the one it goes on from planned has read one more (:func:`looks_after`)."""


def looks_after(earlier: MeasureReport | None, repeats: int, paired: bool) -> int:
    """The looks of a run going on from ``earlier`` with ``repeats`` in all: one more when it
    asks for more than the earlier run planned (which read the earlier verdict, or changed
    the plan on the way), else as many as it had."""
    if earlier is None:
        return 1
    if earlier.planned is None and not earlier.complete:
        return earlier.looks  # written before plans were kept: its plan is not known
    planned = earlier.planned if earlier.planned is not None else (
        len(earlier.repeats) // (2 if paired else 1))
    return earlier.looks + (1 if repeats > planned else 0)


def earlier_measurement(folder: Path) -> tuple[MeasureReport, str | None]:
    """The measurement kept in ``folder`` (``--resume``'s) and the model it served."""
    run = RunFolder(folder)
    if not run.measure.is_file():
        raise ConfigError(f"--resume {folder}: no measure.json there; give a folder tune "
                          "measure wrote (OUT/measure-<engine>-<workload>-<time>)")
    try:
        earlier = MeasureReport.model_validate_json(run.measure.read_text())
        model = json.loads(run.config.read_text()).get("model") if run.config.is_file() \
            else None
    except (ValidationError, ValueError) as e:
        raise ConfigError(f"--resume {folder}: measure.json is not one tune measure wrote "
                          f"({str(e).splitlines()[0]})") from e
    return earlier, earlier.model or model


def starts_to_keep(earlier: MeasureReport, earlier_model: str | None, folder: Path, *,
                   engine: str, model: str, workload: Path, workload_sha: str | None,
                   a: Side, b: Side | None, repeats: int) -> list[TrialResult]:
    """The earlier run's starts that this run counts (whole pairs, when paired), after
    checking that it measured what this run asks for."""
    def differs(what: str, theirs: object, ours: object) -> ConfigError:
        return ConfigError(f"--resume {folder}: it measured {what} {theirs}, this command "
                           f"asks for {ours}; give the same options, or --out for a new "
                           "measurement")

    if earlier.engine != engine:
        raise differs("engine", earlier.engine, engine)
    if earlier_model is not None and _path(earlier_model) != _path(model):
        raise differs("model", earlier_model, model)
    if Path(earlier.workload).name != workload.name or (
            earlier.workload_sha256 and workload_sha
            and earlier.workload_sha256 != workload_sha):
        raise differs("workload", f"{earlier.workload} (sha256 "
                      f"{(earlier.workload_sha256 or '?')[:12]})",
                      f"{workload} (sha256 {(workload_sha or '?')[:12]})")
    if earlier.defaults != a.defaults or (not a.defaults and earlier.config != a.config):
        raise differs("--config", _side(earlier.defaults, earlier.config), _side(
            a.defaults, a.config))
    if (earlier.against_defaults is None) != (b is None) or b is not None and (
            earlier.against_defaults != b.defaults
            or (not b.defaults and earlier.against != b.config)):
        raise differs("--against", "nothing" if earlier.against_defaults is None else _side(
            bool(earlier.against_defaults), earlier.against or {}),
            "nothing" if b is None else _side(b.defaults, b.config))
    kept = earlier.repeats[:len(earlier.repeats) // 2 * 2] if b else earlier.repeats
    total = repeats * (2 if b else 1)
    if len(kept) > total:
        unit = "pairs" if b else "starts"
        raise ConfigError(f"--repeats {repeats}: {folder} already holds "
                          f"{len(kept) // (2 if b else 1)} {unit}; give at least that many "
                          "(--repeats is the total, with those already measured)")
    return kept


def check_machine(earlier: MeasureReport, folder: Path, *, hardware: str, machine: str
                  ) -> None:
    """That this host is the one the earlier run measured on (its description and CPU)."""
    for theirs, ours in ((earlier.hardware, hardware), (earlier.machine, machine)):
        if theirs is not None and theirs != ours:
            raise ConfigError(f"--resume {folder}: it was measured on {theirs}, this host is "
                              f"{ours}; a measurement's starts are compared on one machine: "
                              "give --out for a new one here")


def _path(model: str) -> str:
    return str(Path(model).expanduser().resolve())


def _side(defaults: bool, config: dict[str, Any]) -> str:
    return "the defaults" if defaults else json.dumps(config, sort_keys=True)
