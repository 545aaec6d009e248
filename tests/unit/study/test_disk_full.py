"""A full disk under the run folder stops the study with one error, never blames a
configuration: the trial that met it goes back to the study's queue, every finished trial
stays in the storage and on disk, and the study run again once there is space resumes where it
stopped. The disk here is filled by a seam (the free space the folder reports, a write that
fails with ENOSPC); a real tmpfs filled under a real study is tests/integration/test_faults.py."""

from __future__ import annotations

import errno
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from tests.unit.fakes.launcher import FakeLauncher, FakeMeasurer
from tests.unit.study.conftest import SMOKE, MakeContext
from tuner.core import OutOfSpace
from tuner.host import disk_space
from tuner.launch import EngineHandle
from tuner.loadgen import RequestRecord
from tuner.measurement import CapacityResult
from tuner.study import loop as study_module
from tuner.study.config import StudyConfig
from tuner.study.coordination.ledger import ledger
from tuner.study.loop import run_search
from tuner.study.state import StudyProgress
from tuner.study.tracker import NullTracker
from tuner.study.trial import run_trial


class Disk:
    """The run folder's free space, as the study sees it."""

    def __init__(self) -> None:
        self.full = False

    def free(self, folder: Path) -> int:
        return 0 if self.full else 10 * 2**30


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Disk:
    found = Disk()
    monkeypatch.setattr(disk_space, "free_bytes", found.free)
    return found


class FillsAfter(FakeMeasurer):
    """Fills the disk once ``n`` engines have been measured."""

    def __init__(self, disk: Disk, n: int) -> None:
        super().__init__()
        self.disk, self.n = disk, n

    def capacity(self, handle: EngineHandle, accelerators: int
                 ) -> tuple[CapacityResult, list[RequestRecord]]:
        found = super().capacity(handle, accelerators)
        if self.capacity_calls >= self.n:
            self.disk.full = True
        return found


def config(tmp_path: Path) -> StudyConfig:
    return StudyConfig.model_validate(dict(
        engine="vllm", workload=SMOKE, model="/m", out_dir=tmp_path, study_name="full",
        trials=4, heartbeat_s=1, tracking_uri="http://mlflow.invalid"))


def trial_files(cfg: StudyConfig) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((cfg.run_dir / "trials").glob("*.json"))}


def test_a_full_disk_stops_the_study_and_a_rerun_resumes_it(
        tmp_path: Path, make_ctx: MakeContext, disk: Disk) -> None:
    cfg = config(tmp_path)
    with pytest.raises(OutOfSpace) as err:
        run_search(cfg, make_ctx(FakeLauncher(), FillsAfter(disk, 2)), NullTracker(),
                   StudyProgress())
    assert "\n" not in str(err.value)
    assert str(err.value).startswith("no space left on the device of ")
    kept = trial_files(cfg)
    # The disk filled during the second launched trial; the next did not start. Every
    # finished trial is on disk and in the storage; the stopped one is queued again.
    study = optuna.load_study(study_name="full", storage=cfg.storage_url)
    done = study.get_trials(states=(TrialState.COMPLETE,))
    assert sorted(kept) == [f"trial-{t.number:03d}.json" for t in done]
    assert ledger(study).launched == 2
    assert study.get_trials(states=(TrialState.WAITING,)), "the stopped trial was not queued"
    assert not study.get_trials(states=(TrialState.RUNNING,))

    disk.full = False  # space freed: the same study run again goes on
    launcher = FakeLauncher()
    state = StudyProgress()
    run_search(cfg, make_ctx(launcher, FakeMeasurer()), NullTracker(), state)
    assert ledger(study).launched == 4
    assert {k: v for k, v in trial_files(cfg).items() if k in kept} == kept
    assert len(launcher.started) == 2


def test_no_trial_starts_on_a_full_disk(make_ctx: MakeContext, disk: Disk) -> None:
    disk.full = True
    launcher = FakeLauncher()
    with pytest.raises(OutOfSpace, match="0 KiB free, a trial needs 8 MiB"):
        run_trial(make_ctx(launcher), 1, {}, defaults=True)
    assert launcher.started == []


def test_a_failure_on_a_full_disk_is_not_the_configuration_s(make_ctx: MakeContext,
                                                             disk: Disk) -> None:
    class CrashesFilling(FakeMeasurer):
        def capacity(self, handle: EngineHandle, accelerators: int
                     ) -> tuple[CapacityResult, list[RequestRecord]]:
            disk.full = True  # the engine could not write its log and died of it
            return super().capacity(handle, accelerators)

    launcher = FakeLauncher(behaviour="crash_under_load")
    with pytest.raises(OutOfSpace):
        run_trial(make_ctx(launcher, CrashesFilling()), 1, {}, defaults=True)
    assert launcher.running == set()  # its engine was stopped all the same


def test_a_trial_whose_result_cannot_be_written_goes_back_to_the_queue(
        tmp_path: Path, make_ctx: MakeContext, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = config(tmp_path)
    real = disk_space.write_atomic

    def write(path: Path, text: str) -> None:
        if path.name == "trial-001.json":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, text)

    monkeypatch.setattr(study_module, "write_atomic", write)
    with pytest.raises(OSError, match="No space left"):
        run_search(cfg, make_ctx(FakeLauncher(), FakeMeasurer()), NullTracker(),
                   StudyProgress())
    study = optuna.load_study(study_name="full", storage=cfg.storage_url)
    done = study.get_trials(states=(TrialState.COMPLETE,))
    assert sorted(trial_files(cfg)) == [f"trial-{t.number:03d}.json" for t in done]
    assert [t.state for t in study.get_trials() if t.number == 1] == [TrialState.FAIL]
    assert study.get_trials(states=(TrialState.WAITING,))


def test_a_trial_the_storage_cannot_take_leaves_no_result_file(
        tmp_path: Path, make_ctx: MakeContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills between a trial's JSON and its write to the storage (SQLite's "database
    or disk is full"): the JSON goes too, so the files still name only finished trials."""
    cfg = config(tmp_path)
    real = optuna.Study.tell

    def tell(self: optuna.Study, trial: optuna.trial.Trial | int, *args: object,
             **kwargs: object) -> object:
        number = trial if isinstance(trial, int) else trial.number
        if number == 1:
            raise OSError(errno.ENOSPC, "database or disk is full")
        return real(self, trial, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(optuna.Study, "tell", tell)
    with pytest.raises(OSError, match="disk is full"):
        run_search(cfg, make_ctx(FakeLauncher(), FakeMeasurer()), NullTracker(),
                   StudyProgress())
    study = optuna.load_study(study_name="full", storage=cfg.storage_url)
    done = study.get_trials(states=(TrialState.COMPLETE,))
    assert [t.number for t in done] == [0]
    assert sorted(trial_files(cfg)) == ["trial-000.json"]
