"""The samplers a study can search with, by name; the search-efficiency benchmark compares them.

Every name maps to an Optuna sampler seeded by the study's seed. Infeasible trials (a
configuration that failed to start or met no load within the SLOs) carry Optuna constraints
(``trial.set_constraint``), which TPE and the GP sampler use natively; the others ignore them.
CMA-ES is left out: the search spaces are mostly categorical and boolean knobs, which it does
not model.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import optuna

STARTUP_TRIALS = 5
"""Random trials before a model-based sampler starts modelling (fewer when the study is short)."""


def _tpe(seed: int, trials: int, *, multivariate: bool) -> optuna.samplers.BaseSampler:
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(STARTUP_TRIALS, trials),
                                      multivariate=multivariate, group=multivariate)


def _gp(seed: int, trials: int) -> optuna.samplers.BaseSampler:
    return optuna.samplers.GPSampler(seed=seed, n_startup_trials=min(STARTUP_TRIALS, trials))


SAMPLERS: dict[str, Callable[[int, int], optuna.samplers.BaseSampler]] = {
    "tpe": lambda seed, trials: _tpe(seed, trials, multivariate=False),
    "tpe-multivariate": lambda seed, trials: _tpe(seed, trials, multivariate=True),
    "gp": _gp,
    "random": lambda seed, trials: optuna.samplers.RandomSampler(seed=seed),
    "qmc": lambda seed, trials: optuna.samplers.QMCSampler(seed=seed, scramble=True),
}
"""Sampler names (``tune --sampler``) and how each is built from (seed, planned trials)."""

DEFAULT_SAMPLER = "tpe"


def make_sampler(name: str, *, seed: int, trials: int) -> optuna.samplers.BaseSampler:
    """The sampler called ``name``; a ValueError names the known ones."""
    try:
        build = SAMPLERS[name]
    except KeyError:
        raise ValueError(f"unknown sampler {name!r}; use one of: {', '.join(SAMPLERS)}"
                         ) from None
    with warnings.catch_warnings():  # group (multivariate TPE) and QMC are "experimental"
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return build(seed, trials)
