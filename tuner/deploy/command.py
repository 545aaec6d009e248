"""``--format command``: the engine's own command line, as the trial ran it as a process."""

from __future__ import annotations

import shlex

from tuner.core import ConfigError
from tuner.deploy.chosen import Chosen
from tuner.engines import OPTIONS_FILE, render

OPTIONS_NAME = "engine-options.yaml"
"""Where the command reads an options file from (written beside it by the script)."""


def engine_command(chosen: Chosen) -> str:
    """A shell script: the options file when the engine takes one, then the launch."""
    spec = chosen.spec
    if spec.process is None:
        raise ConfigError(f"--format command: {spec.display_name} runs only as a container "
                          "here; use --format docker")
    rendered = render(spec, chosen.config, device=chosen.device, mode="process",
                      values={"python": "python", "model": chosen.model,
                              "served_name": chosen.served_name, "port": str(chosen.port),
                              "host": "0.0.0.0"})
    lines = ["#!/bin/sh", *(f"# {line}" for line in chosen.header())]
    if rendered.options is not None and OPTIONS_FILE in rendered.argv:
        lines += [f"cat > {OPTIONS_NAME} <<'EOF'", rendered.options.rstrip("\n"), "EOF"]
        rendered = rendered.with_options_path(OPTIONS_NAME)
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(rendered.env.items()))
    lines.append((f"{env} " if env else "") + shlex.join(rendered.argv))
    return "\n".join(lines) + "\n"
