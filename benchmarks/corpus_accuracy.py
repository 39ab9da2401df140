"""The performance model against the public measurement corpus: uncorrected and leave-one-source-out.

    .venv/bin/python benchmarks/corpus_accuracy.py [--worst N] [--fit FILE]

Prints, per metric (TPOT, TTFT, output tokens/s per GPU), the error tables by GPU family and by source
(n, median |error|, bias, p90 |error|; uncorrected beside leave-one-source-out), the targets met or
missed, the per-source view (each source counted once: the median over sources of each source's median
|error|), the 80 % band and its coverage on held-out sources, the worst rows, the comparable and skipped
row counts (by reason), which measured key each comparison used, and the time each stage took.
``--fit FILE`` judges another fit file (its shipped profile and the refits it stores without each source)
instead of the shipped one: how two fits are compared (by their LOSO over sources, never in-sample).
The method is in calculators/perf/accuracy.py and docs/performance-model.md §11. A benchmark, not a
test: it prints figures and never fails on them.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calculators.perf.accuracy import (  # noqa: E402
    LABELS,
    METRICS,
    AccuracyReport,
    assemble,
    error_table,
    leave_one_source_out,
    predict,
    shipped_refits,
)
from calculators.perf.coefficients import FitFile, parse_fit_file  # noqa: E402
from calculators.perf.comparable import screen  # noqa: E402
from calculators.perf.measurements import measurements_frame  # noqa: E402
from calculators.report.accuracy_text import comparison_lines, report_lines  # noqa: E402


def timed_report(worst: int, fit: FitFile | None = None) -> tuple[AccuracyReport, dict[str, float]]:
    """The report, built stage by stage so each stage's wall time [s] can be printed; ``fit``: judge that fit
    file's profiles instead of the shipped ones."""
    times: dict[str, float] = {}
    t = time.perf_counter()
    frame = measurements_frame()
    times["load and validate the corpus"] = time.perf_counter() - t
    t = time.perf_counter()
    screened = screen(frame)
    times["screen (catalog look-ups, one roofline per configuration)"] = time.perf_counter() - t
    t = time.perf_counter()
    pred = predict(screened.rows, profile=None if fit is None else fit.shipped)
    times["predict (serving metrics per configuration)"] = time.perf_counter() - t
    t = time.perf_counter()
    uncorrected = error_table(pred)
    refits = shipped_refits(pred) if fit is None else {str(s): fit.without(str(s)) for s in pred["source_id"].unique()}
    loso = leave_one_source_out(pred, worst, refits)
    times["error tables, leave-one-source-out (stored refits), band coverage"] = time.perf_counter() - t
    return assemble(screened, uncorrected, loso), times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worst", type=int, default=10, help="how many worst rows to print")
    ap.add_argument("--fit", type=Path, help="a fit file to judge instead of the shipped one")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    fit = None if args.fit is None else parse_fit_file(args.fit.read_text(encoding="utf-8"))
    report, times = timed_report(args.worst, fit)
    print("\n".join(report_lines(report, by="gpu_family", worst=args.worst)))
    print("\nThe same errors by source")
    for metric in METRICS:
        print(f"{LABELS[metric]}")
        print("\n".join(comparison_lines(report, metric, "source")))
    print("\nEach source counted once: median over sources of each source's median |error| (bias)")
    for stage in ("uncorrected", "LOSO"):
        view = report.per_source(stage)
        for _, r in view.iterrows():
            print(f"  {stage:<11} {r['metric']:<11} {r['gpu_family']:<18} sources {int(r['sources']):2d}  "
                  f"|e| {100 * r['median_abs_error']:6.1f}%  bias {100 * r['bias']:+6.1f}%")
    print("\nBand coverage per held-out source")
    cov = report.coverage
    for _, r in cov[cov["source_id"] != "all"].iterrows():
        print(f"  {r['metric']:<11} {r['source_id']:<24} n {int(r['n']):5d}  coverage {100 * r['coverage']:5.1f}%")
    print("\nMeasured key used per comparison")
    for _, r in report.measured_keys().iterrows():
        print(f"  {r['metric']:<11} {r['measured_key']:<30} {int(r['n']):5d}")
    print("\nHow each row was predicted without its source")
    for (metric, level), n in report.predictions.groupby(["metric", "correction_level"]).size().items():
        print(f"  {metric:<11} {level:<28} {n:5d}")
    print("\nTiming")
    for stage, s in times.items():
        print(f"  {s:7.2f} s  {stage}")
    print(f"  {time.perf_counter() - start:7.2f} s  total (including printing)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
