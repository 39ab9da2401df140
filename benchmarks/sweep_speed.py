"""Time the vectorised decode sweep over 1,000,000 configurations against a scalar Python loop.

    .venv/bin/python benchmarks/sweep_speed.py

Issue 4's target: 1,000,000 configurations in ≤ 1 s on the 2-core CI machine. The scalar loop
evaluates the same formula one configuration at a time (a sample, extrapolated to 1M).
Prints medians of repeated runs; the machine is shared, so quote the ratio.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from calculators.perf.roofline import Roofline
from calculators.perf.sweep import decode_sweep
from calculators.specs.catalog import get_gpu, get_model

MODELS = ["meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B", "Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B",
          "mistralai/Mixtral-8x7B-v0.1"]
GPUS = ["H100", "H200", "A100-80GB", "L40S", "B200"]
TPS = [1, 2, 4, 8]
QUANTS = ("none", "fp8")
BATCHES = np.arange(1, 101)
CONTEXTS = np.linspace(128, 32768, 50)


def main() -> None:
    models, gpus = [get_model(m) for m in MODELS], [get_gpu(g) for g in GPUS]
    decode_sweep(models, gpus, TPS, BATCHES[:2], CONTEXTS[:2], quantizations=QUANTS)  # warm caches
    times, n = [], 0
    for _ in range(5):
        t0 = time.perf_counter()
        df = decode_sweep(models, gpus, TPS, BATCHES, CONTEXTS, quantizations=QUANTS)
        times.append(time.perf_counter() - t0)
        n = len(df)
    vec = statistics.median(times)
    rooflines = {(m.id, g.id, q, t): Roofline(m, g, tensor_parallel_size=t, quantization=q)
                 for m in models for g in gpus for q in QUANTS for t in TPS}
    keys = list(rooflines)
    rng = np.random.default_rng(0)
    sample = 2000
    columns = (rng.integers(len(keys), size=sample), rng.choice(BATCHES, sample), rng.choice(CONTEXTS, sample))
    picks = [(keys[i], int(b), float(c)) for i, b, c in zip(*columns, strict=True)]
    t0 = time.perf_counter()
    for key, b, c in picks:
        rooflines[key].decode_step_time_s(b, c)
    per_config = (time.perf_counter() - t0) / sample
    loop_1m = per_config * n
    print(f"configurations            {n:,}")
    print(f"vectorised sweep          {vec:.3f} s (median of 5), {vec / n * 1e9:.0f} ns per configuration")
    print(f"scalar loop (extrapolated){loop_1m:8.1f} s ({per_config * 1e6:.0f} µs per configuration, {sample} sampled)")
    print(f"speed-up                  {loop_1m / vec:,.0f}×")


if __name__ == "__main__":
    main()
