"""Generate tests/fixtures/hostile/: small hostile input files for tests/test_hostile.py.

    python scripts/make_hostile.py [OUT_DIR]

Only small files are written here (all < 64 KiB); files over the upload limits are generated at test
time in a temporary directory (see :func:`big_files`). Deterministic: the same bytes on every run.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "hostile"

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
         "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
         "vocab_size": 128256, "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}
LOG_V1 = ("INFO 09-10 12:00:00 [api_server.py:1] vLLM API server version 0.10.1\n"
          "INFO 09-10 12:00:40 [gpu_worker.py:298] Available KV cache memory: 32.06 GiB\n"
          "INFO 09-10 12:00:41 [kv_cache_utils.py:864] GPU KV cache size: 420,208 tokens\n")
LOG_V0 = ("INFO 05-01 10:00:00 llm_engine.py:200] Initializing an LLM engine (v0.6.3) with config: "
          "model='meta-llama/Llama-3.1-8B', tensor_parallel_size=1, max_seq_len=8192\n"
          "INFO 05-01 10:00:05 executor_base.py:110] # GPU blocks: 27000, # CPU blocks: 2048\n")


def files() -> dict[str, bytes]:
    rnd = random.Random(8)
    cfg_text = json.dumps(LLAMA)
    out: dict[str, bytes] = {
        "truncated.json": cfg_text[: len(cfg_text) // 2].encode(),
        "invalid.json": b"{hidden_size: 4096, 'num_hidden_layers': 32,}",
        "nan.json": b'{"hidden_size": NaN, "num_hidden_layers": Infinity, "mean_ttft_ms": NaN, '
                    b'"compute_efficiency": NaN, "memory_efficiency": -Infinity}',
        "duplicate_keys.json": cfg_text[:-1].encode() + b', "num_hidden_layers": -5, "hidden_size": "big"}',
        "deep.json": b"[" * 10_000 + b"]" * 10_000,
        "deep_object.json": b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
        "binary.bin": bytes(rnd.randrange(256) for _ in range(4096)),
        "binary_with_json_name.json": b"\x89PNG\r\n\x1a\n" + bytes(rnd.randrange(256) for _ in range(1024)),
        "utf16_bom.json": json.dumps(LLAMA).encode("utf-16"),
        "latin1.csv": "modèle,débit\nLlama,1,5\n".encode("latin-1"),
        "latin1.json": '{"model": "modèle", "hidden_size": 4096}'.encode("latin-1"),
        "empty.json": b"",
        "whitespace.json": b"  \n\t\n",
        "formula.csv": (b"arrival_time_s,input_tokens,output_tokens\n=cmd|' /C calc'!A0,+1,-1\n"
                        b"@SUM(A1:A9),=1+1,100\n0.5,100,100\n"),
        "formula_profile.csv": (b"concurrency,output_tokens_per_s,ttft_ms,tpot_ms,label\n"
                                b"1,=1+1,+5,-3,@SUM(A1)\n2,100,50,10,=HYPERLINK(\"http://x\")\n"),
        "absurd_config.json": json.dumps({**LLAMA, "num_hidden_layers": 10**12, "num_attention_heads": -32,
                                          "hidden_size": 10**15, "vocab_size": -1}).encode(),
        "absurd_config_floats.json": json.dumps({**LLAMA, "num_hidden_layers": 1e300, "hidden_size": 4096.5,
                                                 "num_key_value_heads": 0}).encode(),
        "config_wrong_types.json": json.dumps({**LLAMA, "architectures": {"a": 1}, "model_type": [1],
                                               "torch_dtype": 16, "rope_scaling": "yes",
                                               "quantization_config": [1, 2]}).encode(),
        "top_level_list.json": b"[1, 2, 3]",
        "top_level_string.json": b'"config"',
        "mixed_versions.log": (LOG_V0 + LOG_V1 + "INFO vLLM API server version 0.6.3\n"
                               "INFO non-default args: {'tensor_parallel_size': -4, 'max_model_len': 1e400}\n"
                               "INFO 09-10 12:00:41 [kv_cache_utils.py:864] GPU KV cache size: -5 tokens\n").encode(),
        "log_garbage.log": b"\x00\x01" * 100 + "ÿþ not a log".encode(),
        "calibration_nan.json": b'{"model": "m", "gpu": "H100", "tensor_parallel_size": 1, '
                                b'"compute_efficiency": NaN, "memory_efficiency": 0.8, "step_overhead_s": 0.002}',
        "calibration_wrong.json": b'{"compute_efficiency": "high", "unexpected": [1]}',
        "trace_nan.csv": b"arrival_time_s,input_tokens,output_tokens\nnan,100,100\n",
        "trace_negative.csv": b"arrival_time_s,input_tokens,output_tokens\n-1,-100,1e400\n",
        "trace_no_header.csv": b"1,2,3\n4,5,6\n",
    }
    return out


def big_files(directory: Path) -> dict[str, Path]:
    """Files just over each limit (generated at test time, never committed)."""
    from calculators.profiles import MAX_PROFILE_BYTES
    from calculators.specs.hf_config import MAX_CONFIG_BYTES
    directory.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, limit in (("over_config_limit.json", MAX_CONFIG_BYTES), ("over_profile_limit.json", MAX_PROFILE_BYTES),
                        ("over_upload_limit.json", upload_limit_bytes())):
        p = directory / name
        body = b'{"pad": "' + b"x" * (limit + 1) + b'"}'
        p.write_bytes(body)
        out[name] = p
    return out


def upload_limit_bytes() -> int:
    """``server.maxUploadSize`` of .streamlit/config.toml, in bytes (the setting is in MB)."""
    import tomllib
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    return int(cfg["server"]["maxUploadSize"] * 1024 * 1024)


def main(out: Path = OUT) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files().items():
        (out / name).write_bytes(data)
    print(f"wrote {len(files())} files to {out}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
