"""Fit the shipped 80 % bands of the timed figures and write ``calculators/data/timing_bands.toml``.

    .venv/bin/python benchmarks/fit_timing_bands.py [--check]

The bands describe the performance model as shipped, judged on data it has not seen: for each metric,
source-weighted quantiles of measured / predicted over every comparable row of the public measurement corpus,
each row predicted by the coefficients refitted without its source (the refits ``performance_fit.toml``
stores), at the narrowest tail level whose coverage of each source, judged with that source also left out of
the quantiles, averages 80 % (``calculators.perf.bands.fit_band``; docs/performance-model.md §11). The bands of a
GPU whose family has no runs (``[unseen_family.*]``) are fitted the same way on each family's rows predicted by
the refit without that family (``benchmarks/family_holdout.py --write`` stores those), families held out in turn.
Re-run it whenever the model's terms or default coefficients change;
``--check`` prints the figures without writing the file.
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calculators.perf.accuracy import (  # noqa: E402
    METRICS,
    loso_rows,
    predict,
    shipped_family_refits,
    shipped_refits,
)
from calculators.perf.bands import BAND_FILE, BandEntry, fit_band, parse_band_file  # noqa: E402
from calculators.perf.comparable import screen  # noqa: E402
from calculators.perf.measurements import measurements_frame  # noqa: E402

OUT = ROOT / "calculators" / "data" / BAND_FILE


def band_toml() -> str:
    """The band file's text, fitted on today's corpus."""
    frame = measurements_frame()
    pred = predict(screen(frame).rows)
    loso = loso_rows(pred, shipped_refits(pred))  # each source predicted by the fit that never saw it
    sources = int(frame["source_id"].nunique())
    lines = ["# The 80 % band of each timed figure, as factors on the shipped model's estimate.",
             "# Written by benchmarks/fit_timing_bands.py; method in docs/performance-model.md §11.",
             f"fitted = {dt.date.today().isoformat()}",
             f'corpus = "public measurement corpus (docs/performance-model.md §11): '
             f'{len(frame)} rows, {sources} sources"',
             'method = "source-weighted quantiles (tail, 1 - tail) of measured / prediction by coefficients refitted '
             'without the measurement\'s source, at the narrowest tail whose leave-one-source-out coverage averages '
             '80 % over sources; unseen_family: the same, on each GPU family\'s rows predicted by coefficients '
             'refitted without that family, families held out in turn and each counted once"', ""]
    for metric in METRICS:
        sub = loso[loso["metric"] == metric]
        lines += _entry(metric, fit_band(sub["loso_log_ratio"], sub["source_id"]))
    unseen = loso_rows(pred, shipped_family_refits(pred), by="gpu_family")  # each family by the fit without it
    for metric in METRICS:
        sub = unseen[unseen["metric"] == metric]
        lines += _entry(f"unseen_family.{metric}", fit_band(sub["loso_log_ratio"], sub["gpu_family"],
                                                            within=sub["source_id"]))
    return "\n".join(lines)


def _entry(table: str, e: BandEntry) -> list[str]:
    return [f"[{table}]", f"low_factor = {e.low_factor:.4f}", f"high_factor = {e.high_factor:.4f}",
            f"tail = {e.tail}", f"coverage = {e.coverage:.4f}", f"row_coverage = {e.row_coverage:.4f}",
            f"n_rows = {e.n_rows}", f"n_sources = {e.n_sources}", ""]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="print the bands, do not write the file")
    args = ap.parse_args(argv)
    text = band_toml()
    parse_band_file(text)
    print(text)
    if not args.check:
        OUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
