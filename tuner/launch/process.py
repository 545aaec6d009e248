"""Run an engine as a local process (CPU hosts, or GPUs without containers).

The engine gets its own session and process group, a free port, and its log in
a file (never an undrained pipe). ``stop`` sends SIGTERM to the group, waits,
then SIGKILLs the group and any descendant that left it.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import logging
import os
import resource
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import psutil

from tuner.core import ConfigError, EngineStartError
from tuner.engines import Device, EngineSpec, Rendered, render
from tuner.host import cpu_list, find_program, parse_cpu_list
from tuner.launch.base import EngineHandle, LaunchRequest
from tuner.launch.isolation import cache_folder, launch_values
from tuner.launch.isolation import free_port as free_port  # where callers have found it
from tuner.launch.ownership import (
    ENGINE_ID,
    kill_marked_processes,
    owner_marker,
    processes_of_engine,
)

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
ENGINE_NICE = 10
"""On a CPU host split between engine and load generator, the engine runs at this niceness:
its helper processes (vLLM's API server and scheduler, which are not bound to its cores) may
share the generator's core, and there they yield to it, as the generator's clock would
otherwise slip by a hundred milliseconds (experiments/measure-noise). Its compute threads are
alone on their cores, where niceness changes nothing."""


def _prctl() -> Callable[[int, int], object] | None:
    """libc's prctl, looked up in the tuner: loading a library in the child between fork and
    exec takes the loader's lock, which another thread of the tuner may have held at the fork
    (Python's docs warn that preexec_fn is not safe with threads); the child only calls it."""
    try:
        prctl: Callable[[int, int], object] = ctypes.CDLL("libc.so.6", use_errno=True).prctl
        return prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Ask the kernel to SIGKILL the engine if the tuner dies (Linux)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)


def engine_env(base: Mapping[str, str], rendered: Rendered, devices: list[str],
               extra: Mapping[str, str]) -> dict[str, str]:
    """The exact environment of a process engine: the tuner's, the rendered one, ``extra``
    (ownership markers, per-lease caches, secrets), and the GPUs. ``devices`` are GPU UUIDs,
    which CUDA_VISIBLE_DEVICES takes as they are (CUDA Programming Guide, "CUDA Environment
    Variables"): whatever the order, the engine gets exactly the GPUs of its lease, and within
    the tuner's allocation, as the inventory starts from an inherited CUDA_VISIBLE_DEVICES.
    CUDA_DEVICE_ORDER=PCI_BUS_ID makes any index the engine derives agree with nvidia-smi's
    (CUDA's default order is fastest-first). A CPU trial gets an empty CUDA_VISIBLE_DEVICES
    ("no GPU devices are visible"), so a CUDA build of the engine cannot take GPU 0."""
    env = {**base, **rendered.env, **extra}
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    env["CUDA_VISIBLE_DEVICES"] = ",".join(devices)
    return env


def _child_setup(cpus: set[int], nice: int, address_space: int | None = None
                 ) -> Callable[[], None]:
    """Before exec: die with the tuner, run on ``cpus`` (the engine's own cores, or every core
    of the host: the tuner's load generator may be pinned, and a child inherits that), at
    ``nice`` (see ``ENGINE_NICE``), with at most ``address_space`` bytes of address space
    (``RLIMIT_AS``; None: the tuner's own limit)."""
    def setup() -> None:  # pragma: no cover - runs in the child before exec
        _die_with_parent()
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, cpus)
        with contextlib.suppress(OSError):  # the load generator's real-time priority is its own
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        if nice:
            with contextlib.suppress(OSError):
                os.nice(nice)
    return setup


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class ProcessHandle(EngineHandle):
    def __init__(self, proc: subprocess.Popen[bytes], rendered: Rendered, base_url: str,
                 log_path: Path, metrics_path: str | None, engine_id: str) -> None:
        self._proc = proc
        self.engine_id = engine_id
        self.rendered = rendered
        self.base_url = base_url
        self.log_path = log_path
        self._metrics_path = metrics_path
        self._stopped = False

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def metrics_url(self) -> str | None:
        return None if self._metrics_path is None else self.base_url + self._metrics_path

    def exit_code(self) -> int | None:
        return self._proc.poll()

    def cpu_seconds(self) -> float | None:
        try:
            main = psutil.Process(self._proc.pid)
            family = [main, *main.children(recursive=True)]
        except psutil.Error:
            return None
        total = 0.0
        for proc in family:
            with contextlib.suppress(psutil.Error):
                times = proc.cpu_times()
                total += times.user + times.system
        return total

    def stop(self, grace_s: float = 20.0) -> None:
        if self._stopped:
            return
        self._stopped = True
        # The engine's processes by its marker, not by parentage: a worker that left the
        # process group, or outlived an engine already reaped, is found all the same.
        family = [p for p in processes_of_engine(self.engine_id) if p.pid != self._proc.pid]
        for p in family:
            with contextlib.suppress(psutil.NoSuchProcess, ProcessLookupError):
                p.terminate()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGTERM)
        # A stopped engine (SIGSTOP: a hung trial's, or one paused by hand) acts on SIGTERM
        # only once continued, as a shell's kill does for a stopped job.
        for p in family:
            with contextlib.suppress(psutil.NoSuchProcess, ProcessLookupError):
                p.send_signal(signal.SIGCONT)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGCONT)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and (
                self._proc.poll() is None or any(_alive(p) for p in family)):
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        for p in family:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=10)
        psutil.wait_procs(family, timeout=5)

    def describe(self) -> dict[str, Any]:
        return {"launcher": "process", "command": self.rendered.command_line(),
                "pid": self._proc.pid}


def missing_modules(python: str, modules: list[str]) -> list[str]:
    """The ``modules`` that ``python`` cannot find (none asked: none, without running it)."""
    if not modules:
        return []
    try:
        found = subprocess.run(
            [python, "-c", "import importlib.util, sys\n"
             "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))",
             *modules], capture_output=True, text=True, check=False)
    except OSError:
        return list(modules)
    return found.stdout.split() if found.returncode == 0 else list(modules)


class ProcessLauncher:
    """Starts engines as local processes."""

    name = "process"

    def __init__(self, host: str = "127.0.0.1", python: str = sys.executable,
                 cache_root: Path | None = None, memory_gib: float | None = None) -> None:
        self.host = host
        self.python = python
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]  # a child may not raise its own
        self.address_space = None if memory_gib is None else int(
            memory_gib * 2**30 if hard == resource.RLIM_INFINITY else min(memory_gib * 2**30,
                                                                        hard))
        """Each engine's address-space limit (``Settings.engine_memory_gib``)."""
        self.cache_root = cache_root
        """Where per-lease caches go on a GPU host (``Settings.cache_dir``); None: the engine's
        own default folders."""
        self.host_cpus = os.sched_getaffinity(0)  # before the load generator is pinned

    def start(self, request: LaunchRequest) -> ProcessHandle:
        spec = request.spec
        values = launch_values(self.host)
        port = values["port"]
        device: Device = "gpu" if request.devices else "cpu"
        rendered = render(spec, request.config, device=device, mode="process",
                          values={"python": self.python, "model": request.model,
                                  "served_name": request.served_name, "host": self.host,
                                  **values},
                          cpus=None if request.devices else request.cpus,
                          other_cpus=None if request.devices else self.other_cpus(request.cpus))
        if rendered.options is not None:
            rendered = rendered.with_options_path(str(rendered.write_options(request.log_path)))
        program = find_program(rendered.argv[0], self.python)
        if program is not None:  # a program beside this Python wins over one on PATH
            rendered = dataclasses.replace(rendered, argv=[str(program), *rendered.argv[1:]])
        engine_id = uuid.uuid4().hex
        env = engine_env(os.environ, rendered, request.devices, {
            **owner_marker(), ENGINE_ID: engine_id, **self.lease_caches(request),
            **{k: v.get_secret_value() for k, v in request.secret_env.items()}})
        request.log_path.parent.mkdir(parents=True, exist_ok=True)
        with request.log_path.open("wb") as logfile:
            logfile.write(f"$ {rendered.command_line()}\n".encode())
            logfile.flush()
            try:
                proc = subprocess.Popen(rendered.argv, stdout=logfile, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env=env,
                                        start_new_session=True, preexec_fn=_child_setup(
                                            parse_cpu_list(rendered.cpus) if rendered.cpus
                                            else self.host_cpus,
                                            ENGINE_NICE if request.cpus else 0,
                                            self.address_space))
            except OSError as exc:
                raise EngineStartError(f"cannot run {rendered.argv[0]}: {exc.strerror}",
                                       outcome="invalid_config", exit_code=None,
                                       log_tail="") from exc
        log.debug("started %s pid %s on port %s", spec.name, proc.pid, port)
        return ProcessHandle(proc, rendered, f"http://{self.host}:{port}", request.log_path,
                             spec.metrics_path, engine_id)

    def check_program(self, spec: EngineSpec) -> None:
        """A ConfigError naming the engine's program when it is neither beside this Python nor
        on PATH (an argv that starts with a template, ``{python}``, needs no check)."""
        if spec.process is None:
            return
        name = spec.process.argv[0]
        if "{" not in name and find_program(name, self.python) is None:
            raise ConfigError(f"{spec.display_name} runs {name}, which is neither beside "
                              f"{self.python} nor on PATH: build it (.ci/setup builds "
                              f"llama.cpp's) or put it on PATH")
        missing = missing_modules(self.python, spec.process.requires)
        if missing:
            raise ConfigError(f"{spec.display_name} needs the Python module(s) "
                              f"{', '.join(missing)}, which {self.python} cannot import: "
                              f"{spec.process.install or 'install them'}")

    def other_cpus(self, cpus: str | None) -> str | None:
        """The host's cores outside the engine's share (the load generator's), where an engine
        whose helpers run apart puts them; None when the engine has no share or no core is
        left."""
        if not cpus:
            return None
        rest = sorted(self.host_cpus - parse_cpu_list(cpus))
        return cpu_list(rest) if rest else None

    def lease_caches(self, request: LaunchRequest) -> dict[str, str]:
        """The spec's ``cache_env``, each pointing at the lease's own folder (GPU trials)."""
        if not request.devices or self.cache_root is None or request.spec.process is None:
            return {}
        out = {}
        for var, name in sorted(request.spec.process.cache_env.items()):
            folder = cache_folder(self.cache_root, request.spec.name, name, request.devices)
            folder.mkdir(parents=True, exist_ok=True)
            out[var] = str(folder)
        return out

    def cleanup_orphans(self) -> list[str]:
        return kill_marked_processes()

    def cleanup_own(self) -> list[str]:
        return kill_marked_processes(mine=True)
