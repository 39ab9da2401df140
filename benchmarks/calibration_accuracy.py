"""Cross-validated accuracy of the calibrated roofline on shared published measurements.

    .venv/bin/python benchmarks/calibration_accuracy.py

For every GPU with enough comparable rows in ``tests/fixtures/measured/published.json`` (static
batches, same engine), each row is predicted by a roofline calibrated on the *other* rows of that
GPU (leave-one-out; the efficiencies are shared across models, they describe GPU and engine).
Prints the median absolute error on throughput at the stated batch before (default efficiencies)
and after calibration. Issue 5's target: ≤ 10 % after calibration on held-out rows.
"""
from __future__ import annotations

import importlib.util
import statistics
from collections import defaultdict
from pathlib import Path

import pandas as pd

from calculators.perf.calibration import fit_efficiencies, predicted_tpot_s
from calculators.perf.roofline import Roofline
from calculators.specs.catalog import get_gpu, get_model

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("accuracy", ROOT / "benchmarks" / "accuracy.py")
accuracy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(accuracy)


def rows_by_gpu() -> dict[tuple[str, str], list[tuple[Roofline, pd.DataFrame, float]]]:
    """(GPU, source document) → [(roofline, its one-point frame, measured replica throughput)]."""
    import json
    rows = {r["id"]: r for r in json.loads(accuracy.DATA.read_text())}
    comps, _ = accuracy.compare(list(rows.values()))
    out = defaultdict(list)
    for c in comps:
        if c["metric"] != "throughput":
            continue
        r = Roofline(get_model(c["model"]), get_gpu(c["gpu"]), tensor_parallel_size=c["tp"],
                     quantization=c["quantization"], kv_cache_dtype=c["kv_cache_dtype"])
        b, o = c["batch"], c["output_len"]
        pts = pd.DataFrame({"batch_size": [b], "input_len": [c["input_len"]], "output_len": [o],
                            "tpot_s": [b / c["measured"]]})  # each sequence emits a token every B/throughput s
        out[(c["gpu"], c["source"])].append((r, pts, c["measured"]))
    return out


def main() -> None:
    print(f"{'GPU':12s} {'source':44s} {'rows':>4s} {'default |e|':>12s} {'calibrated |e|':>15s}  fitted (all rows)")
    before_all, after_all = [], []
    for (gpu, source), items in sorted(rows_by_gpu().items()):
        if len(items) < 4:
            continue
        before, after = [], []
        for k, (r, pts, measured) in enumerate(items):
            train = [(x[0], x[1]) for j, x in enumerate(items) if j != k]
            fitted, _ = fit_efficiencies(train)
            predicted_default = float(pts["batch_size"].iloc[0] / predicted_tpot_s(r, pts, r.efficiencies)[0])
            predicted_cal = float(pts["batch_size"].iloc[0] / predicted_tpot_s(r, pts, fitted)[0])
            before.append(abs(predicted_default / measured - 1))
            after.append(abs(predicted_cal / measured - 1))
        full, _ = fit_efficiencies([(x[0], x[1]) for x in items])
        before_all += before
        after_all += after
        print(f"{gpu:12s} {source[:44]:44s} {len(items):4d} {statistics.median(before):11.1%} "
              f"{statistics.median(after):14.1%}  compute {full.compute:.2f}, memory {full.memory:.2f}, "
              f"overhead {full.step_overhead_s * 1e3:.2f} ms")
    print(f"{'ALL':12s} {'':44s} {len(after_all):4d} {statistics.median(before_all):11.1%} "
          f"{statistics.median(after_all):14.1%}")
    print("target: median |error| ≤ 10 % after calibration on held-out rows of the same GPU and engine")


if __name__ == "__main__":
    main()
