"""The text of ``llmcap accuracy``: the performance model against the public measurement corpus, uncorrected
and leave-one-source-out (LOSO), beside the targets, with the 80 % band, its held-out coverage and the worst rows.
Formats an :class:`~calculators.perf.accuracy.AccuracyReport`; computes nothing."""
from __future__ import annotations

import math

import pandas as pd

from calculators.perf.accuracy import (
    ALL,
    BIAS_TARGET,
    LABELS,
    METRICS,
    TARGETS,
    AccuracyReport,
    worst_rows,
)
from calculators.perf.bands import load_bands

BY = {"gpu_family": "gpu_family", "source": "source_id"}
"""``--by`` choice → column of the error tables."""
_OTHER = {"gpu_family": "source_id", "source_id": "gpu_family"}


def _pct(x: float, signed: bool = False, decimals: int = 0) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    return f"{100 * x:+.{decimals}f}%" if signed else f"{100 * x:.{decimals}f}%"


def _verdict(met: bool) -> str:
    return "met" if met else "missed"


def _value(v: float, unit: str) -> str:
    """A measured or predicted value for display: latencies in ms, throughput in tokens/s per GPU."""
    return f"{v * 1e3:,.1f} ms" if unit == "s" else f"{v:,.0f} tok/s/GPU"


def comparison_lines(report: AccuracyReport, metric: str, by: str = "gpu_family") -> list[str]:
    """One metric's error table, uncorrected and LOSO side by side, one line per GPU family or source
    (``by``: ``gpu_family`` or ``source``) after the overall line."""
    col = BY[by]
    other = _OTHER[col]

    def pick(t: pd.DataFrame) -> pd.DataFrame:
        return t[(t["metric"] == metric) & (t[other] == ALL)].set_index(col)

    un, lo = pick(report.uncorrected), pick(report.loso)
    width = max([26, *(len(str(name)) for name in un.index)])  # the longest source id keeps its columns
    lines = [f"  {by:<{width}} {'n':>5} | {'|e| med':>8} {'bias':>7} {'p90 |e|':>8} | {'LOSO |e|':>8} {'bias':>7}"
             f" {'p90 |e|':>8}"]
    for name, u in un.iterrows():
        lrow = lo.loc[name]
        lines.append(f"  {str(name):<{width}} {int(u['n']):>5} | {_pct(u['median_abs_error']):>8} "
                     f"{_pct(u['bias'], True):>7} {_pct(u['p90_abs_error']):>8} | {_pct(lrow['median_abs_error']):>8} "
                     f"{_pct(lrow['bias'], True):>7} {_pct(lrow['p90_abs_error']):>8}")
    return lines


def per_source_lines(report: AccuracyReport, metric: str) -> list[str]:
    """Each source counted once: the median over sources of their median |error| and bias, uncorrected and
    LOSO, overall and per GPU family."""
    un = report.per_source("uncorrected")
    lo = report.per_source("LOSO").set_index(["metric", "gpu_family"])
    lines = [f"  per source (median over sources of each source's median) {'sources':>8} | {'|e| med':>8} "
             f"{'bias':>7} | {'LOSO |e|':>8} {'bias':>7}"]
    for _, u in un[un["metric"] == metric].iterrows():
        lrow = lo.loc[(metric, u["gpu_family"])]
        lines.append(f"    {str(u['gpu_family']):<54} {int(u['sources']):>8} | {_pct(u['median_abs_error']):>8} "
                     f"{_pct(u['bias'], True):>7} | {_pct(lrow['median_abs_error']):>8} {_pct(lrow['bias'], True):>7}")
    return lines


def target_lines(report: AccuracyReport, metric: str) -> list[str]:
    """The metric's two targets, uncorrected and LOSO, each "met" or "missed"; the median |error| to one decimal,
    so that 15.5 % (missed) does not read as 15 %."""
    t = report.targets[report.targets["metric"] == metric].set_index(["check", "stage"])
    if t.empty:
        return []
    out = []
    mae = [(s, t.loc[("median |error|", s)]) for s in ("uncorrected", "LOSO")]
    out.append(f"  target median |error| ≤ {TARGETS[metric]:.0%}: " + "; ".join(
        f"{s} {_pct(r['value'], decimals=1)} {_verdict(bool(r['met']))}" for s, r in mae))
    bias = [(s, t.loc[("GPU-family bias", s)]) for s in ("uncorrected", "LOSO")]
    out.append(f"  target every GPU family's bias within ±{BIAS_TARGET:.0%}: " + "; ".join(
        f"{s} {_verdict(bool(r['met']))}" + (f" ({r['detail']})" if r["detail"] else "") for s, r in bias))
    return out


def band_lines(report: AccuracyReport, metric: str) -> list[str]:
    """The 80 % band (source-weighted LOSO residual quantiles, calibrated) and its coverage on held-out sources."""
    band = report.band.set_index("metric")
    cov = report.coverage[(report.coverage["metric"] == metric) & (report.coverage["source_id"] == ALL)]
    if metric not in band.index:
        return []
    b = band.loc[metric]
    tail = float(b["tail"])
    covered = ("—" if cov.empty else f"{_pct(float(cov['coverage'].iloc[0]))} of each source's rows on average, "
               f"{_pct(float(cov['row_coverage'].iloc[0]))} of all {int(cov['n'].iloc[0])} rows")
    return [f"  80 % band: measured within × {b['low_factor']:.3g} … × {b['high_factor']:.3g} of the corrected "
            f"prediction (source-weighted residual quantiles {tail:.1%}/{1 - tail:.1%}); held-out coverage {covered}"]


def worst_lines(report: AccuracyReport, metric: str | None = None, n: int = 10) -> list[str]:
    """The rows furthest from their measurement when their source is left out of the fit."""
    w = report.worst if metric is None else worst_rows(report.predictions[report.predictions["metric"] == metric], n)
    lines = [f"  {'source':<22} {'model':<32} {'GPU':<16} {'TP':>3} {'conc.':>6} {'metric':<10} "
             f"{'measured':>16} {'predicted':>16} {'error':>8} {'LOSO':>8}"]
    for _, r in w.head(n).iterrows():
        conc = "—" if pd.isna(r["concurrency"]) else f"{r['concurrency']:.0f}"
        lines.append(f"  {r['source_id']:<22} {str(r['model'])[:32]:<32} {str(r['gpu'])[:16]:<16} {r['tp']:>3} "
                     f"{conc:>6} {r['metric']:<10} {_value(r['measured'], r['unit']):>16} "
                     f"{_value(r['predicted'], r['unit']):>16} {_pct(r['error'], True):>8} "
                     f"{_pct(r['loso_error'], True):>8}")
    return lines


def skipped_lines(report: AccuracyReport) -> list[str]:
    """Comparable and skipped row counts, the skipped ones by reason, and the catalog GPUs no row judges."""
    total = report.comparable_rows + len(report.skipped)
    lines = [f"{report.comparable_rows} of {total} corpus rows comparable; {len(report.skipped)} skipped:"]
    lines += [f"  {n:6d}  {reason}" for reason, n in report.skipped_by_reason().items()]
    if unjudged := report.gpus_without_family_runs():
        lines += ["", "Catalog GPUs of a family no compared row ran on (priced with every family's reference set; "
                  "no row judges them, their bands are those of a family left out, above; "
                  "docs/performance-model.md §11): " + ", ".join(unjudged)]
    return lines


def family_lines(report: AccuracyReport, metrics: tuple[str, ...] = METRICS) -> list[str]:
    """Leave one GPU family out: each family's median |error| (bias) per metric when the fit has not seen it, and
    the 80 % bands a GPU of a family without runs is shown with."""
    t = report.family_held_out
    if t.empty:
        return []
    shown = [m for m in metrics if (t["metric"] == m).any()]
    lines = ["A GPU family the fit has not seen (each family's rows predicted by the coefficients refitted without "
             "it, with their reference set, as a GPU of a family without runs is): median |error| (bias)",
             f"  {'family':<18} " + " ".join(f"{LABELS[m]:>22}" for m in shown)]
    for family, g in t.groupby("gpu_family", sort=True):
        cells = g.set_index("metric")
        lines.append(f"  {family:<18} " + " ".join(
            f"{(_pct(cells.at[m, 'median_abs_error']) + ' (' + _pct(cells.at[m, 'bias'], True) + ')'):>22}"
            if m in cells.index else f"{'—':>22}" for m in shown))
    bands = load_bands().unseen_family
    lines.append("  80 % bands of such a GPU (share of a left-out family's rows inside, on average): " + ", ".join(
        f"{LABELS[m]} × {getattr(bands, m).low_factor:.3g} … × {getattr(bands, m).high_factor:.3g} "
        f"({_pct(getattr(bands, m).coverage)})" for m in shown))
    return lines


def report_lines(report: AccuracyReport, metrics: tuple[str, ...] = METRICS, by: str = "gpu_family",
                 worst: int = 10) -> list[str]:
    """The whole text report: per metric the uncorrected and LOSO tables, targets and band; then the
    worst rows and the skipped counts."""
    lines = ["Performance model against the public measurement corpus (shipped fitted coefficients)",
             "error = predicted / measured − 1; |e| med = median |error|; bias = median signed error; LOSO = "
             "predicted by the coefficients refitted without the row's own source", ""]
    for metric in metrics:
        if not (report.uncorrected["metric"] == metric).any():
            continue
        lines.append(f"{LABELS[metric]} ({'ms' if metric != 'throughput' else 'tokens/s per GPU'})")
        lines += (comparison_lines(report, metric, by) + per_source_lines(report, metric)
                  + target_lines(report, metric) + band_lines(report, metric))
        lines.append("")
    one = metrics[0] if len(metrics) == 1 else None
    lines += [f"Worst {worst} rows left out of the fit (by |ln(measured / held-out prediction)|)"]
    lines += worst_lines(report, one, worst) + [""]
    if family := family_lines(report, metrics):
        lines += [*family, ""]
    return lines + skipped_lines(report)
