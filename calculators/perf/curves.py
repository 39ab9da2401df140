"""Throughput–latency curves over batch size, their knee and the SLO batch."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from calculators.errors import InvalidInputError
from calculators.perf.model import PerformanceModel
from calculators.perf.serving import serving_metrics
from calculators.validation import positive, positive_int

if TYPE_CHECKING:
    import pandas as pd

KNEE_THRESHOLD = 0.15  # docs/performance-model.md §7: stop where doubling the batch gains less than 15 %


def batch_grid(max_batch: int) -> np.ndarray:
    """Powers of two up to ``max_batch``, and ``max_batch`` itself [sequences]."""
    top = int(positive_int("max_batch", max_batch, scalar=True))
    grid = 2 ** np.arange(int(np.log2(top)) + 1)
    return np.unique(np.append(grid, top))


def batch_curve_arrays(pm: PerformanceModel, input_len: float, output_len: float,
                       max_batch: int) -> dict[str, np.ndarray]:
    """Serving metrics at every batch of :func:`batch_grid`, column by column."""
    b = batch_grid(max_batch)
    return {"batch_size": b, **{k: np.broadcast_to(v, b.shape)
                                for k, v in serving_metrics(pm, b, input_len, output_len).items()}}


def batch_curve(pm: PerformanceModel, input_len: float, output_len: float, max_batch: int) -> pd.DataFrame:
    """Serving metrics at every batch of :func:`batch_grid` — a tidy table."""
    import pandas as pd
    return pd.DataFrame(batch_curve_arrays(pm, input_len, output_len, max_batch))


def knee_batch(batch: ArrayLike, throughput: ArrayLike, threshold: float = KNEE_THRESHOLD) -> float:
    """Smallest batch ``B`` whose doubling gains less than ``threshold`` in throughput.

    ``batch`` must hold ``B`` and ``2B`` pairs (a power-of-two grid); throughput is interpolated
    in log-batch where ``2B`` is missing. Returns the largest batch when every doubling still pays.
    """
    b = np.asarray(batch, dtype=np.float64)
    t = np.asarray(throughput, dtype=np.float64)
    if b.ndim != 1 or b.size < 2 or b.shape != t.shape:
        raise InvalidInputError("batch", b.size, "two or more batch sizes with one throughput each")
    positive("knee_threshold", threshold)
    doubled = np.interp(np.log2(b * 2), np.log2(b), t)
    gain = doubled / t - 1
    ok = (gain < threshold) & (b * 2 <= b.max())
    return float(b[np.argmax(ok)]) if ok.any() else float(b.max())


def slo_batch(batch: ArrayLike, ttft_s: ArrayLike, tpot_s: ArrayLike, *, ttft_target_s: float | None = None,
              tpot_target_s: float | None = None) -> float | None:
    """Largest batch whose TTFT and TPOT meet their targets; ``None`` when no batch does."""
    b = np.asarray(batch, dtype=np.float64)
    ok = np.ones(b.shape, dtype=bool)
    if ttft_target_s is not None:
        ok &= np.asarray(ttft_s) <= positive("ttft_target_s", ttft_target_s)
    if tpot_target_s is not None:
        ok &= np.asarray(tpot_s) <= positive("tpot_target_s", tpot_target_s)
    return float(b[ok].max()) if ok.any() else None
