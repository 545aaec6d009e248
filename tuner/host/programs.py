"""Programs an engine runs that are not Python packages (llama.cpp's ``llama-server`` and
``llama-quantize``): where they are on this machine, and which version they are.

Set-up builds them into the virtual environment's ``bin`` folder, beside the Python that runs
the tuner, which is looked at first: a tuner started as ``.venv/bin/tune`` finds them without
the environment being activated. Then ``PATH``, where a user's own build lives.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def find_program(name: str, python: str = sys.executable) -> Path | None:
    """``name`` beside ``python``, else on ``PATH``; None when neither has it. A name with a
    folder in it is taken as it is."""
    if os.sep in name:
        return Path(name) if os.access(name, os.X_OK) else None
    beside = Path(python).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which(name)
    return Path(found) if found else None


def program_version(argv: list[str], python: str = sys.executable) -> str | None:
    """The first line of ``argv``'s output that says "version" (llama-server --version:
    ``version: 11312 (0c1e570)``), without the word; None when the program is missing or says
    nothing of the kind."""
    program = find_program(argv[0], python)
    if program is None:
        return None
    try:
        done = subprocess.run([str(program), *argv[1:]], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in (done.stdout + done.stderr).splitlines():
        if line.lower().startswith("version"):
            return line.split(":", 1)[-1].strip()
    return None
