"""TEST ONLY: the ``tune`` command with fake engines, built through the CLI's composition root
(:func:`tuner.cli.main` given an engine factory), for tests that need ``tune`` as a process of
its own: several tuners on one study, faults and interrupts around a real process.

    python -m tests.integration.fake_tune make|standin [tune's arguments...]

``make``: the unit tests' fake engine (:func:`tests.integration.fake_engine.make`);
``standin``: the real process launcher starting the stand-in engine, and the real measurer
(:func:`tests.integration.fake_engine.standin`). The repository must be on PYTHONPATH."""

from __future__ import annotations

import sys

from tests.integration import fake_engine
from tuner.cli import main

FAKES = {"make": fake_engine.make, "standin": fake_engine.standin}


def with_fakes(cmd: list[str], fakes: str = "make") -> list[str]:
    """``cmd``, a ``python -m tuner ...`` command, run through this script with ``fakes``."""
    assert cmd[1:3] == ["-m", "tuner"], cmd
    return [cmd[0], "-m", "tests.integration.fake_tune", fakes, *cmd[3:]]


if __name__ == "__main__":
    main(engines=FAKES[sys.argv.pop(1)])
