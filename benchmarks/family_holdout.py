"""How far off the performance model comes out on a GPU family the fit has not seen (leave one family out).

    .venv/bin/python benchmarks/family_holdout.py [--jobs N] [--iterations N]

A catalog GPU whose family has no compared run (T4, MI250X, Gaudi, TPU) is priced with the reference set of the
fit (docs/performance-model.md §4), and no row of the corpus judges it. This measures what that costs on the
families that do have runs: for each, the fit is repeated on every other family's rows (warm-started from the
shipped fit, the method of ``benchmarks/fit_performance.py``) and the left-out family's rows are predicted with
the reference set, as an unseen family's would be. Prints per family and metric the rows, the median |error| and
the median signed error (error = predicted / measured − 1); docs/performance-model.md §11 quotes the figures.
About 17 minutes on 2 cores with ``--jobs 2``.
"""
from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.fit_performance import Space, fit  # noqa: E402
from calculators.perf.accuracy import comparable_rows, predict  # noqa: E402
from calculators.perf.coefficients import load_fit  # noqa: E402


def family_left_out(family: str, iterations: int) -> pd.DataFrame:
    """Rows, median |error| and bias per metric of ``family``'s rows, predicted by the fit without them."""
    rows = comparable_rows()
    train = rows[rows["gpu_family"] != family]
    space = Space(sorted(train["gpu_family"].unique()))
    theta = fit(train, space, space.theta(load_fit().shipped), iterations, log=lambda _: None)
    held = predict(rows[rows["gpu_family"] == family], profile=space.profile(theta))
    return held.groupby("metric")["error"].agg(n="size", median_abs_error=lambda e: e.abs().median(),
                                                bias="median")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=1, help="processes, one family each")
    ap.add_argument("--iterations", type=int, default=25)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    families = sorted(comparable_rows()["gpu_family"].unique())
    with ProcessPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        for family, table in zip(families, pool.map(partial(family_left_out, iterations=args.iterations), families),
                                 strict=True):
            print(f"{family} left out ({time.perf_counter() - t0:.0f} s)")
            for metric, r in table.iterrows():
                print(f"  {metric:<10} {int(r['n']):5d} rows  median |error| {r['median_abs_error']:6.1%}  "
                      f"bias {r['bias']:+6.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
