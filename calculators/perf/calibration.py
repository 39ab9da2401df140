"""Calibrated and measured performance models, fitted to or read from real benchmark runs.

``Calibrated`` is the roofline whose compute efficiency, memory efficiency and fixed per-step
overhead are fitted to measured load points by least squares on relative error (a vectorised grid
search, then a finer grid around the best point: robust, no solver needed). ``Measured``
interpolates a measured curve and refuses to go far beyond it. Both implement
:class:`calculators.perf.model.PerformanceModel`.

A load point gives the mean batch by Little's law, ``B ≈ output tokens/s × TPOT`` (each running
sequence emits one token per TPOT), and its measured TPOT includes the prefill work interleaved
with decoding: ``TPOT ≈ step(B, I + O/2) + prefill(B prompts of I) / O``.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from calculators.errors import InvalidInputError
from calculators.perf.model import StepTimeMixin
from calculators.perf.roofline import Efficiencies, Roofline
from calculators.perf.serving import closed_loop_tpot_s
from calculators.validation import positive

if TYPE_CHECKING:  # pandas is imported where a frame is built (it costs ~0.4 s at app start-up)
    import pandas as pd

POINT_COLUMNS = ("batch_size", "input_len", "output_len", "tpot_s")
EXTRAPOLATION_LIMIT = 1.25  # Measured answers up to 25 % beyond the measured range, no further
_GRID_COMPUTE = np.linspace(0.05, 1.0, 20)
_GRID_MEMORY = np.linspace(0.05, 1.0, 20)
_GRID_OVERHEAD_S = np.concatenate([[0.0], np.geomspace(1e-4, 0.1, 31)])


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


@dataclass(frozen=True)
class Calibration:
    """Fitted constants of the roofline for one model, GPU and TP size, with the fit's quality."""

    model: str
    gpu: str
    tensor_parallel_size: int
    compute_efficiency: float
    memory_efficiency: float
    step_overhead_s: float
    median_abs_error: float
    points: int
    source: str = ""

    @property
    def efficiencies(self) -> Efficiencies:
        return Efficiencies(compute=self.compute_efficiency, memory=self.memory_efficiency,
                            step_overhead_s=self.step_overhead_s)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    def __post_init__(self) -> None:
        Efficiencies(compute=self.compute_efficiency, memory=self.memory_efficiency,
                     step_overhead_s=self.step_overhead_s)

    @classmethod
    def from_json(cls, text: str | bytes) -> Calibration:
        try:
            return cls(**json.loads(text, parse_constant=_reject_constant))
        except InvalidInputError:
            raise
        except (ValueError, TypeError, RecursionError) as exc:  # RecursionError: JSON nested 10,000 deep
            raise InvalidInputError("calibration", "file", f"a calibration saved by llmcap ({str(exc)[:60]})") from None

    def to_param(self) -> str:
        """Compact form for a permalink: ``c0.62_m0.81_o0.0021``."""
        return f"c{self.compute_efficiency:.3g}_m{self.memory_efficiency:.3g}_o{self.step_overhead_s:.3g}"

    @staticmethod
    def efficiencies_from_param(text: str) -> Efficiencies:
        """Parse :meth:`to_param` back (a malformed string is an input error)."""
        try:
            c, m, o = (float(part[1:]) for part in str(text).split("_"))
        except ValueError:
            raise InvalidInputError("cal", text, "the form c0.62_m0.81_o0.0021") from None
        return Efficiencies(compute=c, memory=m, step_overhead_s=o)


def _check_points(points: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in POINT_COLUMNS if c not in points]
    if missing:
        raise InvalidInputError("points", missing, f"columns {', '.join(POINT_COLUMNS)}")
    for c in POINT_COLUMNS:
        positive(c, points[c].to_numpy(dtype=float))
    return points


def predicted_tpot_s(r: Roofline, points: pd.DataFrame, e: Efficiencies) -> np.ndarray:
    """TPOT the roofline with efficiencies ``e`` predicts for each load point under load [s]: the steady-state
    step of :func:`calculators.perf.serving.closed_loop_tpot_s` (prefill of arriving prompts mixed in)."""
    b, i, o = (points[k].to_numpy(dtype=float) for k in ("batch_size", "input_len", "output_len"))
    return closed_loop_tpot_s(replace(r, efficiencies=e), b, i, o)


def fit_efficiencies(groups: list[tuple[Roofline, pd.DataFrame]]) -> tuple[Efficiencies, np.ndarray]:
    """Efficiencies minimising Σ (predicted / measured TPOT − 1)² over every group's points.

    Each group is one model/GPU/TP roofline with its measured load points; the constants are
    shared (they describe the GPU and engine). A 20 × 20 × 32 grid, then three finer grids around
    the best cell. Returns the fit and the relative errors of every point.
    """
    pts = [(r, _check_points(p)) for r, p in groups]
    if sum(len(p) for _, p in pts) < 2:
        raise InvalidInputError("points", sum(len(p) for _, p in pts), "at least two load points to fit")
    grid: tuple[np.ndarray, ...] = (_GRID_COMPUTE, _GRID_MEMORY, _GRID_OVERHEAD_S)
    for _ in range(4):
        ec, em, eo = (g.ravel()[:, None] for g in np.meshgrid(*grid, indexing="ij"))
        total = np.zeros(len(ec))
        for r, p in pts:
            e = Efficiencies(compute=ec, memory=em, step_overhead_s=eo,
                             allreduce_latency_s=r.efficiencies.allreduce_latency_s,
                             pcie_allreduce_latency_s=r.efficiencies.pcie_allreduce_latency_s,
                             pcie_link_efficiency=r.efficiencies.pcie_link_efficiency)
            total += np.sum((predicted_tpot_s(r, p, e) / p["tpot_s"].to_numpy(dtype=float) - 1) ** 2, axis=1)
        k = int(np.argmin(total))
        best = (float(ec[k, 0]), float(em[k, 0]), float(eo[k, 0]))
        grid = tuple(_refine(g, v, upper) for g, v, upper in zip(grid, best, (1.0, 1.0, np.inf), strict=True))
    fitted = Efficiencies(compute=best[0], memory=best[1], step_overhead_s=best[2])
    errors = np.concatenate([predicted_tpot_s(r, p, fitted) / p["tpot_s"].to_numpy(dtype=float) - 1
                             for r, p in pts])
    return fitted, errors


def calibrate(r: Roofline, points: pd.DataFrame, *, source: str = "") -> Calibration:
    """Fit compute/memory efficiency and step overhead of one model/GPU/TP to measured TPOT.

    Reports the median absolute relative error of the fit (see :func:`fit_efficiencies`).
    """
    fitted, errors = fit_efficiencies([(r, points)])
    return Calibration(model=r.model.id, gpu=r.gpu.id, tensor_parallel_size=int(np.ravel(r.tensor_parallel_size)[0]),
                       compute_efficiency=fitted.compute, memory_efficiency=fitted.memory,
                       step_overhead_s=fitted.step_overhead_s, median_abs_error=float(np.median(np.abs(errors))),
                       points=len(points), source=source)


def _refine(grid: np.ndarray, value: float, upper: float) -> np.ndarray:
    """A 15-point grid spanning the neighbours of ``value`` in ``grid``, within ``(0, upper]``."""
    i = int(np.argmin(np.abs(grid - value)))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    fine = np.linspace(lo, hi, 15)
    return fine[(fine >= 0) & (fine <= upper)]


def calibrated(r: Roofline, cal: Calibration) -> Roofline:
    """The same roofline with a calibration's constants (checks it is for this model and GPU)."""
    if (cal.model, cal.gpu) != (r.model.id, r.gpu.id):
        raise InvalidInputError("calibration", f"{cal.model} on {cal.gpu}",
                                f"a calibration for {r.model.id} on {r.gpu.id}")
    return replace(r, efficiencies=cal.efficiencies)


@dataclass(frozen=True)
class Measured(StepTimeMixin):
    """Interpolates a measured TPOT/TTFT curve over batch size; refuses to extrapolate far.

    ``batch_size`` and ``tpot_s`` come from the load points (log-linear interpolation in batch);
    ``ttft_s`` of the lightest load stands for the prefill of a prompt of ``input_len`` tokens and
    scales linearly with the prompt length within ``EXTRAPOLATION_LIMIT``.
    """

    batch_size: np.ndarray
    tpot_s: np.ndarray
    ttft_s: float
    input_len: float
    context_tokens: float
    gpus: int = 1

    @classmethod
    def from_points(cls, points: pd.DataFrame, *, gpus: int = 1) -> Measured:
        pts = _check_points(points).sort_values("batch_size")
        if len(pts) < 2:
            raise InvalidInputError("points", len(pts), "at least two load points to interpolate")
        if "ttft_s" not in pts or not np.isfinite(pts["ttft_s"].to_numpy(dtype=float)).any():
            raise InvalidInputError("points", "ttft_s", "TTFT at some load point")
        i, o = float(pts["input_len"].mean()), float(pts["output_len"].mean())
        return cls(pts["batch_size"].to_numpy(dtype=float), pts["tpot_s"].to_numpy(dtype=float),
                   float(pts["ttft_s"].iloc[0]), i, i + o / 2, gpus)

    @property
    def num_gpus(self) -> np.ndarray:
        return np.asarray(self.gpus)

    @property
    def request_overhead_s(self) -> float:
        """0: a measured TTFT already holds the latency outside the engine's steps."""
        return 0.0

    def _within(self, field: str, value: np.ndarray, lo: float, hi: float) -> None:
        if np.any(value < lo / EXTRAPOLATION_LIMIT) or np.any(value > hi * EXTRAPOLATION_LIMIT):
            raise InvalidInputError(field, np.asarray(value).tolist(),
                                    f"within {lo:g}–{hi:g} (the measured range, ±25 %); the measured profile "
                                    "cannot say what happens further out — use the calibrated roofline")

    def decode_step_time_s(self, batch_size: ArrayLike, context_tokens: ArrayLike) -> np.ndarray:
        b = np.asarray(positive("batch_size", batch_size), dtype=float)
        ctx = np.asarray(positive("context_tokens", context_tokens), dtype=float)
        self._within("batch_size", b, self.batch_size.min(), self.batch_size.max())
        self._within("context_tokens", ctx, self.context_tokens, self.context_tokens)
        return np.interp(np.log(b), np.log(self.batch_size), self.tpot_s)

    def mixed_step_time_s(self, batch_size: ArrayLike, context_tokens: ArrayLike, prefill_tokens: ArrayLike,
                          prompt_tokens: ArrayLike) -> np.ndarray:
        """The measured TPOT at this concurrency: it was measured under load, prefill mixing included."""
        return self.decode_step_time_s(batch_size, context_tokens)

    def prefill_time_s(self, prompt_tokens: ArrayLike, num_prompts: ArrayLike = 1) -> np.ndarray:
        p = np.asarray(positive("prompt_tokens", prompt_tokens), dtype=float)
        n = np.asarray(positive("num_prompts", num_prompts), dtype=float)
        self._within("prompt_tokens", p, self.input_len, self.input_len)
        return self.ttft_s * p / self.input_len * n


def profile_points(profile) -> pd.DataFrame:
    """Load points of an imported :class:`calculators.profiles.Profile` as calibration points.

    Mean batch by Little's law: ``B = output tokens/s × mean TPOT``; lengths are the measured
    means; TTFT is the median (queueing excluded as far as a median allows). Points without
    throughput or TPOT are skipped.
    """
    rows = []
    for lp in profile.load_points:
        tpot = lp.tpot_s and (lp.tpot_s.mean or lp.tpot_s.median)
        if not (lp.output_tokens_per_s and tpot and lp.mean_input_tokens and lp.mean_output_tokens):
            continue
        ttft = lp.ttft_s and (lp.ttft_s.median or lp.ttft_s.mean)
        rows.append({"batch_size": max(lp.output_tokens_per_s * tpot, 1.0), "input_len": lp.mean_input_tokens,
                     "output_len": lp.mean_output_tokens, "tpot_s": tpot, "ttft_s": ttft if ttft else np.nan,
                     "label": lp.label or f"{lp.request_rate_per_s or lp.concurrency}"})
    if not rows:
        raise InvalidInputError("profile", profile.source_files, "load points with throughput, TPOT and lengths")
    import pandas as pd
    return pd.DataFrame(rows)
