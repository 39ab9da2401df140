"""How sure a timed figure is: the 80 % band of the shipped performance model, measured on public data.

Every timed figure the product shows (TPOT, TTFT, output tokens/s) is the performance model's point
estimate. Its band is ``[estimate × low_factor, estimate × high_factor]``. The factors are quantiles of
``measured / predicted`` over the public measurement corpus (docs/performance-model.md §11), every row
predicted by coefficients fitted without its source, and every source weighted alike (one source's
thousand rows count no more than another's ten: a user's deployment is a setup the fit has not seen, like
a new source). The quantiles are calibrated rather than assumed: the band takes the narrowest tail level
of :data:`TAIL_LEVELS` whose leave-one-source-out coverage — each source's rows judged by edges fitted
without it, the shares averaged over sources — reaches :data:`TARGET_COVERAGE`. ``coverage`` is that
average, ``row_coverage`` the share of all held-out rows. The factors are fitted by
``benchmarks/fit_timing_bands.py`` and stored in ``calculators/data/timing_bands.toml`` with the date and
corpus they came from; they describe the model as shipped, so the script is re-run whenever the model's
terms or default coefficients change.

A GPU whose family has no run in the corpus (a T4, an MI250X, a Gaudi or a TPU) takes the fit's reference set
(docs/performance-model.md §4), and how far off that comes out is a different question: its band
(``unseen_family``) is fitted the same way on each family's rows predicted by the fit without that family, every
family counted once (and within it every source alike), its coverage judged with each family left out in turn.

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
from calculators.perf.coefficients import fitted_on, load_fit, parse_toml_as
from calculators.specs.schema import GPUSpec

if TYPE_CHECKING:  # pandas only types fit_band's arguments: llmcap plan starts without it
    import pandas as pd

Metric = Literal["tpot", "ttft", "throughput"]
BAND_FILE = "timing_bands.toml"
TARGET_COVERAGE = 0.80
"""The share of a left-out source's measurements the band must hold, on average over sources."""
TAIL_LEVELS = (0.10, 0.05, 0.025, 0.01)
"""Tail levels tried in turn: the band is the ``(tail, 1 − tail)`` source-weighted quantiles."""
#: Which edge is the pessimistic one: a longer time, a lower throughput.
PESSIMISTIC_EDGE: dict[str, str] = {"tpot": "high", "ttft": "high", "throughput": "low"}


class BandEntry(BaseModel):
    """One metric's band: factors on the point estimate and their measured coverage."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    low_factor: float = Field(gt=0, description="tail quantile of measured/predicted")
    high_factor: float = Field(gt=0, description="1 − tail quantile of measured/predicted")
    tail: float = Field(gt=0, lt=0.5, description="the quantile level of the low edge (source-weighted)")
    coverage: float = Field(ge=0, le=1, description="share of a left-out source's (for the unseen-family band: "
                                                     "GPU family's) rows inside the band, averaged over them")
    row_coverage: float = Field(ge=0, le=1, description="share of all held-out rows inside the band")
    n_rows: int = Field(ge=1, description="compared rows the quantiles come from")
    n_sources: int = Field(ge=1, description="independent sources among them")

    @model_validator(mode="after")
    def _ordered(self) -> BandEntry:
        if self.low_factor > self.high_factor:
            raise ValueError(f"low_factor {self.low_factor} is above high_factor {self.high_factor}")
        return self


class MetricBands(BaseModel):
    """One band per timed metric."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tpot: BandEntry
    ttft: BandEntry
    throughput: BandEntry


class BandFile(MetricBands):
    """``timing_bands.toml``: where the factors came from, one entry per metric (sources held out) and one per
    metric for a GPU whose family has no runs (``unseen_family``: families held out)."""

    fitted: dt.date
    corpus: str = Field(min_length=1, description="the measurements the factors were fitted on")
    method: str = Field(min_length=1)
    unseen_family: MetricBands


@dataclass(frozen=True)
class TimingBand:
    """The 80 % band of one metric (see the module docstring)."""

    metric: str
    low_factor: float
    high_factor: float
    coverage: float
    row_coverage: float
    n_rows: int
    n_sources: int
    fitted: dt.date
    held_out: Literal["source", "family"] = "source"

    @property
    def held_out_text(self) -> str:
        """What the coverage was measured on, to follow "held on average 88 % of": each left-out source's
        measurements, or (a GPU of a family without runs) each left-out GPU family's."""
        if self.held_out == "family":
            return "the measurements of each GPU family left out of the fit (this GPU's family has no runs)"
        return "the measurements of each public source left out of their fit"

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


def seen_family(gpu: GPUSpec) -> bool:
    """Whether ``gpu``'s family has runs in the corpus (an entry in the shipped fit)."""
    return fitted_on(load_fit().shipped, gpu.vendor, gpu.architecture) is not None


def timing_band(metric: str, gpu: GPUSpec | None = None) -> TimingBand:
    """The shipped 80 % band of ``metric`` (``"tpot"``, ``"ttft"`` or ``"throughput"``): for ``gpu``, the
    unseen-family band where its family has no runs (:func:`seen_family`), else the sources' band."""
    if metric not in PESSIMISTIC_EDGE:
        raise InvalidInputError("metric", metric, f"one of {', '.join(PESSIMISTIC_EDGE)}")
    f = load_bands()
    unseen = gpu is not None and not seen_family(gpu)
    e: BandEntry = getattr(f.unseen_family if unseen else f, metric)
    return TimingBand(metric, e.low_factor, e.high_factor, e.coverage, e.row_coverage, e.n_rows, e.n_sources,
                      f.fitted, "family" if unseen else "source")


def band_factors(gpu: GPUSpec | None = None) -> dict:
    """``gpu``'s bands as JSON: per metric ``[low_factor, high_factor]``, their ``coverage`` and what was held
    out to measure it (``held_out``: ``"source"``, or ``"family"`` where its family has no runs)."""
    bands = {m: timing_band(m, gpu) for m in PESSIMISTIC_EDGE}
    return {**{m: [b.low_factor, b.high_factor] for m, b in bands.items()},
            "coverage": {m: b.coverage for m, b in bands.items()}, "held_out": bands["tpot"].held_out}


def source_weights(source: ArrayLike, within: ArrayLike | None = None) -> np.ndarray:
    """Each row's weight ``1 / rows of its source``: every source counts once in a quantile. With ``within``
    (each row's source, ``source`` then being a GPU family), every group counts once and within it every
    ``within`` subgroup alike: ``1 / (subgroups of the group × rows of the subgroup)``."""
    src = np.asarray(source).astype(str)
    if within is None:
        _, inverse, counts = np.unique(src, return_inverse=True, return_counts=True)
        return 1.0 / counts[inverse]
    pairs, pair, rows = np.unique(np.stack([src, np.asarray(within).astype(str)], axis=1), axis=0,
                                  return_inverse=True, return_counts=True)
    _, group = np.unique(pairs[:, 0], return_inverse=True)
    subgroups = np.bincount(group)[group]  # per (group, subgroup) pair: its group's number of subgroups
    pair = pair.ravel()
    return 1.0 / (subgroups[pair] * rows[pair])


def weighted_quantile(x: ArrayLike, weights: ArrayLike, q: float) -> float:
    """The ``q`` quantile of ``x`` with ``weights``: linear between the midpoints of each sorted value's
    share of the total weight (with equal weights, Hazen's ``(i − ½) / n``), the ends held flat."""
    order = np.argsort(np.asarray(x, dtype=float))
    xs, w = np.asarray(x, dtype=float)[order], np.asarray(weights, dtype=float)[order]
    mid = (np.cumsum(w) - w / 2) / w.sum()
    return float(np.interp(q, mid, xs))


def band_edges(log_ratio: ArrayLike, source: ArrayLike, tail: float,
               within: ArrayLike | None = None) -> tuple[float, float]:
    """The band's edges in log space: the source-weighted (:func:`source_weights`) ``tail`` and ``1 − tail``
    quantiles, widened where needed to hold 0 (the estimate itself), so that a model biased on unseen sources
    still shows its estimate inside its band."""
    w = source_weights(source, within)
    return (min(weighted_quantile(log_ratio, w, tail), 0.0), max(weighted_quantile(log_ratio, w, 1 - tail), 0.0))


def share_inside(held: ArrayLike, log_ratio: ArrayLike, source: ArrayLike, tail: float,
                 within: ArrayLike | None = None) -> tuple[int, float]:
    """``(rows, share)`` of the held-out residuals ``held`` inside the band fitted on the others' residuals
    ``log_ratio`` (by ``source``, and ``within`` it) at ``tail``."""
    h = np.asarray(held, dtype=float)
    lo, hi = band_edges(log_ratio, source, tail, within)
    return len(h), float(((h >= lo) & (h <= hi)).mean())


def held_out_coverage(log_ratio: ArrayLike, source: ArrayLike, tail: float,
                      within: ArrayLike | None = None) -> dict[str, tuple[int, float]]:
    """Per source (or group): ``(rows, share inside edges fitted without it)`` at ``tail``. Sources with no other
    source to fit on are left out."""
    lr, src = np.asarray(log_ratio, dtype=float), np.asarray(source)
    sub = None if within is None else np.asarray(within)
    return {str(s): share_inside(lr[src == s], lr[src != s], src[src != s], tail,
                                 None if sub is None else sub[src != s])
            for s in dict.fromkeys(src.tolist()) if not (src == s).all()}


def fit_band(log_ratio: pd.Series, source: pd.Series, within: pd.Series | None = None) -> BandEntry:
    """The band of one metric's residuals ``log_ratio`` = ln(measured/predicted) (:func:`band_edges`) at the first
    tail level of :data:`TAIL_LEVELS` whose leave-one-source-out coverage, averaged over sources, reaches
    :data:`TARGET_COVERAGE`; the widest level where none does (its coverage then says so). With ``within`` (the
    rows' sources), ``source`` holds the groups held out in turn (GPU families), each source weighted alike
    inside its group; ``n_sources`` counts the sources."""
    per: dict[str, tuple[int, float]] = {}
    for tail in TAIL_LEVELS:
        per = held_out_coverage(log_ratio, source, tail, within)
        if not per:
            raise InvalidInputError("source", sorted(set(source)), "measurements from at least two sources")
        if np.mean([share for _, share in per.values()]) >= TARGET_COVERAGE:
            break
    lo, hi = band_edges(log_ratio, source, tail, within)
    rows = sum(n for n, _ in per.values())
    return BandEntry(low_factor=float(np.exp(lo)), high_factor=float(np.exp(hi)), tail=tail,
                     coverage=float(np.mean([share for _, share in per.values()])),
                     row_coverage=sum(n * share for n, share in per.values()) / rows,
                     n_rows=len(log_ratio),
                     n_sources=len(set(np.asarray(source if within is None else within).tolist())))


__all__ = ["BAND_FILE", "PESSIMISTIC_EDGE", "TAIL_LEVELS", "TARGET_COVERAGE", "BandEntry", "BandFile", "MetricBands",
           "TimingBand", "band_edges", "band_factors", "fit_band", "held_out_coverage", "load_bands", "parse_band_file",
           "seen_family", "share_inside", "source_weights", "timing_band", "weighted_quantile"]
