"""Long fuzzing run: the strategies of tests/fuzz_surfaces.py with many more examples.

    python benchmarks/fuzz_long.py [--examples 10000] [--app-examples 300] [--only SURFACE ...]

Prints, per surface, the number of cases run and of failures (with the first few failure messages).
Not a pass/fail test; the exit status is 1 when any surface had a failure. The AppTest surface runs
fewer examples by default (each case is a full app run, ~0.3–1 s).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import fuzz_surfaces as fs  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def run_surface(name: str, strategy, check, n: int, unpack: bool = False) -> tuple[int, int, list[str]]:
    counts = {"cases": 0, "failures": 0}
    messages: list[str] = []

    @settings(max_examples=n, deadline=None, phases=[Phase.generate], database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def body(case):
        counts["cases"] += 1
        if counts["cases"] % 1000 == 0:
            print(f"  {name}: {counts['cases']} cases, {counts['failures']} failures so far", flush=True)
        try:
            check(*case) if unpack else check(case)
        except fs.FuzzError as exc:
            counts["failures"] += 1
            if len(messages) < 5:
                messages.append(f"{exc} <- {case!r}"[:400])

    body()
    return counts["cases"], counts["failures"], messages


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=10_000)
    ap.add_argument("--app-examples", type=int, default=300, help="0 leaves the app's pages out")
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    surfaces = {k: (s, c, False, a.examples) for k, (s, c) in fs.API_SURFACES.items()}
    surfaces["cli"] = (fs.cli_argv(), fs.check_cli, False, a.examples)
    surfaces["app_query_params"] = (st.tuples(st.sampled_from(fs.APP_PAGES), fs.app_params), fs.check_app, True,
                                    a.app_examples)
    total_fail = 0
    print(f"{'surface':22s} {'cases':>7s} {'failures':>8s} {'seconds':>8s}", flush=True)
    for name, (strategy, check, unpack, n) in surfaces.items():
        if (a.only and name not in a.only) or n < 1:
            continue
        t = time.perf_counter()
        cases, failures, messages = run_surface(name, strategy, check, n, unpack)
        total_fail += failures
        print(f"{name:22s} {cases:7d} {failures:8d} {time.perf_counter() - t:8.1f}", flush=True)
        for m in messages:
            print(f"    {m}", flush=True)
    return 1 if total_fail else 0


if __name__ == "__main__":
    sys.exit(main())
