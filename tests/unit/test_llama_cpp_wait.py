"""The tests that need llama.cpp wait for set-up's background compile, and go last; the compile
goes to idle priority when the integration tests begin (tests/conftest.py:
``wait_for_llama_cpp``, ``pytest_collection_modifyitems``, ``idle_background_build``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import psutil
import pytest

from tests.conftest import (
    idle_background_build,
    pytest_collection_modifyitems,
    wait_for_llama_cpp,
)


def test_nothing_to_wait_for_without_a_build(tmp_path: Path) -> None:
    assert wait_for_llama_cpp(tmp_path, timeout_s=1) is None
    (tmp_path / "llama.cpp.status").write_text("ok\n")
    assert wait_for_llama_cpp(tmp_path, timeout_s=1) is None


def test_a_failed_build_is_said_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "llama.cpp.status").write_text("failed (exit 2; see .wheels/build.log)\n")
    assert wait_for_llama_cpp(tmp_path, timeout_s=1) == \
        "llama.cpp's build failed (exit 2; see .wheels/build.log)"


def test_it_waits_for_a_running_build_to_end(tmp_path: Path) -> None:
    # A stand-in build that says "ok" and removes its marker after a moment, as set-up's does.
    script = ("import os, sys, time; from pathlib import Path; w = Path(sys.argv[1]); "
              "(w / 'llama.cpp.building').write_text(str(os.getpid())); time.sleep(1.0); "
              "(w / 'llama.cpp.status').write_text('ok'); (w / 'llama.cpp.building').unlink()")
    build = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)])
    try:
        while not (tmp_path / "llama.cpp.building").exists() and build.poll() is None:
            pass
        assert wait_for_llama_cpp(tmp_path, timeout_s=60, poll_s=0.05) is None
        assert (tmp_path / "llama.cpp.status").read_text() == "ok"
    finally:
        build.wait(timeout=60)


def test_a_build_killed_before_it_could_say_so_is_named(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    (tmp_path / "llama.cpp.building").write_text(done.stdout)  # a process that has ended
    trouble = wait_for_llama_cpp(tmp_path, timeout_s=60, poll_s=0.05)
    assert trouble is not None
    assert "ended without a word" in trouble


def test_a_build_that_outlasts_the_wait_is_named(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "llama.cpp.building").write_text(str(sleeper.pid))
        trouble = wait_for_llama_cpp(tmp_path, timeout_s=0.2, poll_s=0.05)
        assert trouble is not None
        assert "still runs after 0 s" in trouble
    finally:
        sleeper.kill()
        sleeper.wait()


@dataclass
class Item:
    nodeid: str
    fixturenames: list[str] = field(default_factory=list)


def test_the_modules_that_wait_for_the_compile_go_last_whole_and_in_order() -> None:
    items = [Item("tests/integration/test_compare.py::a", ["llama_cpp", "machine_to_itself"]),
             Item("tests/integration/test_measure.py::b"),
             Item("tests/integration/test_measure.py::c",
                  ["gguf_model", "llama_cpp", "machine_to_itself"]),
             Item("tests/integration/test_tune_vllm.py::d"),
             Item("tests/unit/test_x.py::e"),
             Item("tests/integration/test_docker.py::f")]
    pytest_collection_modifyitems(cast(Any, items))
    assert [i.nodeid[-1] for i in items] == ["d", "e", "f", "a", "b", "c"]


@pytest.mark.parametrize("option", ["--llama-in-backgroun", "-x"])
def test_setup_refuses_an_option_it_does_not_know(option: str) -> None:
    done = subprocess.run(["bash", str(Path(__file__).parents[2] / ".ci" / "setup"), option],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == (f"setup: unknown option '{option}' (the one option is "
                                   "--llama-in-background)")


def test_the_build_and_all_it_started_go_to_idle_priority(tmp_path: Path) -> None:
    # A stand-in build: a shell that has started a child, as make starts compilers.
    build = subprocess.Popen(["bash", "-c", "sleep 60 & wait"])
    try:
        (tmp_path / "llama.cpp.building").write_text(f"{build.pid}\n")
        while not psutil.Process(build.pid).children():
            time.sleep(0.01)
        tree = [build.pid, *(c.pid for c in psutil.Process(build.pid).children(recursive=True))]
        assert idle_background_build(tmp_path) == len(tree) == 2
        assert {os.sched_getscheduler(pid) for pid in tree} == {os.SCHED_IDLE}
        assert idle_background_build(tmp_path) == 0  # already idle
    finally:
        for child in psutil.Process(build.pid).children(recursive=True):
            child.kill()
        build.kill()
        build.wait()


def test_no_build_no_change(tmp_path: Path) -> None:
    assert idle_background_build(tmp_path) == 0
    (tmp_path / "llama.cpp.building").write_text("not a pid\n")
    assert idle_background_build(tmp_path) == 0
