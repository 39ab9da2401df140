"""scripts/measure_decode.py runs on the CPU with a tiny config and writes an importable profile."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from calculators.profiles import detect_and_load

ROOT = Path(__file__).resolve().parent.parent
TINY = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
        "max_position_embeddings": 512, "torch_dtype": "float32"}


def test_tiny_model_on_cpu(tmp_path):
    pytest.importorskip("torch", reason="torch is an optional extra (pip install torch) for measure_decode.py")
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(TINY))
    out = tmp_path / "profile.csv"
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "measure_decode.py"), str(cfg), "--batch", "1", "4",
                        "--context", "16", "64", "--prompt", "32", "--repeats", "2", "--device", "cpu",
                        "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    profile = detect_and_load(out.name, out.read_bytes())
    assert profile.source_format == "generic-csv" and len(profile.load_points) == 5
    decode = [lp for lp in profile.load_points if lp.tpot_s and lp.tpot_s.median]
    assert len(decode) == 4 and all(lp.tpot_s.median > 0 for lp in decode)
    assert profile.gpu == "cpu" and "torch" in profile.engine_version
