"""``llmcap profile import|calibrate``: read measured benchmark runs; fit the model to them."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from calculators.cli.flags import Parser, add_model_on_gpu, plain_roofline, read_files
from calculators.perf.calibration import calibrate, profile_points
from calculators.perf.roofline import Efficiencies
from calculators.profiles import load_many


def cmd_profile_import(a: argparse.Namespace) -> int:
    profile = load_many(read_files(a.files))
    doc = profile.model_dump(mode="json")
    if a.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"{profile.source_format}: {profile.model or 'model not stated'} on {profile.gpu or 'GPU not stated'}, "
          f"{len(profile.load_points)} load point(s)")
    for lp in profile.load_points:
        load = f"rate {lp.request_rate_per_s:g}/s" if lp.request_rate_per_s is not None else f"conc {lp.concurrency}"
        tpot = lp.tpot_s.median if lp.tpot_s and lp.tpot_s.median else (lp.tpot_s.mean if lp.tpot_s else None)
        ttft = lp.ttft_s.median if lp.ttft_s else None
        print(f"  {load:14s} {lp.output_tokens_per_s or 0:10,.0f} out tok/s  TTFT p50 "
              f"{(ttft or 0) * 1e3:8.1f} ms  TPOT {(tpot or 0) * 1e3:7.2f} ms")
    return 0


def cmd_profile_calibrate(a: argparse.Namespace) -> int:
    profile = load_many(read_files(a.files))
    r = plain_roofline(a, Efficiencies())
    cal = calibrate(r, profile_points(profile), source=", ".join(profile.source_files))
    if a.output:
        Path(a.output).write_text(cal.to_json())
    doc = {**json.loads(cal.to_json()), "permalink_param": cal.to_param()}
    if a.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"{cal.model} on {cal.gpu} × {cal.tensor_parallel_size}: compute efficiency {cal.compute_efficiency:.2f}, "
          f"memory efficiency {cal.memory_efficiency:.2f}, step overhead {cal.step_overhead_s * 1e3:.2f} ms "
          f"(median |error| {cal.median_abs_error:.1%} over {cal.points} points)")
    return 0


def register(sub) -> None:
    """Add ``profile import`` and ``profile calibrate`` to the main parser's sub-parsers."""
    pr = sub.add_parser("profile", help="import measured benchmark runs and calibrate the model on them")
    prs = pr.add_subparsers(dest="profile_command", required=True, parser_class=Parser)
    imp = prs.add_parser("import", help="read benchmark files into one normalised profile")
    imp.add_argument("files", nargs="+")
    imp.add_argument("--json", action="store_true")
    imp.set_defaults(func=cmd_profile_import)
    cal = prs.add_parser("calibrate", help="fit the roofline's efficiencies to a measured profile")
    cal.add_argument("files", nargs="+")
    add_model_on_gpu(cal)
    cal.add_argument("--output", "-o", help="save the calibration (JSON) here")
    cal.add_argument("--json", action="store_true")
    cal.set_defaults(func=cmd_profile_calibrate)
