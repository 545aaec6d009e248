"""Run an engine as a container from its image, through the Docker SDK.

One container per trial: the model folder mounted read-only, the engine's caches
mounted from ``$TUNER_CACHE_DIR/engines/<engine>/`` so trials after the first start
warm, GPUs through device requests for exactly the trial's devices, and the
shared-memory, IPC and ulimit settings the spec asks for. Host networking on a
free port by default, or a port published on 127.0.0.1 only. Every container
carries ``tuner.*`` labels (owner pid and start time, study, trial) so that
cleanup removes orphans of ours and nothing else. Secrets go into the
container's environment and nowhere else.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.types import DeviceRequest, Mount, Ulimit
from docker.utils import parse_repository_tag

from tuner.core import ConfigError, EngineStartError, Settings, hf_home
from tuner.engines import ContainerLaunch, Device, EngineSpec, Rendered, render
from tuner.launch.base import EngineHandle, LaunchRequest
from tuner.launch.isolation import cache_folder, launch_values
from tuner.launch.ownership import (
    OWNER_PID,
    OWNER_STARTED,
    is_mine,
    owner_alive,
    owner_marker,
)

log = logging.getLogger(__name__)

MANAGED = "tuner.managed"
OWNER_LABEL = "tuner.owner_pid"
STARTED_LABEL = "tuner.owner_started"
Network = Literal["host", "publish"]


def image_ref(launch: ContainerLaunch, device: Device, tag: str | None) -> str:
    """``repo:tag`` (``repo@sha256:...`` for a digest) for this device; ``tag`` overrides the
    spec's pinned tag."""
    if device == "cpu" and launch.cpu_image:
        repo, pinned = launch.cpu_image, tag or launch.cpu_tag or launch.tag
    else:
        repo, pinned = launch.image, tag or launch.tag
    return f"{repo}@{pinned}" if pinned.startswith("sha256:") else f"{repo}:{pinned}"


def pull_args(image: str) -> tuple[str, str]:
    """``(repository, tag)`` for the daemon's pull: ``repo@sha256:...`` keeps its digest as the
    tag (docker-py's own ``parse_repository_tag``; a registry port is not a tag)."""
    repo, tag = parse_repository_tag(image)
    return repo, tag or "latest"


ENGINE_CPU_SHARES = 128


def container_spec(request: LaunchRequest, *, image: str, port: int, network: Network,
                   cache_root: Path, master_port: int = 29500, launch_id: str = "tuner",
                   user: str | None = None) -> tuple[dict[str, Any], Rendered]:
    """The exact ``containers.run`` arguments for a launch (no secrets), and the rendered
    command. Pure, so GPU paths are tested without a GPU."""
    spec = request.spec
    launch = spec.container
    if launch is None:
        raise ConfigError(f"engine {spec.name} has no container launch in its spec")
    device: Device = "gpu" if request.devices else "cpu"
    local_model = Path(request.model).exists()
    model_arg = launch.model_mount if local_model else request.model
    host = "127.0.0.1" if network == "host" else "0.0.0.0"
    rendered = render(spec, request.config, device=device, mode="container",
                      values={"python": "python3", "model": model_arg,
                              "served_name": request.served_name, "port": str(port),
                              "master_port": str(master_port), "launch_id": launch_id,
                              "host": host},
                      model_root=Path(request.model) if local_model else None,
                      cpus=request.cpus)
    mounts = []
    if local_model:
        mounts.append(Mount(target=launch.model_mount, source=str(Path(request.model).resolve()),
                            type="bind", read_only=True))
    for name, target in sorted(launch.cache_mounts.items()):
        # The host's Hugging Face cache is shared as it is (models by id); other caches (torch
        # compile, engine state) get a folder of the tuner's: the engine's, or on a GPU host the
        # lease's own, so that parallel trials never write one cache at once.
        source = (hf_home() if name == "huggingface"
                  else cache_folder(cache_root, spec.name, name, request.devices))
        source.mkdir(parents=True, exist_ok=True)
        mounts.append(Mount(target=target, source=str(source.resolve()), type="bind"))
    if rendered.options is not None and spec.options_file is not None:
        options = rendered.write_options(request.log_path)
        mounts.append(Mount(target=spec.options_file.container_path,
                            source=str(options.resolve()), type="bind", read_only=True))
        rendered = rendered.with_options_path(spec.options_file.container_path)
    marker = owner_marker()
    labels = {MANAGED: "true", OWNER_LABEL: marker[OWNER_PID],
              STARTED_LABEL: marker[OWNER_STARTED], **request.labels}
    environment = dict(rendered.env)
    if not request.devices:
        # No GPU for a CPU trial, even where the image asks for all of them
        # (NVIDIA_VISIBLE_DEVICES=all) and the NVIDIA runtime is the daemon's default: the
        # container toolkit exposes none for "void" (its "GPU Enumeration" docs).
        environment.update(NVIDIA_VISIBLE_DEVICES="void", CUDA_VISIBLE_DEVICES="")
    kwargs: dict[str, Any] = {
        "image": image,
        "command": rendered.argv,
        "environment": environment,
        "labels": labels,
        "mounts": mounts,
        "detach": True,
        "name": None,
        # Docker's init as PID 1 passes the stop's SIGTERM on: an engine that is PID 1 itself
        # ignores it until it installs a handler (the kernel's rule for PID 1), so a container
        # stopped while the engine imports waited out the whole grace period, then SIGKILL.
        "init": True,
    }
    if user is not None and launch.run_as_user:
        kwargs["user"] = user
    if launch.entrypoint is not None:
        kwargs["entrypoint"] = launch.entrypoint
    if network == "host":
        kwargs["network_mode"] = "host"
    else:
        kwargs["ports"] = {f"{port}/tcp": ("127.0.0.1", port)}
    if launch.shm_size:
        kwargs["shm_size"] = launch.shm_size
    if launch.ipc_host:
        kwargs["ipc_mode"] = "host"
    if launch.ulimits:
        kwargs["ulimits"] = [Ulimit(name=k, soft=v, hard=v) for k, v in
                             sorted(launch.ulimits.items())]
    if rendered.cpus:
        kwargs["cpuset_cpus"] = rendered.cpus
    if request.cpus:
        # As a process engine runs niced (process.ENGINE_NICE): where its helpers share the
        # load generator's core, they yield to it (a CPU weight of 128 against 1024).
        kwargs["cpu_shares"] = ENGINE_CPU_SHARES
    if request.devices:
        # By UUID: the daemon hands device_ids to the NVIDIA container toolkit, which takes
        # indices or UUIDs (`docker run --gpus device=GPU-...`); a UUID is the same GPU
        # whatever the order of enumeration.
        kwargs["device_requests"] = [DeviceRequest(
            device_ids=list(request.devices), capabilities=[["gpu"]])]
    return kwargs, rendered


class ContainerHandle(EngineHandle):
    def __init__(self, container: Any, rendered: Rendered, base_url: str, log_path: Path,
                 metrics_path: str | None, record: dict[str, Any]) -> None:
        self._container = container
        self.rendered = rendered
        self.base_url = base_url
        self.log_path = log_path
        self._metrics_path = metrics_path
        self._record = record
        self._stopped = False
        self._exit: int | None = None  # kept at stop(): the container is gone after it
        self._logs = threading.Thread(target=self._follow_logs, daemon=True)
        self._logs.start()

    @property
    def container_id(self) -> str:
        return str(self._container.id)

    @property
    def metrics_url(self) -> str | None:
        return None if self._metrics_path is None else self.base_url + self._metrics_path

    def _follow_logs(self) -> None:
        with contextlib.suppress(DockerException, OSError), self.log_path.open("ab") as out:
            for chunk in self._container.logs(stream=True, follow=True):
                out.write(chunk)
                out.flush()

    def exit_code(self) -> int | None:
        if self._stopped:
            return self._exit
        try:
            self._container.reload()
        except NotFound:
            return -1
        state = self._container.attrs.get("State", {})
        if state.get("Status") in ("exited", "dead"):
            return 137 if state.get("OOMKilled") else int(state.get("ExitCode", -1))
        return None

    def stop(self, grace_s: float = 20.0) -> None:
        if self._stopped:
            return
        with contextlib.suppress(NotFound, APIError):
            self._container.stop(timeout=int(grace_s))
        self._exit = self.exit_code()
        if self._exit is None:  # the daemon says it still runs after stop: call it killed
            self._exit = 137
        self._stopped = True
        with contextlib.suppress(NotFound, APIError):
            self._container.remove(force=True)
        self._logs.join(timeout=5)

    def describe(self) -> dict[str, Any]:
        return {**self._record, "container_id": self.container_id}


class DockerLauncher:
    """Starts engines as containers. ``image`` overrides the spec's image entirely."""

    name = "docker"

    def __init__(self, *, tag: str | None = None, image: str | None = None,
                 network: Network = "host", settings: Settings | None = None,
                 on_pull: Callable[[str], None] | None = None) -> None:
        self.tag = tag
        self.image = image
        self.network = network
        self.settings = settings or Settings()
        self.on_pull = on_pull
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            try:
                host = self.settings.docker_host
                self._client = (docker.DockerClient(base_url=host) if host
                                else docker.from_env())
                self._client.ping()
            except DockerException as exc:
                raise ConfigError(f"cannot reach the Docker daemon ({exc}); start dockerd or "
                                  "set TUNER_DOCKER_HOST") from exc
        return self._client

    def image_for(self, spec: EngineSpec, device: Device) -> str:
        if self.image:
            return self.image
        if spec.container is None:
            raise ConfigError(f"engine {spec.name} has no container launch in its spec")
        return image_ref(spec.container, device, self.tag)

    def ensure_image(self, image: str) -> dict[str, str]:
        """The image's id and digest; pulls it (with progress) when it is missing."""
        try:
            found = self.client.images.get(image)
        except ImageNotFound:
            found = self._pull(image)
        digests = found.attrs.get("RepoDigests") or []
        return {"image": image, "image_id": str(found.id),
                "image_digest": digests[0] if digests else str(found.id)}

    def _pull(self, image: str) -> Any:
        repo, tag = pull_args(image)
        try:
            for event in self.client.api.pull(repo, tag=tag, stream=True, decode=True):
                if "error" in event:
                    raise APIError(event["error"])
                if self.on_pull is not None:
                    self.on_pull(f"{event.get('id', '')} {event.get('status', '')} "
                                 f"{event.get('progress', '')}".strip())
            return self.client.images.get(image)
        except (APIError, ImageNotFound) as exc:
            reason = str(getattr(exc, "explanation", None) or exc).splitlines()[0][:200]
            raise ConfigError(f"image {image} is not here and cannot be pulled ({reason}); "
                              "pull or build it, or pass --image / --image-tag") from exc

    def start(self, request: LaunchRequest) -> ContainerHandle:
        device: Device = "gpu" if request.devices else "cpu"
        image = self.image_for(request.spec, device)
        info = self.ensure_image(image)
        values = launch_values("127.0.0.1")
        port = int(values["port"])
        kwargs, rendered = container_spec(request, image=image, port=port, network=self.network,
                                          cache_root=self.settings.cache_dir,
                                          master_port=int(values["master_port"]),
                                          launch_id=values["launch_id"], user=invoking_user())
        run_kwargs = dict(kwargs)
        run_kwargs["environment"] = {**kwargs["environment"], **{
            k: v.get_secret_value() for k, v in request.secret_env.items()}}
        request.log_path.parent.mkdir(parents=True, exist_ok=True)
        request.log_path.write_text(f"$ docker run {image} {rendered.command_line()}\n")
        try:
            container = self.client.containers.run(**run_kwargs)
        except (APIError, DockerException) as exc:
            raise EngineStartError(f"docker could not start {image}: {exc}",
                                   outcome="invalid_config", exit_code=None,
                                   log_tail=str(exc)) from exc
        record = {"launcher": "docker", **info, "command": rendered.command_line(),
                  "container_spec": describe_spec(kwargs)}
        return ContainerHandle(container, rendered, f"http://127.0.0.1:{port}",
                               request.log_path, request.spec.metrics_path, record)

    def cleanup_orphans(self) -> list[str]:
        """Remove containers of ours whose tuner is gone. Others' containers are not looked at
        beyond their labels."""
        return self._remove(lambda pid, started: not owner_alive(pid, started))

    def cleanup_own(self) -> list[str]:
        """Remove every container this tuner started (the last step of every run)."""
        return self._remove(is_mine)

    def foreign_gpus(self) -> dict[str, str]:
        """GPU -> why, for the GPUs of running containers that another tuner started (by its
        labels): busy before their engines allocate any memory that nvidia-smi would show."""
        try:
            running = self.client.containers.list(filters={"label": f"{MANAGED}=true"})
        except (DockerException, ConfigError):
            return {}
        return gpus_of_others(running)

    def _remove(self, doomed: Callable[[str, str], bool]) -> list[str]:
        removed = []
        for c in self.client.containers.list(all=True, filters={"label": f"{MANAGED}=true"}):
            labels = c.labels or {}
            pid, started = labels.get(OWNER_LABEL), labels.get(STARTED_LABEL)
            if pid is None or started is None or not doomed(pid, started):
                continue
            with contextlib.suppress(NotFound, APIError):
                c.remove(force=True)
                removed.append(f"container {c.name} ({c.short_id})")
                log.info("removed orphan container %s", c.name)
        return removed


def gpus_of_others(containers: list[Any]) -> dict[str, str]:
    """GPU -> why, for the device requests of ``containers`` that another tuner owns."""
    out: dict[str, str] = {}
    for c in containers:
        labels = c.labels or {}
        if is_mine(labels.get(OWNER_LABEL, ""), labels.get(STARTED_LABEL, "")):
            continue
        requests = (c.attrs.get("HostConfig") or {}).get("DeviceRequests") or []
        for request in requests:
            for gpu in request.get("DeviceIDs") or []:
                out[str(gpu)] = (f"container {c.name} of another tuner (pid "
                                 f"{labels.get(OWNER_LABEL, '?')})")
    return out


def invoking_user() -> str:
    """``uid:gid`` of the tuner, for the images that run as any user: files they write in the
    host's caches (Hugging Face downloads, compile caches) stay the user's, not root's."""
    return f"{os.getuid()}:{os.getgid()}"


def describe_spec(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A JSON-friendly copy of the container spec (it never holds secrets)."""
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key == "mounts":
            out[key] = [{"source": m["Source"], "target": m["Target"],
                         "read_only": m.get("ReadOnly", False)} for m in value]
        elif key == "device_requests":
            out[key] = [{"device_ids": d["DeviceIDs"], "capabilities": d["Capabilities"]}
                        for d in value]
        elif key == "ulimits":
            out[key] = [{"name": u["Name"], "soft": u["Soft"], "hard": u["Hard"]} for u in value]
        else:
            out[key] = value
    return out
