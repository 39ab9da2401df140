"""The normalised measured profile: run metadata plus one :class:`LoadPoint` per benchmark load.

Units are SI inside (docs/data-policy.md §3): seconds, tokens, requests; the unit is the suffix of the name.
Every tool's metric is mapped onto one definition (docs/profile-formats.md §8):

- ``ttft_s``: time from sending a request to its first streamed token.
- ``tpot_s``: decode time per output token *excluding* the first, per request,
  ``(e2e − ttft) / (output_tokens − 1)`` (vLLM TPOT, GuideLLM/AIPerf/GenAI-Perf "inter-token latency").
- ``itl_s``: gaps between consecutive streamed chunks, pooled over all requests (vLLM ITL,
  AIPerf "inter-chunk latency"). Equal to TPOT unless chunks carry several tokens.
- ``e2e_latency_s``: request latency, send to last token.

Models are frozen. Constructing one with a NaN, an infinity (other than ``request_rate_per_s``),
a negative number or non-monotone percentiles raises pydantic's ``ValidationError``; the importers
turn that into :class:`~calculators.errors.InvalidInputError` naming the file and the field
(:func:`build_profile`).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from calculators.errors import InvalidInputError

NonNeg = Annotated[float, Field(ge=0, allow_inf_nan=False)]
NonNegInt = Annotated[int, Field(ge=0)]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Stats(BaseModel):
    """Summary statistics of one latency metric [s]. A statistic the file does not give is ``None``."""

    model_config = _FROZEN

    mean: NonNeg | None = None
    median: NonNeg | None = None
    p90: NonNeg | None = None
    p95: NonNeg | None = None
    p99: NonNeg | None = None

    @model_validator(mode="after")
    def _monotone(self) -> Stats:
        given = [(n, getattr(self, n)) for n in ("median", "p90", "p95", "p99") if getattr(self, n) is not None]
        for (lo_name, lo), (hi_name, hi) in zip(given, given[1:], strict=False):
            # A relative tolerance absorbs the rounding of files that print 2 decimals.
            if lo > hi * (1 + 1e-9) + 1e-12:
                raise ValueError(f"percentiles must not decrease: {lo_name}={lo} > {hi_name}={hi}")
        return self

    @property
    def empty(self) -> bool:
        """Whether no statistic is known."""
        return all(getattr(self, n) is None for n in ("mean", "median", "p90", "p95", "p99"))


class LoadPoint(BaseModel):
    """One measured load level of a benchmark run.

    ``concurrency`` is the client's cap on in-flight requests [requests] and ``request_rate_per_s`` the
    offered arrival rate [requests/s] (``inf`` = all requests sent at once). Either may be ``None``.
    ``measured_concurrency`` is the average number of requests in flight, where the tool reports it.
    Throughputs are for the whole server (all GPUs) [requests/s, tokens/s].
    """

    model_config = _FROZEN

    label: str | None = None
    concurrency: NonNeg | None = None
    request_rate_per_s: Annotated[float, Field(ge=0)] | None = None
    measured_concurrency: NonNeg | None = None
    request_throughput_per_s: NonNeg | None = None
    request_goodput_per_s: NonNeg | None = None
    output_tokens_per_s: NonNeg | None = None
    total_tokens_per_s: NonNeg | None = None
    ttft_s: Stats = Stats()
    tpot_s: Stats = Stats()
    itl_s: Stats = Stats()
    e2e_latency_s: Stats = Stats()
    mean_input_tokens: NonNeg | None = None
    mean_output_tokens: NonNeg | None = None
    completed_requests: NonNegInt | None = None
    failed_requests: NonNegInt | None = None
    duration_s: NonNeg | None = None

    @field_validator("request_rate_per_s")
    @classmethod
    def _rate_not_nan(cls, v: float | None) -> float | None:
        if v is not None and math.isnan(v):
            raise ValueError("request rate is NaN")
        return v


class Profile(BaseModel):
    """A measured benchmark profile: where it came from and its load points, sorted by load."""

    model_config = _FROZEN

    model: str | None = None
    gpu: str | None = None
    tensor_parallel_size: Annotated[int, Field(ge=1)] | None = None
    engine: str | None = None
    engine_version: str | None = None
    source_format: str
    source_files: tuple[str, ...] = ()
    load_points: Annotated[tuple[LoadPoint, ...], Field(min_length=1)]
    notes: tuple[str, ...] = ()


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def build_profile(file: str, **fields: object) -> Profile:
    """Validate ``fields`` into a :class:`Profile`, raising :class:`InvalidInputError` naming ``file`` and the field.

    Load points are sorted by load (:func:`sort_points`).
    """
    points = fields.get("load_points")
    if not points:
        raise InvalidInputError(f"{file}: load_points", [], "at least one load point (this file is an empty sweep)")
    if not isinstance(points, Iterable):
        raise InvalidInputError(f"{file}: load_points", type(points).__name__, "a list of load points")
    validated: list[LoadPoint] = []
    for i, p in enumerate(points):
        try:
            validated.append(p if isinstance(p, LoadPoint) else LoadPoint.model_validate(p))
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InvalidInputError(
                f"{file}: load_points[{i}].{_loc(err['loc'])}", err.get("input"), _allowed(err)
            ) from None
    fields["load_points"] = sort_points(validated)
    try:
        return Profile.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InvalidInputError(f"{file}: {_loc(err['loc'])}", err.get("input"), _allowed(err)) from None


def _allowed(err: ErrorDetails) -> str:
    msg = err.get("msg", "invalid")
    if err.get("type") in ("finite_number",):
        return "a finite number (no NaN or infinity)"
    if err.get("type") in ("greater_than_equal",):
        return "a number ≥ 0 (negative values are not meaningful here)"
    return msg


def sort_points(points: tuple[LoadPoint, ...] | list[LoadPoint]) -> tuple[LoadPoint, ...]:
    """Sort load points by offered load.

    By concurrency when every point has a distinct one, else by request rate (``inf`` last, ties broken
    by concurrency), else by measured request throughput. The sort is stable.
    """
    points = list(points)
    concs = [p.concurrency for p in points if p.concurrency is not None]
    rates = [p.request_rate_per_s for p in points if p.request_rate_per_s is not None]
    if len(concs) == len(points) and len(set(concs)) == len(concs):
        return _sorted_by(points, concs)
    if len(rates) == len(points):
        return _sorted_by(points, [(r, p.concurrency or 0.0) for r, p in zip(rates, points, strict=True)])
    if len(concs) == len(points):
        return _sorted_by(points, concs)
    return tuple(sorted(points, key=lambda p: p.request_throughput_per_s or 0.0))


def _sorted_by(points: list[LoadPoint], keys: Sequence[float] | Sequence[tuple[float, float]]) -> tuple[LoadPoint, ...]:
    """``points`` in the (stable) order of ``keys``, one key per point."""
    return tuple(points[i] for i in sorted(range(len(points)), key=keys.__getitem__))
