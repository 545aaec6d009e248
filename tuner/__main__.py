"""``python -m tuner`` is the ``tune`` command."""

from tuner.cli import main

main()
