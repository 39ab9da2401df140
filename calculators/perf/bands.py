"""How sure a timed figure is: the 80 % band of the shipped performance model, measured on public data.

Every timed figure the product shows (TPOT, TTFT, output tokens/s) is the performance model's point
estimate. Its band is ``[estimate × low_factor, estimate × high_factor]``, where the factors are the 10 %
and 90 % quantiles of ``measured / predicted`` over the public measurement corpus
(docs/performance-model.md §11) and ``coverage`` is the share of rows the band held when each source
was left out of the quantiles that judged it (leave-one-source-out). The factors are fitted by
``benchmarks/fit_timing_bands.py`` and stored in ``calculators/data/timing_bands.toml`` with the date and
corpus they came from; they describe the model as shipped, so the script is re-run whenever the model's
terms or default coefficients change.

Pure: NumPy and pydantic; no Streamlit or plotly.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel, ConfigDict, Field, model_validator

from calculators.errors import InvalidInputError
from calculators.perf.coefficients import parse_toml_as

if TYPE_CHECKING:  # pandas only types fit_band's arguments: llmcap plan starts without it
    import pandas as pd

Metric = Literal["tpot", "ttft", "throughput"]
BAND_FILE = "timing_bands.toml"
QUANTILES = (0.10, 0.90)
"""The band's quantiles of measured/predicted: an 80 % band."""
#: Which edge is the pessimistic one: a longer time, a lower throughput.
PESSIMISTIC_EDGE: dict[str, str] = {"tpot": "high", "ttft": "high", "throughput": "low"}


class BandEntry(BaseModel):
    """One metric's band: factors on the point estimate and their measured coverage."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    low_factor: float = Field(gt=0, description="10 % quantile of measured/predicted")
    high_factor: float = Field(gt=0, description="90 % quantile of measured/predicted")
    coverage: float = Field(ge=0, le=1, description="share of held-out rows inside the band (LOSO)")
    n_rows: int = Field(ge=1, description="compared rows the quantiles come from")
    n_sources: int = Field(ge=1, description="independent sources among them")

    @model_validator(mode="after")
    def _ordered(self) -> BandEntry:
        if self.low_factor > self.high_factor:
            raise ValueError(f"low_factor {self.low_factor} is above high_factor {self.high_factor}")
        return self


class BandFile(BaseModel):
    """``timing_bands.toml``: where the factors came from, and one entry per metric."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fitted: dt.date
    corpus: str = Field(min_length=1, description="the measurements the factors were fitted on")
    method: str = Field(min_length=1)
    tpot: BandEntry
    ttft: BandEntry
    throughput: BandEntry


@dataclass(frozen=True)
class TimingBand:
    """The 80 % band of one metric (see the module docstring)."""

    metric: str
    low_factor: float
    high_factor: float
    coverage: float
    n_rows: int
    n_sources: int
    fitted: dt.date

    def edges(self, value: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` edges of the band around ``value`` (same unit as ``value``)."""
        v = np.asarray(value, dtype=float)
        return v * self.low_factor, v * self.high_factor

    @property
    def pessimistic_factor(self) -> float:
        """The factor of the pessimistic edge: high for times, low for throughput."""
        return self.high_factor if PESSIMISTIC_EDGE[self.metric] == "high" else self.low_factor

    def range_text(self, value: float, unit_scale: float = 1.0, unit: str = "", digits: int = 0) -> str:
        """``"31–47 ms"``: the band's edges around ``value``, shown × ``unit_scale`` with ``digits`` decimals."""
        lo, hi = (float(x) * unit_scale for x in self.edges(value))
        return f"{lo:,.{digits}f}–{hi:,.{digits}f}{(' ' + unit) if unit else ''}"


def parse_band_file(text: str) -> BandFile:
    """Validate a band file's TOML text; a bad file names the field and what is allowed."""
    return parse_toml_as(BandFile, text, BAND_FILE)


@cache
def load_bands() -> BandFile:
    """The shipped band file, validated once."""
    return parse_band_file(files("calculators.data").joinpath(BAND_FILE).read_text(encoding="utf-8"))


def timing_band(metric: str) -> TimingBand:
    """The shipped 80 % band of ``metric`` (``"tpot"``, ``"ttft"`` or ``"throughput"``)."""
    if metric not in PESSIMISTIC_EDGE:
        raise InvalidInputError("metric", metric, f"one of {', '.join(PESSIMISTIC_EDGE)}")
    f = load_bands()
    e: BandEntry = getattr(f, metric)
    return TimingBand(metric, e.low_factor, e.high_factor, e.coverage, e.n_rows, e.n_sources, f.fitted)


def _edges(log_ratio: pd.Series) -> tuple[float, float]:
    """The band's edges in log space: the 10 % and 90 % quantiles, widened where needed to hold 0 (the
    estimate itself), so that a model biased on unseen sources still shows its estimate inside its band."""
    q_lo, q_hi = QUANTILES
    return min(float(log_ratio.quantile(q_lo)), 0.0), max(float(log_ratio.quantile(q_hi)), 0.0)


def fit_band(log_ratio: pd.Series, source: pd.Series) -> BandEntry:
    """Band factors from the residuals ``log_ratio`` = ln(measured/predicted) of one metric (:func:`_edges`),
    and their coverage measured leave-one-source-out: each source's rows judged by edges fitted without it.
    Sources with no other source to fit on are not counted in the coverage."""
    covered, counted = 0, 0
    for s in source.unique():
        others = log_ratio[source != s]
        if others.empty:
            continue
        lo, hi = _edges(others)
        held = log_ratio[source == s]
        covered += int(((held >= lo) & (held <= hi)).sum())
        counted += len(held)
    if counted == 0:
        raise InvalidInputError("source", sorted(set(source)), "measurements from at least two sources")
    lo, hi = _edges(log_ratio)
    return BandEntry(low_factor=float(np.exp(lo)), high_factor=float(np.exp(hi)), coverage=covered / counted,
                     n_rows=len(log_ratio), n_sources=int(source.nunique()))


__all__ = ["BAND_FILE", "PESSIMISTIC_EDGE", "QUANTILES", "BandEntry", "BandFile", "TimingBand", "fit_band",
           "load_bands", "parse_band_file", "timing_band"]
