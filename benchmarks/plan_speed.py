"""Time ``llmcap plan`` with three GPU types, the fleet planner's README example.

    .venv/bin/python benchmarks/plan_speed.py [--runs N]

Target: ≤ 1 s for the whole command (a fresh process: interpreter, imports, catalog, planning, JSON). Prints
the median of ``--runs`` fresh processes and, to say where the time goes, the median of the same plan run
in one warm process (planning alone) and of ``llmcap --help`` (start-up and imports). The machine is shared,
so quote medians.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calculators.cli.main import main as llmcap  # noqa: E402

ARGS = ["plan", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100", "--gpu", "H200", "--gpu", "MI300X",
        "--request-rate", "40", "--input-len", "2000", "--output-len", "300", "--ttft-p99-ms", "1000",
        "--tpot-p99-ms", "50", "--json"]


def _process_s(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(Path(sys.executable).with_name("llmcap")), *args], check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - t0


def _in_process_s() -> float:
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        llmcap(ARGS)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    runs = ap.parse_args().runs
    _in_process_s()  # warm the catalog caches
    whole = statistics.median(_process_s(ARGS) for _ in range(runs))
    planning = statistics.median(_in_process_s() for _ in range(runs))
    start = statistics.median(_process_s(["--help"]) for _ in range(runs))
    print(f"llmcap plan, 3 GPU types: {whole:.2f} s per command (median of {runs}; target ≤ 1 s)")
    print(f"  planning in a warm process: {planning:.2f} s; start-up and imports (llmcap --help): {start:.2f} s")


if __name__ == "__main__":
    main()
