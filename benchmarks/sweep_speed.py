"""Time the vectorised decode sweep over 1,000,000 configurations against a scalar Python loop.

    .venv/bin/python benchmarks/sweep_speed.py

Targets: 1,000,000 configurations with their DataFrame in ≤ 4× a bare NumPy pass over the same 1e6
elements — the decode formula alone (``decode_terms`` on the broadcast grid, no labels, no frame) — and
far below a scalar Python loop (the same formula one configuration at a time, a sample extrapolated to
1M). A trivial elementwise pass (``x * 2.0`` over 1e6 float64) is printed for scale. Prints medians of
repeated runs; the machine is shared, so quote the ratios.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from calculators.perf.roofline import Efficiencies, Roofline, decode_terms
from calculators.perf.sweep import _expand, decode_sweep, stack_coefficients
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
    formula = _median_s(lambda: _formula_only(models, gpus))
    x = np.random.default_rng(1).random(n)
    trivial = _median_s(lambda: x * 2.0)
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
    print(f"formula alone (no frame)  {formula * 1e3:.1f} ms; sweep with DataFrame ÷ formula = {vec / formula:.1f}× "
          "(target ≤ 4×)")
    print(f"trivial pass x*2.0 (1e6)  {trivial * 1e3:.2f} ms; sweep with DataFrame ÷ trivial = {vec / trivial:.0f}×")


def _median_s(fn, repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _formula_only(models, gpus) -> np.ndarray:
    """The decode formula over the same grid: coefficients stacked, one broadcast, no labels or frame."""
    parts = [Roofline(m, g, tensor_parallel_size=np.array(TPS), quantization=q).coefficients
             for m in models for g in gpus for q in QUANTS]
    c = _expand(stack_coefficients(parts))
    return decode_terms(c, Efficiencies(), BATCHES[None, :, None].astype(float), CONTEXTS[None, None, :], 1)["step_s"]


if __name__ == "__main__":
    main()
