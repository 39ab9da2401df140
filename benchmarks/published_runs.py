"""Write ``calculators/data/published_runs.toml``: what the public runs of each setup measured against the model.

    .venv/bin/python benchmarks/published_runs.py [--check]

Every comparable row of the public measurement corpus is predicted by the coefficients refitted without its source
(the refits ``performance_fit.toml`` stores, as ``llmcap accuracy`` uses them), and the held-out errors are
summarised per model, GPU, tensor-parallel size, weight format, prompt size and metric, and per GPU family and
metric (``calculators.perf.published_runs``; docs/performance-model.md §11). Re-run it with
``benchmarks/fit_timing_bands.py`` whenever the model's terms, its coefficients or the corpus change; ``--check``
prints the file without writing it. About 10 s.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calculators.perf.accuracy import loso_rows, predict, shipped_refits  # noqa: E402
from calculators.perf.coefficients import load_fit, parse_toml_as  # noqa: E402
from calculators.perf.comparable import screen  # noqa: E402
from calculators.perf.measurements import load_sources, measurements_frame  # noqa: E402
from calculators.perf.published_runs import (  # noqa: E402
    PUBLISHED_RUNS_FILE,
    PublishedRun,
    PublishedRunsFile,
    family_run_entries,
    published_run_entries,
)

OUT = ROOT / "calculators" / "data" / PUBLISHED_RUNS_FILE


def _value(v: object) -> str:
    return json.dumps(v, ensure_ascii=False) if not isinstance(v, float) else f"{v:.4g}"


def published_runs_toml() -> str:
    """The file's text, from today's corpus and the shipped fit's held-out refits."""
    frame = measurements_frame()
    rows = screen(frame).rows
    pred = predict(rows)
    loso = loso_rows(pred, shipped_refits(pred))  # each source predicted by the fit that never saw it
    publishers = {s.source_id: s.publisher for s in load_sources().values()}
    lines = ["# What the public runs of each setup measured against the model, held out of the fit.",
             "# Written by benchmarks/published_runs.py; method in docs/performance-model.md §11.",
             f'written = "{dt.date.today().isoformat()}"', f'fit = "{load_fit().fitted.isoformat()}"',
             f'corpus = "public measurement corpus (docs/performance-model.md §11): {len(frame)} rows, '
             f'{frame["source_id"].nunique()} sources, {len(rows)} comparable"',
             'method = "median and 10th/90th percentile of predicted / measured - 1 per model, GPU, weight format, '
             'prompt size and metric, each row predicted by coefficients refitted without its source"', ""]
    for table, entries in (("run", published_run_entries(loso, publishers)),
                           ("family", family_run_entries(loso, publishers))):
        for e in entries:
            stored = e.model_dump(exclude=set(PublishedRun.model_computed_fields))  # the ratios follow from the errors
            lines += [f"[[{table}]]", *(f"{k} = {_value(v)}" for k, v in stored.items() if v is not None), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="print the file, do not write it")
    args = ap.parse_args(argv)
    text = published_runs_toml()
    parse_toml_as(PublishedRunsFile, text, PUBLISHED_RUNS_FILE)
    if args.check:
        print(text)
    else:
        OUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)} ({text.count('[[run]]')} setup entries, "
              f"{text.count('[[family]]')} family entries)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
