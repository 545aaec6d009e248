"""Token-length distributions: fixed, uniform, normal, lognormal and empirical.

Each is a small pydantic model picked by its ``dist`` key; ``sample`` draws
integer lengths from one numpy ``Generator`` the caller owns, so lengths are a
pure function of the workload seed. Continuous distributions are clipped to
``[min, max]`` and rounded to whole tokens.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from tuner.core import StrictModel
from tuner.workload.paths import workload_file

Tokens = Annotated[int, Field(ge=1, le=1_000_000)]


class FixedLength(StrictModel):
    """Every request has ``value`` tokens."""

    dist: Literal["fixed"] = "fixed"
    value: Tokens

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, self.value, dtype=np.int64)

    def bounds(self) -> tuple[int, int]:
        return self.value, self.value


class _Bounded(StrictModel):
    min: Tokens = Field(description="smallest length drawn (inclusive)")
    max: Tokens = Field(description="largest length drawn (inclusive)")

    @model_validator(mode="after")
    def _ordered(self) -> _Bounded:
        if self.min > self.max:
            raise ValueError(f"`min <= max` must hold, but got min={self.min}, max={self.max}")
        return self

    def bounds(self) -> tuple[int, int]:
        return self.min, self.max

    def _clip(self, values: np.ndarray) -> np.ndarray:
        clipped: np.ndarray = np.clip(np.rint(values), self.min, self.max).astype(np.int64)
        return clipped


class UniformLength(_Bounded):
    """Uniform integers in ``[min, max]``."""

    dist: Literal["uniform"] = "uniform"

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.integers(self.min, self.max, size=n, endpoint=True).astype(np.int64)


class NormalLength(_Bounded):
    """Normal with ``mean`` and ``std``, clipped to ``[min, max]``."""

    dist: Literal["normal"] = "normal"
    mean: float = Field(gt=0)
    std: float = Field(gt=0)

    @model_validator(mode="after")
    def _mean_inside(self) -> NormalLength:
        if not self.min <= self.mean <= self.max:
            raise ValueError(
                f"`min <= mean <= max` must hold, but got mean={self.mean} "
                f"outside [{self.min}, {self.max}]"
            )
        return self

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self._clip(rng.normal(self.mean, self.std, size=n))


class LognormalLength(_Bounded):
    """Lognormal with arithmetic ``mean`` and log-space ``sigma``, clipped to ``[min, max]``.

    mu = ln(mean) - sigma^2 / 2, so the unclipped mean is ``mean``.
    """

    dist: Literal["lognormal"] = "lognormal"
    mean: float = Field(gt=0)
    sigma: float = Field(gt=0, le=5, description="standard deviation of ln(length)")

    @model_validator(mode="after")
    def _mean_inside(self) -> LognormalLength:
        if not self.min <= self.mean <= self.max:
            raise ValueError(
                f"`min <= mean <= max` must hold, but got mean={self.mean} "
                f"outside [{self.min}, {self.max}]"
            )
        return self

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        mu = math.log(self.mean) - self.sigma**2 / 2
        return self._clip(rng.lognormal(mu, self.sigma, size=n))


class EmpiricalLength(StrictModel):
    """Draw uniformly from the lengths in ``file`` (one integer per line; # comments allowed).

    The path is relative to the workload file.
    """

    dist: Literal["empirical"] = "empirical"
    file: Path
    _values: np.ndarray = PrivateAttr(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @field_validator("file")
    @classmethod
    def _resolve(cls, value: Path, info: ValidationInfo) -> Path:
        return workload_file(value, info, "length")

    @model_validator(mode="after")
    def _load(self) -> EmpiricalLength:
        values = []
        for number, line in enumerate(self.file.read_text(encoding="utf-8").splitlines(), 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            try:
                length = int(text)
            except ValueError:
                raise ValueError(f"{self.file}:{number}: {text!r} is not an integer") from None
            if length < 1:
                raise ValueError(f"{self.file}:{number}: lengths must be >= 1, got {length}")
            values.append(length)
        if not values:
            raise ValueError(f"{self.file} holds no lengths; put one integer per line")
        self._values = np.asarray(values, dtype=np.int64)
        return self

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        drawn: np.ndarray = rng.choice(self._values, size=n, replace=True)
        return drawn

    def bounds(self) -> tuple[int, int]:
        return int(self._values.min()), int(self._values.max())


LengthDist = Annotated[
    FixedLength | UniformLength | NormalLength | LognormalLength | EmpiricalLength,
    Field(discriminator="dist"),
]
