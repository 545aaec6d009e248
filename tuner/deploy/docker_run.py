"""``--format docker``: one ``docker run`` of the engine's image, as the trial's container ran.

The same image (the one the trial ran, or the spec's pinned one for the device), the same
shared memory, IPC and ulimits, the model folder mounted read-only where the trial had it, the
engine's caches from the tuner's cache folder (warm starts), and as many GPUs as the trial used
(``--gpus N``; a CPU trial gets none). The port is published on the host (or the container
shares the host's network, for a daemon without a bridge network); a Hugging Face token
is passed from the caller's environment (``-e HF_TOKEN``), never written.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from tuner.core import ConfigError, hf_home
from tuner.deploy.chosen import Chosen
from tuner.launch import cache_folder


def docker_run(chosen: Chosen, *, cache_root: Path, options_dir: Path,
               host_network: bool = False) -> str:
    """The command, one option group a line. An options file (TensorRT-LLM) is written into
    ``options_dir`` and mounted read-only."""
    spec = chosen.spec
    launch = spec.container
    if launch is None or chosen.image is None:
        raise ConfigError(f"--format docker: {spec.display_name} has no container image in "
                          "its spec; use --format command")
    model_arg = launch.model_mount if chosen.local_model else chosen.model
    rendered = chosen.launch(model_arg)
    groups: list[list[str]] = [["docker", "run", "-d", "--name", chosen.name]]
    env = dict(rendered.env)
    if chosen.device == "gpu":
        groups.append(["--gpus", str(chosen.accelerators)])
    else:  # as the trial's container: no GPU, whatever the daemon's default runtime
        env.update(NVIDIA_VISIBLE_DEVICES="void", CUDA_VISIBLE_DEVICES="")
    groups.append(["--network", "host"] if host_network
                  else ["-p", f"{chosen.port}:{chosen.port}"])
    if launch.shm_size:
        groups.append(["--shm-size", launch.shm_size])
    if launch.ipc_host:
        groups.append(["--ipc", "host"])
    groups += [["--ulimit", f"{k}={v}:{v}"] for k, v in sorted(launch.ulimits.items())]
    if chosen.local_model:
        source = Path(chosen.model).expanduser().resolve()
        groups.append(["-v", f"{source}:{launch.model_mount}:ro"])
    for name, target in sorted(launch.cache_mounts.items()):
        source = (hf_home() if name == "huggingface"
                  else cache_folder(cache_root, spec.name, name, []))
        groups.append(["-v", f"{source}:{target}"])
    if rendered.options is not None and spec.options_file is not None:
        options_dir.mkdir(parents=True, exist_ok=True)
        path = options_dir / f"trial-{chosen.trial:03d}.options.yaml"
        path.write_text(rendered.options)
        groups.append(["-v", f"{path.resolve()}:{spec.options_file.container_path}:ro"])
    groups += [["-e", f"{k}={v}"] for k, v in sorted(env.items())]
    if not chosen.local_model:
        groups.append(["-e", "HF_TOKEN"])
    entry = launch.entrypoint or []
    if entry:
        groups.append(["--entrypoint", entry[0]])
    groups.append([chosen.image, *entry[1:], *rendered.argv])
    lines = [f"# {line}" for line in chosen.header()]
    return "\n".join(lines) + "\n" + " \\\n    ".join(shlex.join(g) for g in groups) + "\n"
