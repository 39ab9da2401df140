"""Would efficiencies fitted per GPU family generalise? Leave-one-source-out on the public corpus.

    .venv/bin/python benchmarks/family_fit.py

For every GPU family and every source with rows of that family, the roofline's compute efficiency, memory
efficiency and step overhead are chosen on a grid (4 × 7 × 4) to minimise the median |ln(measured /
predicted)| of TPOT and output tokens/s per GPU over the *other* sources' rows of that family; the held-out
source is then predicted with them (no rows of its own: the default efficiencies). Prints the median |error|
and the bias per metric and family beside the defaults, and the efficiencies fitted on all sources.
It prints figures and changes nothing in the product (the defaults stay until a fit wins on held-out sources).
"""
from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from calculators.perf import accuracy as acc  # noqa: E402
from calculators.perf.roofline import Efficiencies  # noqa: E402

GRID = [Efficiencies(compute=c, memory=m, step_overhead_s=o) for c, m, o in itertools.product(
    (0.4, 0.55, 0.7, 0.85), (0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95), (0.001, 0.002, 0.004, 0.008))]
FIT_METRICS = ("tpot", "throughput")


def score(pred: pd.DataFrame) -> float:
    """Median |ln(measured / predicted)| over the fitted metrics (inf when there is none)."""
    p = pred[pred["metric"].isin(FIT_METRICS)]
    return float(np.median(np.abs(p["log_ratio"]))) if len(p) else np.inf


def fit(rows: pd.DataFrame) -> Efficiencies:
    """The grid point that predicts ``rows`` best."""
    return min(GRID, key=lambda e: score(acc.predict(rows, e)))


def leave_one_source_out(rows: pd.DataFrame) -> pd.DataFrame:
    """Each (family, source)'s rows predicted with efficiencies fitted on the family's other sources."""
    out = []
    for _, family in rows.groupby("gpu_family"):
        for source in family["source_id"].unique():
            train = family[family["source_id"] != source]
            out.append(acc.predict(family[family["source_id"] == source], fit(train) if len(train) else None))
    return pd.concat(out, ignore_index=True)


def _cell(e: pd.Series) -> str:
    return f"{np.median(np.abs(e)):5.0%} {np.median(e):+5.0%}" if len(e) else "     —      "


def main() -> None:
    t0 = time.perf_counter()
    rows = acc.comparable_rows()
    base, loso = acc.predict(rows), leave_one_source_out(rows)
    print("median |error| and bias: defaults vs per-family efficiencies fitted without the held-out source")
    for metric in acc.METRICS:
        b, r = base[base["metric"] == metric], loso[loso["metric"] == metric]
        print(f"\n{acc.LABELS[metric]:28s} {'n':>4s}  defaults      LOSO fit")
        print(f"  {'all':26s} {len(b):4d}  {_cell(b['error'])}  {_cell(r['error'])}")
        for family, g in b.groupby("gpu_family"):
            print(f"  {family:26s} {len(g):4d}  {_cell(g['error'])}  {_cell(r[r['gpu_family'] == family]['error'])}")
    print("\nefficiencies fitted on every source (compute, memory, step overhead [ms]):")
    for family, f in rows.groupby("gpu_family"):
        e = fit(f)
        print(f"  {family:26s} {e.compute:.2f} {e.memory:.2f} {e.step_overhead_s * 1e3:.0f}")
    print(f"\n{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
