"""How far off the performance model comes out on a GPU family the fit has not seen (leave one family out).

    .venv/bin/python benchmarks/family_holdout.py [--jobs N] [--iterations N] [--write] [--out FILE]

A catalog GPU whose family has no compared run (T4, MI250X, Gaudi, TPU) is priced with the reference set of the
fit (docs/performance-model.md §4), and no row of the corpus judges it. This measures what that costs on the
families that do have runs: for each, the fit is repeated on every other family's rows (warm-started from the
shipped fit, the method of ``benchmarks/fit_performance.py``) and the left-out family's rows are predicted with
the reference set, as an unseen family's would be. Prints per family and metric the rows, the median |error| and
the median signed error (error = predicted / measured − 1); docs/performance-model.md §11 quotes the figures.
``--write`` stores each family's refit in the fit file as a ``[[held_out_family]]`` table (replacing any there),
from which ``benchmarks/fit_timing_bands.py`` fits the bands of a GPU whose family has no runs and
``llmcap accuracy`` reports the figures above without refitting. Run it after every
``benchmarks/fit_performance.py``. About 12 minutes on 2 cores with ``--jobs 2`` (699 s on 2026-12-05).
"""
from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.fit_performance import OUT, Space, fit, profile_toml  # noqa: E402
from calculators.perf.accuracy import family_holdout_table, predict  # noqa: E402
from calculators.perf.coefficients import Profile, load_fit, parse_fit_file  # noqa: E402
from calculators.perf.comparable import comparable_rows  # noqa: E402

#: The table header that starts the leave-one-family-out refits in the fit file (they come last).
BLOCK = "[[held_out_family]]"


def refit_without_family(family: str, iterations: int) -> Profile:
    """The fit on every other family's rows, warm-started from the shipped fit."""
    rows = comparable_rows()
    train = rows[rows["gpu_family"] != family]
    space = Space(sorted(train["gpu_family"].unique()))
    return space.profile(fit(train, space, space.theta(load_fit().shipped), iterations, log=lambda _: None))


def with_family_refits(text: str, refits: dict[str, Profile]) -> str:
    """The fit file's ``text`` with its ``[[held_out_family]]`` tables replaced by ``refits``'."""
    head = text.split(BLOCK, 1)[0].rstrip("\n")
    lines = [head, ""]
    for family, profile in refits.items():
        lines += [BLOCK, f'family = "{family}"', "", *profile_toml("held_out_family.profile", profile)]
    out = "\n".join(lines)
    parse_fit_file(out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=1, help="processes, one family each")
    ap.add_argument("--iterations", type=int, default=25)
    ap.add_argument("--write", action="store_true", help="store the refits in the fit file")
    ap.add_argument("--out", type=Path, default=OUT, help="the fit file --write rewrites")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = comparable_rows()
    families = sorted(rows["gpu_family"].unique())
    with ProcessPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        refits = dict(zip(families, pool.map(partial(refit_without_family, iterations=args.iterations), families),
                          strict=True))
    print(f"refitted without each of {len(families)} families ({time.perf_counter() - t0:.0f} s)")
    table = family_holdout_table(predict(rows), dict(refits))
    for _, r in table.iterrows():
        print(f"{r['gpu_family']:<18} {r['metric']:<10} {int(r['n']):5d} rows  median |error| "
              f"{r['median_abs_error']:6.1%}  bias {r['bias']:+6.1%}")
    if args.write:
        args.out.write_text(with_family_refits(args.out.read_text(encoding="utf-8"), refits), encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
