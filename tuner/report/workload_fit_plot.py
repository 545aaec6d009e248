"""The fit report's plot: each fitted length distribution against the observed lengths."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from pydantic import TypeAdapter

from tuner.workload import FittedPart, LengthDist

_LENGTH = TypeAdapter(LengthDist)


def plot_fit(parts: list[FittedPart], path: Path) -> Path:
    """One panel per distribution: the observed CDF and the fitted model's (a sample of it,
    as it replays); an empirical fit replays the observed values, so it has one line."""
    # Here, not with the module: a second that `tune workload fit` pays only when it draws.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(3, len(parts))
    rows = math.ceil(len(parts) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    for ax, part in zip(axes.flat, parts, strict=False):
        observed = np.sort(part.observed)
        ax.step(observed, np.arange(1, len(observed) + 1) / len(observed), where="post",
                label="observed")
        if part.spec["dist"] != "empirical":
            model = np.sort(_LENGTH.validate_python(part.spec).sample(
                np.random.default_rng(0), 20_000))
            ax.step(model, np.arange(1, len(model) + 1) / len(model), where="post",
                    label=f"fitted ({part.spec['dist']})", linestyle="--")
        ax.set_title(part.label, fontsize=9)
        ax.set_ylabel("CDF", fontsize=8)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(parts):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
