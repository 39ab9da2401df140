"""benchmarks/fit_performance.py's parameter space: θ → profile, worked by hand."""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "fit_performance.py"


def _script():
    spec = importlib.util.spec_from_file_location("fit_performance", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_older_release_costs_its_current_release_times_the_shared_factor():
    fit = _script()
    space = fit.Space(["NVIDIA Hopper"])
    theta = space.mean.copy()
    at = {name: i for i, name in enumerate(space.names)}
    theta[at["engine:sglang"]] = math.log(0.7)
    theta[at["engine:older releases"]] = math.log(2.0)
    theta[at["engine:trtllm-old"]] = math.log(1.5)       # its own deviation
    engine = {e: f.overhead_factor for e, f in space.profile(theta).engine.items()}
    assert engine["sglang"] == pytest.approx(0.7)
    assert engine["sglang-old"] == pytest.approx(0.7 * 2.0)      # SGLang's × the older releases'
    assert engine["trtllm-old"] == pytest.approx(1.0 * 2.0 * 1.5)
    assert engine["vllm-v0"] == pytest.approx(2.0)               # vLLM V1 is the reference (1)
    assert engine["lmdeploy"] == engine["atom"] == pytest.approx(1.0)
    assert len(space.names) == len(space.sd) == 16 + 3 + 7 + 1
    assert np.all(space.sd > 0)
