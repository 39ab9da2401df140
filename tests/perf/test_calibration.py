"""Calibrated and measured performance models."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calculators.errors import InvalidInputError
from calculators.perf.calibration import Calibration, Measured, calibrate, calibrated, predicted_tpot_s, profile_points
from calculators.perf.model import PerformanceModel
from calculators.perf.roofline import Efficiencies, Roofline
from calculators.profiles import load_many
from calculators.specs.catalog import get_gpu, get_model
from tests.conftest import FIXTURES

VLLM_SWEEP = sorted((FIXTURES / "profiles").glob("vllm-benchmark_serving-v0.8.3_*.json"))
ROOT = Path(__file__).resolve().parents[2]


def sweep_profile():
    return load_many([(p.name, p.read_bytes()) for p in VLLM_SWEEP])


def test_fit_recovers_a_known_truth_on_held_out_batches():
    model, gpu = get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100")
    truth = Roofline(model, gpu, efficiencies=Efficiencies(compute=0.5, memory=0.6, step_overhead_s=0.004))
    train = pd.DataFrame({"batch_size": [1, 4, 16, 64, 256], "input_len": 1000, "output_len": 200})
    train["tpot_s"] = predicted_tpot_s(truth, train, truth.efficiencies)
    cal = calibrate(Roofline(model, gpu), train)
    assert cal.median_abs_error < 0.005
    test = pd.DataFrame({"batch_size": [2, 32, 128], "input_len": 1000, "output_len": 200})
    fitted = calibrated(Roofline(model, gpu), cal)
    assert predicted_tpot_s(fitted, test, fitted.efficiencies) == pytest.approx(
        predicted_tpot_s(truth, test, truth.efficiencies), rel=0.01)


def test_vllm_sweep_batches_by_littles_law():
    pts = profile_points(sweep_profile())
    # qps-1 file: 208.18 output tok/s × 24.56 ms mean TPOT = 5.11 sequences in flight
    assert pts.batch_size.iloc[0] == pytest.approx(208.177 * 0.0245644, rel=1e-3)
    assert list(pts.label) == ["1.0", "4.0", "16.0", "inf"]


def test_calibration_on_the_vllm_sweep_beats_the_defaults():
    profile = sweep_profile()
    pts = profile_points(profile)
    r = Roofline(get_model(profile.model), get_gpu("A100-40GB"), tensor_parallel_size=8)
    default_err = np.abs(predicted_tpot_s(r, pts, r.efficiencies) / pts.tpot_s - 1)
    cal = calibrate(r, pts)
    assert cal.median_abs_error < 0.05 < float(np.median(default_err))
    assert 0 < cal.compute_efficiency <= 1 and 0 < cal.memory_efficiency <= 1


def test_calibration_round_trips():
    cal = Calibration("m", "g", 2, 0.6, 0.8, 0.002, 0.03, 4, "file.json")
    assert Calibration.from_json(cal.to_json()) == cal
    e = Calibration.efficiencies_from_param(cal.to_param())
    assert (e.compute, e.memory, e.step_overhead_s) == (0.6, 0.8, 0.002)
    for bad in ("{", '{"model": "m"}', json.dumps({**json.loads(cal.to_json()), "compute_efficiency": 3})):
        with pytest.raises(InvalidInputError):
            Calibration.from_json(bad)
    with pytest.raises(InvalidInputError, match="cal"):
        Calibration.efficiencies_from_param("c0.5_m")


def test_calibration_belongs_to_its_model_and_gpu():
    cal = Calibration("meta-llama/Llama-3.1-8B", "H100-SXM", 1, 0.6, 0.8, 0.002, 0.03, 4)
    with pytest.raises(InvalidInputError, match="calibration"):
        calibrated(Roofline(get_model("Qwen/Qwen3-8B"), get_gpu("H100")), cal)


def test_measured_interpolates_and_refuses_to_extrapolate():
    pts = profile_points(sweep_profile())
    m = Measured.from_points(pts, gpus=8)
    assert isinstance(m, PerformanceModel)
    ctx = m.context_tokens
    assert m.decode_step_time_s(pts.batch_size.iloc[1], ctx) == pytest.approx(pts.tpot_s.iloc[1])
    assert m.decode_step_time_s(80, ctx) > m.decode_step_time_s(5.2, ctx)  # within 25 % of the largest batch
    with pytest.raises(InvalidInputError, match="measured range"):
        m.decode_step_time_s(1000, ctx)
    with pytest.raises(InvalidInputError, match="measured range"):
        m.prefill_time_s(8000)
    assert m.prefill_time_s(213.295) == pytest.approx(pts.ttft_s.iloc[0])


def test_cli_profile_import_calibrate_and_use(tmp_path):
    files = [str(p) for p in VLLM_SWEEP]

    def run(*args):
        return subprocess.run([sys.executable, "-m", "calculators.cli", *args], capture_output=True, text=True,
                              cwd=ROOT, timeout=120)
    doc = json.loads(run("profile", "import", *files, "--json").stdout)
    assert len(doc["load_points"]) == 4 and doc["model"] == "meta-llama/Llama-3.3-70B-Instruct"
    out = tmp_path / "cal.json"
    cal = json.loads(run("profile", "calibrate", *files, "--model", "meta-llama/Llama-3.3-70B-Instruct", "--gpu",
                         "A100-40GB", "-tp", "8", "-o", str(out), "--json").stdout)
    assert cal["median_abs_error"] < 0.05 and out.exists()
    perf = json.loads(run("perf", "--model", "meta-llama/Llama-3.3-70B-Instruct", "--gpu", "A100-40GB", "-tp", "8",
                          "--batch-size", "16", "--input-len", "213", "--output-len", "213", "--calibration",
                          str(out), "--json").stdout)
    assert perf["efficiencies"]["compute"] == pytest.approx(cal["compute_efficiency"])
    bad = run("profile", "import", str(FIXTURES / "hf_configs" / "Qwen__Qwen3-8B.json"))
    assert bad.returncode == 2 and "format" in bad.stderr
