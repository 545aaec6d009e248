"""The GPU pool at its seam: lock files stand in for devices."""

import multiprocessing
import threading
from pathlib import Path

import pytest

from tuner.core import TunerError
from tuner.launch.gpus import LOCK_DIR, GpuPool


def test_leases_are_disjoint_until_released(tmp_path: Path) -> None:
    pool = GpuPool(list(range(8)), tmp_path)
    leases = [pool.try_acquire(1) for _ in range(8)]
    assert sorted(d for lease in leases for d in lease.devices) == list(range(8))  # type: ignore[union-attr]
    assert pool.try_acquire(1) is None
    leases[3].release()  # type: ignore[union-attr]
    again = pool.try_acquire(1)
    assert again is not None
    assert again.devices == [3]


def test_wide_configs_take_several_devices_or_none(tmp_path: Path) -> None:
    pool = GpuPool(list(range(8)), tmp_path)
    four = pool.try_acquire(4)
    assert four is not None
    assert len(four.devices) == 4
    three = pool.try_acquire(3)
    assert three is not None
    assert pool.try_acquire(2) is None  # one left: a partial set is never held
    one = pool.try_acquire(1)
    assert one is not None
    with pytest.raises(TunerError, match="needs 9 GPUs"):
        pool.try_acquire(9)


def test_threads_never_share_a_device(tmp_path: Path) -> None:
    pool = GpuPool(list(range(4)), tmp_path)
    in_use: set[int] = set()
    guard = threading.Lock()
    clashes = []

    def work() -> None:
        for _ in range(20):
            with pool.acquire(2, timeout_s=30, poll_s=0.001) as lease:
                with guard:
                    if in_use & set(lease.devices):
                        clashes.append(lease.devices)
                    in_use.update(lease.devices)
                with guard:
                    in_use.difference_update(lease.devices)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert clashes == []


def hold(lock_dir: str, ready, stop) -> None:  # type: ignore[no-untyped-def]
    lease = GpuPool(list(range(2)), Path(lock_dir)).try_acquire(2)
    assert lease is not None
    ready.set()
    stop.wait(30)


def test_another_tuner_process_holds_devices(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready, stop = ctx.Event(), ctx.Event()
    other = ctx.Process(target=hold, args=(str(tmp_path), ready, stop))
    other.start()
    assert ready.wait(30)
    pool = GpuPool(list(range(2)), tmp_path)
    assert pool.try_acquire(1) is None
    other.kill()  # a tuner that dies releases its devices
    other.join()
    assert pool.try_acquire(2) is not None


UUIDS = [f"GPU-{i}a1b2c3d-0000-4000-8000-00000000000{i}" for i in range(4)]


def test_lock_files_are_named_by_uuid_and_usable_by_every_user(tmp_path: Path) -> None:
    folder = tmp_path / "locks"
    pool = GpuPool(UUIDS, folder)
    lease = pool.try_acquire(2)
    assert lease is not None
    assert lease.devices == UUIDS[:2]
    assert sorted(p.name for p in folder.iterdir()) == [f"gpu-{u}.lock" for u in UUIDS[:2]]
    assert folder.stat().st_mode & 0o7777 == 0o1777
    assert all(p.stat().st_mode & 0o777 == 0o644 for p in folder.iterdir())


def test_the_default_lock_folder_is_host_local() -> None:
    assert str(LOCK_DIR).startswith("/tmp/")  # never a home folder NFS may share


def test_a_gpu_another_job_uses_is_not_leased(tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    taken = {UUIDS[0]: "71680 MiB of its memory in use", UUIDS[2]: "1 compute process(es) on it"}
    asked = []

    def busy() -> dict[str, str]:
        asked.append(1)
        return taken

    pool = GpuPool(UUIDS, tmp_path, busy=busy)
    with caplog.at_level("WARNING"):
        lease = pool.try_acquire(2)
    assert lease is not None
    assert lease.devices == [UUIDS[1], UUIDS[3]]
    assert pool.try_acquire(1) is None
    assert len(asked) == 2
    warned = [r.getMessage() for r in caplog.records]
    assert warned == [f"GPU {UUIDS[0]} is in use by another job (71680 MiB of its memory in "
                      "use); not leasing it",
                      f"GPU {UUIDS[2]} is in use by another job (1 compute process(es) on it); "
                      "not leasing it"]  # once each, not at every poll
    with pytest.raises(TunerError, match=r"no 1 free GPUs within 0s; GPU-0a1b2c3d.*71680 MiB"):
        pool.acquire(1, timeout_s=0, poll_s=0.001)
    taken.clear()  # the other job ended
    again = pool.try_acquire(2)
    assert again is not None
    assert again.devices == [UUIDS[0], UUIDS[2]]
