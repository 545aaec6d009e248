"""``python -m tuner`` is the ``tune`` command."""

from tuner.cli import main

if __name__ == "__main__":  # not when a spawned load-generator worker imports this module
    main()
