"""Hand-made corpus rows for the harness tests: a closed loop of Llama-3.1-8B on one H100, 16 in flight, 1,000 +
200 tokens, TPOT 20 ms, each test changing only the fields it is about."""
from __future__ import annotations

import pandas as pd

BASE = {"source_id": "a", "engine": "vllm", "gpu": "H100 SXM 80GB", "gpu_count": 1, "model": "meta-llama/Llama-3.1-8B",
        "precision": "bf16", "kv_cache_dtype": None, "tp": 1, "pp": 1, "ep": None, "dp": None, "input_len": 1000,
        "output_len": 200, "load_mode": "concurrency", "concurrency": 16, "request_rate": None, "batch_size": None,
        "disaggregated": False, "spec_decoding": None, "tpot_median_ms": 20.0}


def hand_rows(*rows: dict) -> pd.DataFrame:
    """Hand-made rows shaped like ``measurements_frame()`` (fields, then one column per metric key)."""
    return pd.DataFrame([BASE | r for r in rows])
