"""``llmcap accuracy``: the performance model scored against the public measurement corpus.

The report and its text load pandas and the corpus, so they are imported when the command runs, not when
``llmcap`` starts.
"""
from __future__ import annotations

import argparse
import json

METRICS = ("tpot", "ttft", "throughput")
BY = ("gpu_family", "source")


def cmd_accuracy(a: argparse.Namespace) -> int:
    from calculators.perf.accuracy import accuracy_report
    from calculators.report.accuracy_text import report_lines
    report = accuracy_report()
    if a.json:
        print(json.dumps(report.to_json(), indent=2))
        return 0
    print("\n".join(report_lines(report, METRICS if a.metric is None else (a.metric,), a.by)))
    return 0


def register(sub) -> None:
    """Add ``accuracy`` to the main parser's sub-parsers."""
    ac = sub.add_parser("accuracy", help="the performance model against the public measurement corpus")
    ac.add_argument("--metric", choices=METRICS, help="one metric only (default: all three)")
    ac.add_argument("--by", choices=BY, default="gpu_family", help="rows of the tables (default gpu_family)")
    ac.add_argument("--json", action="store_true", help="print the report as JSON")
    ac.set_defaults(func=cmd_accuracy)
