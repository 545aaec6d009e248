"""A VM that hands freed memory back to its hypervisor is found from sysfs (the balloon
device's reporting feature, the kernel's reporting order), and a CPU study says so in one
line with the setting that stops it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.host import reporting_order, reporting_warning


def sysfs(tmp_path: Path, features: str | None, order: str = "5\n") -> tuple[Path, Path]:
    virtio, params = tmp_path / "virtio", tmp_path / "params"
    (virtio / "virtio0").mkdir(parents=True)  # a block device, which never reports
    (virtio / "virtio0" / "device").write_text("0x0002\n")
    (virtio / "virtio0" / "features").write_text("0" * 5 + "1" + "0" * 58 + "\n")
    if features is not None:
        (virtio / "virtio1").mkdir()
        (virtio / "virtio1" / "device").write_text("0x0005\n")
        (virtio / "virtio1" / "features").write_text(features + "\n")
    params.mkdir()
    (params / "page_reporting_order").write_text(order)
    return virtio, params


@pytest.mark.parametrize(("features", "order", "expected"), [
    ("0110010100" + "0" * 54, "5\n", 5),     # this project's EPYC VM: bit 5, reporting
    ("0110000100" + "0" * 54, "5\n", None),  # a balloon without the reporting feature
    (None, "5\n", None),                     # no balloon at all
    ("0110010100" + "0" * 54, "10\n", 10),
])
def test_the_reporting_order_is_read_only_when_a_balloon_reports(
        tmp_path: Path, features: str | None, order: str, expected: int | None) -> None:
    virtio, params = sysfs(tmp_path, features, order)
    assert reporting_order(virtio, params) == expected


def test_a_host_without_virtio_has_no_reporting(tmp_path: Path) -> None:
    assert reporting_order(tmp_path / "none", tmp_path / "none") is None


def test_the_warning_names_the_order_and_the_setting_that_stops_it() -> None:
    line = reporting_warning(5)
    assert line is not None
    assert "blocks of 2^5 pages" in line
    assert line.endswith("echo 10 > /sys/module/page_reporting/parameters/"
                         "page_reporting_order")
    assert reporting_warning(10) is None
    assert reporting_warning(None) is None
