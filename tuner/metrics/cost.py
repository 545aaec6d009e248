"""Cost: the one formula for USD per million tokens, and the one way money is shown."""

from __future__ import annotations

import math


def cost_per_million(usd_per_hour: float, tokens_per_s: float) -> float | None:
    """USD per 1e6 tokens = usd_per_hour / 3600 / tokens_per_s * 1e6 (None: no tokens)."""
    if not tokens_per_s > 0:
        return None
    return usd_per_hour / 3600.0 / tokens_per_s * 1e6


def money(usd: float | None) -> str:
    """``$0.1234`` (four significant digits); ``-`` for no figure."""
    return "-" if usd is None or math.isnan(usd) else f"${usd:.4g}"
