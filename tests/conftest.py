"""Shared fixtures: a cache of the test session's own, and the tiny model made in it. Three
session-wide settings:

- The temporary folders go on a RAM file system (``/dev/shm``) when there is one with room, as
  if ``PYTEST_DEBUG_TEMPROOT=/dev/shm`` were given. Why: a study's SQLite storage commits once
  per Optuna call, and each commit is an fsync; on a virtual disk that is 5 to 10 ms, and the
  unit tests' studies make thousands of them (more than a third of the fast suite's time was
  spent waiting for them; experiments/test-speed/README.md). No test proves anything about the
  disk under its temporary folder: a full disk is simulated there (tests/unit/test_disk_space.py,
  tests/unit/study/test_disk_full.py), a real full tmpfs is tests/integration/test_faults.py,
  and a power cut, the one thing an fsync is for, is no test's. Pytest's own choice stands when
  it was made explicitly (``--basetemp``, ``PYTEST_DEBUG_TEMPROOT`` or ``TMPDIR``), or with
  ``TUNER_TEST_TMP=disk``, or when ``/dev/shm`` is missing or small (a container's default of
  64 MiB). Pytest still numbers them and keeps the last three sessions'
  (``/dev/shm/pytest-of-<user>/``). This is decided here, in the conftest that pytest-xdist's
  controller loads too, so that its workers' folders (under the controller's) follow it.
- Under ``-n N`` (pytest-xdist; README.md's test command), the unit and contract tests go first,
  spread over the workers, and the tests in tests/integration/ (real engines, Docker,
  PostgreSQL, MLflow servers) after them, as one unit of work that one worker runs in order,
  one at a time, as a serial run would, with the machine to itself: they share engine starts
  and studies (session fixtures), pin cores and measure latencies, and anything beside them on
  a 2-core machine measures with them. Tried and undone: the integration unit first, with the
  rest beside it on the other worker. CI's run of that (stop 49) took as long as a serial one
  (52 minutes of tests) and five engine tests failed on the load (arrival spacing, a healthy
  client flagged as saturated, transformers' defaults slo_infeasible at CI's SLOs in two
  tests, a full disk that came before the study's second trial was stored). So did splitting
  the stand-in studies (faults, outages, secrets) off as a second unit beside the engines'.
  The one thing beside some of them is llama.cpp's compile when set-up leaves it running
  (``.ci/setup --llama-in-background``, README.md's test command): at idle priority
  (SCHED_IDLE) once the integration tests begin, it takes only the CPU they leave; the
  integration modules that measure engines or need llama.cpp go last and wait for it
  (``machine_to_itself``).
- The session's own processes write the bytecode they compile, where the environment says not
  to (``PYTHONDONTWRITEBYTECODE``): see ``pytest_configure``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from filelock import FileLock
from tokenizers import Tokenizer

from tuner.core import Settings
from tuner.models import (
    SERVED_NAME,
    make_gguf_variants,
    make_model,
    synthetic_corpus,
    train_tokenizer,
)
from tuner.workload import PromptSynth

REPO = Path(__file__).resolve().parents[1]
RAM = Path("/dev/shm")
ROOM = 1 << 30  # bytes free on the RAM file system, at least (a unit run writes some 100 MiB)
ONE_AT_A_TIME = "real-parts"  # the xdist scope of every test in tests/integration/
INTEGRATION = "tests/integration/"


def ram_temp_root() -> Path | None:
    """``/dev/shm`` if the temporary folders may go there, else None."""
    if any(os.environ.get(name) for name in ("PYTEST_DEBUG_TEMPROOT", "TMPDIR")):
        return None
    if os.environ.get("TUNER_TEST_TMP", "") == "disk":
        return None
    try:
        if not (RAM.is_dir() and os.access(RAM, os.W_OK)):
            return None
        return RAM if shutil.disk_usage(RAM).free >= ROOM else None
    except OSError:
        return None


def pytest_configure(config: pytest.Config) -> None:
    # Read by pytest when it makes the session's base folder, at the first use of tmp_path
    # (after collection; xdist's controller makes it at the session's start): early enough from
    # here. Child processes inherit it, unused.
    if config.option.basetemp is None and (root := ram_temp_root()) is not None:
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(root)
    # The session's own processes (xdist's workers, every `tune` a test starts) keep the
    # bytecode they compile, in __pycache__ (ignored by git), even where the environment says
    # not to (PYTHONDONTWRITEBYTECODE, set on the machines this project runs on): else each of
    # them compiles the tuner (and each worker the test modules) from source again: 0.2-0.3 s
    # a `tune` process, 4 s a worker's collection (experiments/test-speed/README.md).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


def unit_of_work(nodeid: str) -> str:
    """The xdist unit a test belongs to: ``ONE_AT_A_TIME`` in tests/integration/, else its
    module (whose module-scoped fixtures, such as an MLflow server or vLLM's own argument
    parser at 25 s each, are then made once, not once per worker)."""
    return ONE_AT_A_TIME if nodeid.startswith(INTEGRATION) else nodeid.split("::", 1)[0]


def next_unit(queue: list[str]) -> str:
    """The unit of work xdist hands out next, of those still queued (in its order, largest
    first): the first, but ``ONE_AT_A_TIME`` only when nothing else is left."""
    rest = [unit for unit in queue if unit != ONE_AT_A_TIME]
    return rest[0] if rest else queue[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The integration modules with a test that waits for set-up's background compile of
    llama.cpp (``machine_to_itself``) go after the others, in their order, so that the compile
    goes on while the others run. Whole modules move, so their module fixtures are made once."""
    waits = {module_of(item) for item in items if "machine_to_itself" in item.fixturenames}
    items.sort(key=lambda item: module_of(item) in waits)


def module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under ``-n N`` (xdist's ``--dist load``), every test in tests/integration/ is one unit of
    work, handed out when no other is left, which one worker runs in order, as a serial run
    would; every other module is a unit of its own. xdist's ``--dist loadgroup`` would group
    them by marks, but with pytest 9.2 it no longer groups anything (it renames
    ``item._nodeid``, which pytest 9.2 no longer reads): scopes are given here by path
    instead."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class RealPartsLastAndAlone(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of_work(nodeid)

        def _assign_work_unit(self, node: object) -> None:
            self.workqueue.move_to_end(next_unit(list(self.workqueue)), last=False)
            super()._assign_work_unit(node)  # type: ignore[arg-type]

    return RealPartsLastAndAlone(config, log)  # type: ignore[arg-type]


@pytest.fixture(scope="session", autouse=True)
def tuner_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A temporary ``TUNER_CACHE_DIR`` for the whole session, so that nothing a test runs
    (in this process or in a ``python -m tuner`` child, which inherits the environment)
    reads or writes the user's ``~/.cache/tuner``. The old value is restored at the end."""
    cache = tmp_path_factory.mktemp("tuner-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TUNER_CACHE_DIR", str(cache))
        yield cache


@pytest.fixture(scope="session")
def tiny_tokenizer(tuner_cache: Path) -> Path:
    """A folder holding the tiny model's tokenizer.json and nothing else, for the tests that
    only tokenize or give `--tokenizer DIR`: trained as `tune make-model` trains it, in under a
    second, where the whole model needs transformers (seconds to import). The same file as
    the model's, byte for byte (``tiny_model`` checks it)."""
    folder = tuner_cache / "tokenizer-only" / SERVED_NAME
    folder.mkdir(parents=True, exist_ok=True)
    tok, _ = train_tokenizer(synthetic_corpus(0), 4096)  # as make_model trains the tiny one's
    tok.save(str(folder / "tokenizer.json"))
    return folder


@pytest.fixture(scope="session")
def tiny_model(tuner_cache: Path, tiny_tokenizer: Path,
               tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Llama, made where `tune make-model` would put it in the session's cache,
    so the tuner also finds it by name (a few seconds, once per session). Under xdist it is
    made once for all workers (transformers' import alone takes 5-13 s on 2 cores), in the
    run's shared temporary folder, and each worker's cache links to it."""
    models = Settings().models_dir
    assert models == tuner_cache / "models"
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "shared-models"
        shared.mkdir(exist_ok=True)
        with FileLock(shared / f"{SERVED_NAME}.lock"):
            make_model(shared / SERVED_NAME)
        models.mkdir(parents=True, exist_ok=True)
        (models / SERVED_NAME).symlink_to(shared / SERVED_NAME, target_is_directory=True)
    made = make_model(models / SERVED_NAME)
    assert (made / "tokenizer.json").read_bytes() == \
        (tiny_tokenizer / "tokenizer.json").read_bytes(), "tiny_tokenizer is not the model's"
    return made


def wait_for_llama_cpp(wheels: Path, timeout_s: float, poll_s: float = 2.0) -> str | None:
    """Wait while set-up's background build of llama.cpp runs (``.ci/setup
    --llama-in-background``: ``wheels/llama.cpp.building`` holds its process id, and
    ``wheels/llama.cpp.status`` says how it ended). None when there is nothing to wait for
    or the build went well; else what went wrong, in one line."""
    building, status = wheels / "llama.cpp.building", wheels / "llama.cpp.status"
    deadline = time.monotonic() + timeout_s
    while building.exists():
        try:
            pid = int(building.read_text().strip() or "0")
        except (OSError, ValueError):
            pid = 0  # written as it was read, or gone: look again
        if pid and not psutil.pid_exists(pid):
            if building.exists():  # the build was killed before it could say so
                return f"llama.cpp's build (pid {pid}) ended without a word; see {wheels}"
            break
        if time.monotonic() > deadline:
            return f"llama.cpp's build still runs after {timeout_s:.0f} s; see {wheels}"
        time.sleep(poll_s)
    if status.exists() and (said := status.read_text().strip()) != "ok":
        return f"llama.cpp's build {said}"
    return None


def idle_background_build(wheels: Path) -> int:
    """Put set-up's background compile of llama.cpp (``wheels/llama.cpp.building``) and every
    process it has started at idle priority (SCHED_IDLE: the kernel runs them only when nothing
    else wants the CPU); what they start later inherits it. The number of processes changed
    (0 when no build runs)."""
    try:
        build = psutil.Process(int(wheels.joinpath("llama.cpp.building").read_text().strip()))
        processes = [build, *build.children(recursive=True)]
    except (OSError, ValueError, psutil.Error):
        return 0
    changed = 0
    for process in processes:
        with contextlib.suppress(OSError):
            if os.sched_getscheduler(process.pid) != os.SCHED_IDLE:
                os.sched_setscheduler(process.pid, os.SCHED_IDLE, os.sched_param(0))
                changed += 1
    return changed


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before each integration test, set-up's background compile of llama.cpp (README.md's test
    command) goes to idle priority, if it still runs: beside the unit and contract tests it
    takes its share of the CPU, beside the integration tests only what they leave."""
    if item.nodeid.startswith(INTEGRATION):
        idle_background_build(REPO / ".wheels")


@pytest.fixture(scope="session")
def machine_to_itself() -> None:
    """Set-up's background compile of llama.cpp (README.md's test command), done: the tests
    that measure an engine against SLOs or time (and those that need llama.cpp) wait for it.
    At idle priority (``idle_background_build``), it takes only the CPU the tests leave, but
    the caches it shares with them still slowed a vLLM beside it (the p95 TTFT of 20 requests
    at 2 req/s: 175 ms quiet, 340 ms beside it; one run each). What runs beside it: the unit
    and contract tests, then the integration tests of control flow (faults and outages on the
    stand-in engine, secrets, interrupts, a hostile endpoint, the wheel), which
    ``pytest_collection_modifyitems`` puts first."""
    if (trouble := wait_for_llama_cpp(REPO / ".wheels", timeout_s=3600)) is not None:
        pytest.fail(trouble)


@pytest.fixture(scope="session")
def gguf_model(machine_to_itself: None, tiny_model: Path) -> Path:
    """The tiny model's folder with its GGUF variants (F16, Q8_0, Q4_0) beside the Hugging
    Face files, as llama.cpp needs them; made by llama.cpp itself (set-up's compile of it
    done: ``machine_to_itself``), once per session."""
    make_gguf_variants(tiny_model)
    return tiny_model


@pytest.fixture(scope="session")
def tokenizer(tiny_tokenizer: Path) -> Tokenizer:
    """The tiny model's tokenizer (its tokenizer.json, without making the model)."""
    return Tokenizer.from_file(str(tiny_tokenizer / "tokenizer.json"))


@pytest.fixture(scope="session")
def synth(tokenizer: Tokenizer) -> PromptSynth:
    return PromptSynth(tokenizer)
