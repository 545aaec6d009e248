"""A package face whose names are imported at their first use.

A face (a package's ``__init__``) that imports all it exports makes everyone who needs one of
its names import all of them: ``tune bench`` needs two tables of tuner.report, and importing the
face brought the study report with it, and through it Optuna, SQLAlchemy and the study package
(a second of the command's start-up). A lazy face lists its names as usual, as imports under
``if TYPE_CHECKING:`` (what type checkers and readers see), and hands its module-level
``__getattr__`` to :func:`lazy_face`, which imports a name's module when the name is first
asked for (``from tuner.report import summary_table`` included)::

    if TYPE_CHECKING:
        from tuner.report.bench_tables import summary_table

    __all__ = ["summary_table"]
    __getattr__ = lazy_face(__name__, __file__)
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def type_checking_imports(init: Path) -> dict[str, tuple[str, str]]:
    """The names imported under ``if TYPE_CHECKING:`` in ``init``: name -> (module, name)."""
    found: dict[str, tuple[str, str]] = {}
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.level == 0:
                    for alias in stmt.names:
                        found[alias.asname or alias.name] = (stmt.module, alias.name)
    return found


def lazy_face(package: str, init: str) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``, whose ``__init__`` file is ``init``: a name of its
    ``if TYPE_CHECKING:`` imports is imported from its module on first use, and kept.

    A lazy name may not be the name of one of the package's modules: importing that module
    (from anywhere) sets the package's attribute of that name to the module, and the name
    would never be looked up again. Such a name is imported by the face as usual."""
    where = type_checking_imports(Path(init))
    clash = sorted(name for name in where if (Path(init).parent / f"{name}.py").exists()
                   or (Path(init).parent / name / "__init__.py").exists())
    if clash:
        raise ImportError(f"{package}: {', '.join(clash)} also name its modules; import "
                          "them outside the TYPE_CHECKING block")

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, original = where[name]
        value = getattr(importlib.import_module(module), original)
        setattr(sys.modules[package], name, value)  # the next look-up is a plain attribute
        return value

    return __getattr__
