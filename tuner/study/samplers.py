"""The samplers a study can search with, by name; the search-efficiency benchmark compares them.

Every name maps to an Optuna sampler seeded by the study's seed. Infeasible trials (a
configuration that failed to start or met no load within the SLOs) carry Optuna constraints
(``trial.set_constraint``), which TPE and the GP sampler use natively; the others ignore them.
CMA-ES (with margin, for integer knobs) models only the numeric knobs that every trial asks;
categorical, boolean and conditional knobs are drawn at random beside it, so it applies where a
space is mostly sizes.

The default is TPE. The search-efficiency benchmark (experiments/search-efficiency) replayed
every sampler against a measured vLLM table: asked as the study asks them (numeric knobs in
order), TPE, random search and QMC reached a configuration within 5% of the best in a median
of 12-14 trials and Optuna's GP sampler in none of its 20 (its lead in an earlier replay,
7.5 trials, came from asking every knob as an unordered categorical). TPE also uses the
failure constraints and the specs' conditional knobs, which random search and QMC do not.
The GP sampler needs torch, which the package does not require (``pip install 'tuner[gp]'``).
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable, Sequence

import optuna

from tuner.core import ConfigError

STARTUP_TRIALS = 5
"""Random trials before a model-based sampler starts modelling (fewer when the study is short)."""


def _tpe(seed: int, startup: int, *, multivariate: bool) -> optuna.samplers.BaseSampler:
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup,
                                      multivariate=multivariate, group=multivariate)


def _gp(seed: int, startup: int) -> optuna.samplers.BaseSampler:
    return optuna.samplers.GPSampler(seed=seed, n_startup_trials=startup)


class _QuietCmaEs(optuna.samplers.CmaEsSampler):
    """CMA-ES without its warning after every trial that the study's failure constraints are
    not used: it ignores them, as random search and QMC do silently."""

    def after_trial(self, study: optuna.Study, trial: optuna.trial.FrozenTrial,
                    state: optuna.trial.TrialState, values: Sequence[float] | None) -> None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Constraints have been set", UserWarning)
            super().after_trial(study, trial, state, values)


def _cmaes(seed: int, startup: int) -> optuna.samplers.BaseSampler:
    return _QuietCmaEs(seed=seed, n_startup_trials=startup, with_margin=True,
                       warn_independent_sampling=False)


SAMPLERS: dict[str, Callable[[int, int], optuna.samplers.BaseSampler]] = {
    "tpe": lambda seed, startup: _tpe(seed, startup, multivariate=False),
    "tpe-multivariate": lambda seed, startup: _tpe(seed, startup, multivariate=True),
    "gp": _gp,
    "random": lambda seed, startup: optuna.samplers.RandomSampler(seed=seed),
    "qmc": lambda seed, startup: optuna.samplers.QMCSampler(seed=seed, scramble=True),
    "cmaes": _cmaes,
}
"""Sampler names (``tune --sampler``) and how each is built from (seed, random trials before
a model-based sampler models)."""

DEFAULT_SAMPLER = "tpe"

NEEDS_TORCH = frozenset({"gp"})


def torch_installed() -> bool:
    """Whether torch can be imported here (looked up, not imported: that takes seconds)."""
    return importlib.util.find_spec("torch") is not None


def check_runnable(name: str) -> str:
    """``name`` if it is a known sampler that can run here; otherwise a ConfigError naming
    the fix."""
    if name not in SAMPLERS:
        raise ConfigError(f"unknown sampler {name!r}; use one of: {', '.join(SAMPLERS)}")
    if name in NEEDS_TORCH and not torch_installed():
        raise ConfigError(f"sampler {name!r} needs torch, which is not installed here: pip "
                          f"install 'tuner[gp]', or use --sampler {DEFAULT_SAMPLER}")
    return name


def make_sampler(name: str, *, seed: int, trials: int, startup: int = STARTUP_TRIALS
                 ) -> optuna.samplers.BaseSampler:
    """The sampler called ``name`` for a study of ``trials`` trials, modelling after
    ``startup`` random ones (the benchmark replays other counts); a ConfigError names the
    known ones, or the missing torch."""
    build = SAMPLERS[check_runnable(name)]
    with warnings.catch_warnings():  # group (multivariate TPE), QMC, margin: "experimental"
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return build(seed, min(startup, trials))
