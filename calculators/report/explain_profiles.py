""""Show the math" for measured profiles: Little's-law batch, the fitted TPOT formula, the knee rule, the SLO point.

Each builder returns ``{"formula", "substituted", "sources"}`` (the shape of
:mod:`calculators.report.explain_capacity`),
with the user's numbers written in. Pure: no streamlit, no plotly.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from calculators.profiles.analysis import MeasuredKnee, SloPoint


def math_littles_law(frame: pd.DataFrame, point: int) -> dict | None:
    """``B = output tokens/s × TPOT`` at one load point (``None`` when the point lacks either)."""
    row = frame.loc[frame["point"] == point].iloc[0]
    if not (np.isfinite(row["output_tokens_per_s"]) and np.isfinite(row["batch_tpot_s"])):
        return None
    which = "mean" if np.isfinite(row["tpot_mean_s"]) else "median"
    return {"formula": "B = output tokens/s × TPOT   (Little's law L = λ·W, counted in tokens)",
            "substituted": f"{row['label']}: B = {row['output_tokens_per_s']:,.1f} tok/s × "
                           f"{row['batch_tpot_s'] * 1e3:.2f} ms = {row['batch_size']:.2f} sequences",
            "sources": ["each running sequence emits one token per TPOT, so the sequences in flight = "
                        "token rate × time per token (J. D. C. Little, Operations Research 9(3), 1961)",
                        f"output tokens/s and {which} TPOT as the benchmark file reports them",
                        "TPOT excludes the first token: (e2e − TTFT) / (output tokens − 1)"]}


def math_fitted_tpot(calibration, overlay: pd.DataFrame, roofline) -> dict:
    """The TPOT formula the calibration fitted, with its constants and one load point substituted."""
    row = overlay.iloc[-1]
    b, i, o = float(row["batch_size"]), float(row["input_len"]), float(row["output_len"])
    peak = roofline.coefficients.peak_flop_per_s
    bw = roofline.coefficients.bandwidth_bytes_per_s
    c = calibration
    pred = float(row.get("calibrated_tpot_s", np.nan))
    return {"formula": "TPOT ≈ step(B, I + O/2) + prefill(B prompts of I) / O,  step = max(FLOP / (peak · eff_c), "
                       "bytes / (bandwidth · eff_m)) + TP all-reduce + overhead;  fit: minimise Σ (predicted / "
                       "measured − 1)² over eff_c, eff_m, overhead (grid, then 3 finer grids)",
            "substituted": f"eff_c = {c.compute_efficiency:.3f}, eff_m = {c.memory_efficiency:.3f}, overhead = "
                           f"{c.step_overhead_s * 1e3:.2f} ms (peak {float(np.ravel(peak)[0]) / 1e12:,.0f} "
                           f"TFLOP/s, bandwidth {float(np.ravel(bw)[0]) / 1e9:,.0f} GB/s per GPU); at "
                           f"{row['label']}: B = {b:.1f}, I = {i:.0f}, O = {o:.0f} → predicted "
                           f"{pred * 1e3:.2f} ms vs measured {row['measured_tpot_s'] * 1e3:.2f} ms "
                           f"({pred / row['measured_tpot_s'] - 1:+.1%}); median |error| over {c.points} points "
                           f"{c.median_abs_error:.1%}",
            "sources": ["docs/performance-model.md §9.2 (fit), §3 (terms)",
                        f"{c.model} on {c.gpu} × TP {c.tensor_parallel_size}; profile: {c.source or 'uploaded'}",
                        "docs/performance-model.md §3 (roofline)"]}


def math_knee(knee: MeasuredKnee) -> dict:
    """The 15 % knee rule with the measured doublings substituted."""
    parts = [f"B = {b:.1f}: {g:+.0%}" for b, g in zip(knee.batches, knee.gains, strict=True) if np.isfinite(g)]
    verdict = (f"knee at B = {knee.batch_size:.1f} ({knee.output_tokens_per_s:,.0f} tok/s)" if knee.reached else
               f"every measured doubling still gained ≥ {knee.threshold:.0%}: no knee up to B = "
               f"{knee.batch_size:.1f}; it lies beyond the run")
    return {"formula": f"knee = smallest B with T(2B) / T(B) − 1 < {knee.threshold:.0%}; T = measured output "
                       "tokens/s, interpolated in log2 B between measured batches (only where 2B was measured)",
            "substituted": ("gain of doubling — " + ", ".join(parts) + " → " if parts else "") + verdict,
            "sources": ["the same rule as the roofline curves (docs/performance-model.md §7: "
                        "stop where doubling the batch gains less than 15 %)",
                        "B from Little's law at each load point"]}


def math_slo(frame: pd.DataFrame, slo: SloPoint) -> dict:
    """Which loads meet the p99 TTFT/TPOT targets, and the largest that does."""
    checks = []
    for _, row in frame.iterrows():
        parts = []
        if slo.ttft_stat and slo.ttft_target_s:
            parts.append(f"TTFT {slo.ttft_stat} {row[f'ttft_{slo.ttft_stat}_s'] * 1e3:.0f} ms")
        if slo.tpot_stat and slo.tpot_target_s:
            parts.append(f"TPOT {slo.tpot_stat} {row[f'tpot_{slo.tpot_stat}_s'] * 1e3:.1f} ms")
        checks.append(f"{row['label']}: {', '.join(parts)} {'✓' if slo.meets[int(row['point'])] else '✗'}")
    targets = ", ".join(t for t in (
        f"TTFT ≤ {slo.ttft_target_s * 1e3:g} ms" if slo.ttft_target_s else "",
        f"TPOT ≤ {slo.tpot_target_s * 1e3:g} ms" if slo.tpot_target_s else "") if t) or "no target"
    best = frame.loc[frame["point"] == slo.point, "label"].iloc[0] if slo.point is not None else "none"
    return {"formula": "SLO point = the largest load whose p99 TTFT and p99 TPOT meet the targets",
            "substituted": f"targets {targets}; " + "; ".join(checks) + f" → {best}",
            "sources": ["targets: the sidebar's Workload & SLO (p99 TTFT / p99 TPOT)",
                        "percentiles as the benchmark file reports them (the highest it has where p99 is missing)"]}
