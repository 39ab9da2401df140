"""Latency budget against an SLO: TTFT (queue + prefill) + (O − 1)·TPOT + network overhead.

docs/performance-model.md §8: a p95 budget of 300 ms and a service time of 200 ms leave max_wait ≤ 100 ms — an adaptive
micro-batcher may hold a request at most ``target − (service time + network)``.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from calculators.errors import InvalidInputError
from calculators.validation import positive


def latency_budget(*, target_s: ArrayLike, prefill_s: ArrayLike, tpot_s: ArrayLike, output_len: ArrayLike,
                   queue_s: ArrayLike = 0.0, network_s: ArrayLike = 0.0) -> dict[str, np.ndarray]:
    """Every component of the end-to-end latency [s], the total, and the margin to the target.

    ``margin_s`` < 0 is the shortfall; ``max_wait_s`` is the largest batching delay that still
    meets the target (0 when none does).
    """
    target = positive("target_s", target_s)
    o = positive("output_len", output_len)
    queue = np.asarray(queue_s, dtype=np.float64)
    network = np.asarray(network_s, dtype=np.float64)
    for name, v in (("queue_s", queue), ("network_s", network)):
        if np.any(~np.isfinite(v) | (v < 0)):
            raise InvalidInputError(name, v.tolist(), "a non-negative number of seconds")
    prefill = np.asarray(prefill_s, dtype=np.float64)
    decode = (o - 1) * np.asarray(tpot_s, dtype=np.float64)
    service = prefill + decode
    total = queue + service + network
    return {"queue_s": queue + 0 * total, "prefill_s": prefill + 0 * total, "decode_s": decode + 0 * total,
            "network_s": network + 0 * total, "total_s": total, "ttft_s": queue + prefill,
            "margin_s": target - total, "meets_target": total <= target,
            "max_wait_s": np.maximum(target - service - network, 0.0)}
