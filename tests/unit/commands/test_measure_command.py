"""``tune measure`` in process with the fake engine at the launcher and measurer seams: each
repeat is a fresh start tagged ``measure-NNN``, numbered from 0, told to the tracker; the
report lands in ``measure.json`` and the console ends with the spread and the count of starts
that met the SLOs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from tests.unit.fakes.launcher import FakeHandle, FakeLauncher, FakeMeasurer
from tests.unit.fakes.model import fake_model
from tuner.commands.measure import measure_command
from tuner.core import Settings
from tuner.launch import LaunchRequest
from tuner.study import StudyConfig

pytestmark = pytest.mark.slow
DATA = Path(__file__).resolve().parents[2] / "data"
LAUNCHERS: list[FakeLauncher] = []


def make(cfg: StudyConfig, settings: Settings) -> tuple[FakeLauncher, FakeMeasurer]:
    LAUNCHERS.append(FakeLauncher())
    return LAUNCHERS[-1], FakeMeasurer()


def test_measure_starts_the_configuration_afresh_each_repeat(tmp_path: Path) -> None:
    settings = Settings(pin_cores=False, cache_dir=tmp_path / "cache")
    cfg = StudyConfig(engine="vllm", workload=DATA / "workload-ci.yaml",
                      model=str(fake_model(tmp_path / "model")), trials=3,
                      study_name="measure-vllm-ci", out_dir=tmp_path / "runs",
                      tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    out = Console(record=True, width=200)
    quiet = Console(file=(tmp_path / "progress.txt").open("w"))
    report = measure_command(cfg, settings, config={}, defaults=True, repeats=3, console=out,
                             progress_console=quiet, engine_factory=make)
    assert [h.request.log_path.stem for h in LAUNCHERS[-1].started] == [
        "measure-000", "measure-001", "measure-002"]
    assert all(h.request.log_path.parent == cfg.run_dir / "logs"
               for h in LAUNCHERS[-1].started)
    assert [r.number for r in report.repeats] == [0, 1, 2]
    assert all(r.defaults and r.outcome == "ok" for r in report.repeats)
    assert report.capacity is not None
    written = json.loads(cfg.folder.measure.read_text())
    assert [r["number"] for r in written["repeats"]] == [0, 1, 2]
    text = out.export_text()
    assert "3 of 3 starts met the SLOs" in text
    assert f"figures in {cfg.folder.measure}" in text.replace("\n", "")


def test_measure_against_runs_interleaved_pairs_and_gives_the_verdict(tmp_path: Path) -> None:
    from mlflow import MlflowClient

    from tuner.commands.measure import exit_code
    from tuner.core import EXIT_UNRESOLVED
    from tuner.study.repeats import Side

    settings = Settings(pin_cores=False, cache_dir=tmp_path / "cache")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cfg = StudyConfig(engine="vllm", workload=DATA / "workload-ci.yaml",
                      model=str(fake_model(tmp_path / "model")), trials=2,
                      study_name="measure-aa", out_dir=tmp_path / "runs", tracking_uri=uri)
    out = Console(record=True, width=200)
    quiet = Console(file=(tmp_path / "progress.txt").open("w"))
    report = measure_command(cfg, settings, config={}, defaults=True, repeats=2, console=out,
                             progress_console=quiet, engine_factory=make,
                             against=Side("defaults again", {}, True), resolution=0.05)
    assert report.sides == ["defaults", "defaults again", "defaults again", "defaults"]
    assert [h.request.log_path.stem for h in LAUNCHERS[-1].started] == [
        "measure-000", "measure-001", "measure-002", "measure-003"]
    assert report.verdict is not None
    # An A/A is never a win. The fake's four starts have the same capacity, each known only
    # to its 5% step (passed 2, failed 2.1): two pairs cannot say "within 5%" either.
    assert report.verdict.kind == "unresolved"
    assert report.verdict_line == ("unresolved: defaults against defaults again 1.00x "
                                   "(0.94-1.06) after 2 pairs, not decided at ±5%; measure "
                                   "more pairs")
    assert exit_code(report) == EXIT_UNRESOLVED
    assert report.verdict_line in out.export_text().replace("\n", "")
    written = json.loads(cfg.folder.measure.read_text())
    assert written["verdict"]["kind"] == "unresolved"
    client = MlflowClient(uri)
    parent = [r for r in client.search_runs([client.get_experiment_by_name(
        "measure-aa").experiment_id]) if r.data.tags.get("verdict")]
    assert parent[0].data.tags["verdict"] == report.verdict_line
    assert parent[0].data.metrics["ratio"] == 1.0


class StoppedAt(FakeLauncher):
    """A fake launcher whose start of ``tag`` is interrupted (Ctrl-C, the end of a session)."""

    def __init__(self, tag: str) -> None:
        super().__init__()
        self.tag = tag

    def start(self, request: LaunchRequest) -> FakeHandle:
        if request.log_path.stem == self.tag:
            raise KeyboardInterrupt
        return super().start(request)


def paired_cfg(tmp_path: Path, name: str) -> StudyConfig:
    return StudyConfig(engine="vllm", workload=DATA / "workload-ci.yaml",
                       model=str(fake_model(tmp_path / "model")), trials=2,
                       study_name=name, out_dir=tmp_path / "runs",
                       tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")


def test_a_stopped_paired_measurement_goes_on_from_its_last_whole_pair(tmp_path: Path
                                                                       ) -> None:
    from tuner.study.repeats import Side, paired_outcome

    settings = Settings(pin_cores=False, cache_dir=tmp_path / "cache")
    cfg = paired_cfg(tmp_path, "measure-resumed")
    quiet = Console(file=(tmp_path / "progress.txt").open("w"))
    b = Side("trial 3", {"max_batch_size": 8}, False)
    stopped = StoppedAt("measure-003")
    with pytest.raises(KeyboardInterrupt):
        measure_command(cfg, settings, config={}, defaults=True, repeats=2, console=quiet,
                        progress_console=quiet, engine_factory=lambda c, s: (
                            stopped, FakeMeasurer()), against=b, resolution=0.05)
    kept = json.loads(cfg.folder.measure.read_text())
    assert kept["complete"] is False
    assert [r["number"] for r in kept["repeats"]] == [0, 1, 2]

    out = Console(record=True, width=200)
    report = measure_command(cfg, settings, config={}, defaults=True, repeats=3, console=out,
                             progress_console=quiet, engine_factory=make, against=b,
                             resolution=0.05, resume=True)
    # pair 2's lone start (measure-002) is measured again beside its partner, then pair 3
    assert [h.request.log_path.stem for h in LAUNCHERS[-1].started] == [
        "measure-002", "measure-003", "measure-004", "measure-005"]
    assert [r.number for r in report.repeats] == [0, 1, 2, 3, 4, 5]
    assert [r.pair for r in report.repeats] == [1, 1, 2, 2, 3, 3]
    assert report.sides == ["defaults", "trial 3", "trial 3", "defaults", "defaults",
                            "trial 3"]
    assert report.complete
    assert report.resumed == 1
    assert report.verdict is not None
    assert report.verdict.pairs == 3
    # 3 pairs where 2 were planned: a second look, which shares the interval's level
    assert (report.planned, report.looks) == (3, 2)
    once = paired_outcome(report.repeats, 0.05).verdict
    assert once is not None
    assert once.low is not None
    assert report.verdict.low is not None
    assert report.verdict.low < once.low
    assert "shares the 95% level over 2 looks" in out.export_text().replace("\n", " ")
    written = json.loads(cfg.folder.measure.read_text())
    assert written["complete"] is True
    assert len(written["repeats"]) == 6


def test_resuming_a_finished_measurement_adds_starts_and_refuses_another_one(
        tmp_path: Path) -> None:
    from tuner.core import ConfigError
    from tuner.study.repeats import Side

    settings = Settings(pin_cores=False, cache_dir=tmp_path / "cache")
    cfg = paired_cfg(tmp_path, "measure-more")
    quiet = Console(file=(tmp_path / "progress.txt").open("w"))
    measure_command(cfg, settings, config={}, defaults=True, repeats=2, console=quiet,
                    progress_console=quiet, engine_factory=make)
    out = Console(record=True, width=200)
    report = measure_command(cfg, settings, config={}, defaults=True, repeats=3, console=out,
                             progress_console=quiet, engine_factory=make, resume=True)
    assert [h.request.log_path.stem for h in LAUNCHERS[-1].started] == ["measure-002"]
    assert (report.planned, report.looks) == (3, 2)
    assert len(report.repeats) == 3
    assert report.capacity is not None
    assert report.capacity.n == 3
    for kwargs, named in (
            (dict(config={"max_batch_size": 8}, defaults=False, repeats=3), "--config"),
            (dict(config={}, defaults=True, repeats=3,
                  against=Side("defaults again", {}, True)), "--against"),
            (dict(config={}, defaults=True, repeats=2), "--repeats 2")):
        with pytest.raises(ConfigError, match=named):
            measure_command(cfg, settings, console=quiet, progress_console=quiet,
                            engine_factory=make, resume=True,
                            **kwargs)  # type: ignore[arg-type]
    kept = json.loads(cfg.folder.measure.read_text())
    cfg.folder.measure.write_text(json.dumps({**kept, "machine": "another CPU"}))
    with pytest.raises(ConfigError, match="it was measured on another CPU, this host is "):
        measure_command(cfg, settings, config={}, defaults=True, repeats=4, console=quiet,
                        progress_console=quiet, engine_factory=make, resume=True)
    with pytest.raises(ConfigError, match="no measure.json there"):
        measure_command(paired_cfg(tmp_path, "never-measured"), settings, config={},
                        defaults=True, repeats=2, console=quiet, progress_console=quiet,
                        engine_factory=make, resume=True)
