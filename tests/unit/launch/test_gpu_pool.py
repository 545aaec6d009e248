"""The GPU pool at its seam: lock files stand in for devices."""

import multiprocessing
import threading
from pathlib import Path

import pytest

from tuner.errors import TunerError
from tuner.launch.gpus import GpuPool


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
