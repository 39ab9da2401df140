"""Serving metrics of one replica at a batch size, from any performance model.

For ``B`` concurrent requests of ``I`` input and ``O`` output tokens (continuous batching, steady
state): TPOT = decode step at the mean context ``I + O/2``; TTFT (no queue) = prefill of one prompt;
end-to-end = TTFT + (O − 1)·TPOT. In the time ``B`` requests take to finish, the replica runs
``O`` decode steps and prefills ``B`` prompts (batched, at the token budget), so

    output tokens/s = B·O / (O·TPOT + prefill(B prompts))

which is what a throughput benchmark at concurrency ``B`` measures.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from calculators.perf.model import PerformanceModel
from calculators.validation import positive


def serving_metrics(pm: PerformanceModel, batch_size: ArrayLike, input_len: ArrayLike,
                    output_len: ArrayLike) -> dict[str, np.ndarray]:
    """TTFT, TPOT, end-to-end latency [s] and throughputs [tokens/s, requests/s], broadcast."""
    b = np.asarray(positive("batch_size", batch_size), dtype=np.float64)
    i = np.asarray(positive("input_len", input_len), dtype=np.float64)
    o = np.asarray(positive("output_len", output_len), dtype=np.float64)
    prefill_s = pm.prefill_time_s(i, 1)
    tpot_s = pm.decode_step_time_s(b, i + o / 2)
    cycle_s = o * tpot_s + pm.prefill_time_s(i, b)
    out_tps = b * o / cycle_s
    shape = np.broadcast_shapes(np.shape(prefill_s), np.shape(cycle_s))
    out = {
        "prefill_s": prefill_s,
        "ttft_s": prefill_s,
        "tpot_s": tpot_s,
        "decode_step_s": tpot_s,
        "e2e_latency_s": prefill_s + (o - 1) * tpot_s,
        "output_tokens_per_s": out_tps,
        "output_tokens_per_s_per_gpu": out_tps / pm.num_gpus,
        "tokens_per_s_per_user": 1 / tpot_s,
        "requests_per_s": b / cycle_s,
    }
    return {k: np.broadcast_to(v, shape) for k, v in out.items()}
