"""Fuzzing of the public surfaces (issue 8): Python API, every CLI command, URL parameters of every view.

Short CI profile; ``benchmarks/fuzz_long.py`` runs the same strategies with ≥ 10,000 examples each.
Property: a valid answer or an InvalidInputError naming a field; never another exception, a NaN or a
negative count. Regression examples of the bugs fuzzing found are pinned with ``@example``.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz_surfaces import (
    API_SURFACES,
    APP_PAGES,
    app_params,
    check_app,
    check_cli,
    check_config,
    check_fleet,
    check_kv,
    check_log,
    check_profile,
    check_query,
    cli_argv,
)

pytestmark = pytest.mark.fuzz
SHORT = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)


@pytest.mark.parametrize("surface", sorted(API_SURFACES))
def test_api_surface(surface):
    strategy, check = API_SURFACES[surface]
    given(strategy)(SHORT(check))()


@SHORT
@given(cli_argv())
def test_cli(argv):
    check_cli(argv)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(APP_PAGES), app_params)
def test_app_query_params(page, params):
    check_app(page, params)


# ---------------------------------------------------------------------------------------------- regressions
# Each bug the fuzzing found, pinned as the example that found it (or its shrunk form).
_KV = dict(model="meta-llama/Llama-2-7b-hf", tp=1, pp=1, kv="auto", dtype="auto", seq=1, block=None, avail=0)
_LLAMA = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
          "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192,
          "torch_dtype": "bfloat16", "architectures": ["LlamaForCausalLM"], "model_type": "llama"}


@pytest.mark.parametrize("case", [
    {**_KV, "pp": []},                      # empty list passed validation, then int() raised TypeError
    {**_KV, "pp": [2, 3]},                  # a list where one number belongs
    {**_KV, "avail": float("nan")},         # NaN bytes → int64 min: a negative count
    {**_KV, "avail": float("inf")},
    {**_KV, "avail": 1e308},                # overflow on the cast to int64
])
def test_regression_kv(case):
    check_kv(case)


@pytest.mark.parametrize("patch", [{"model_type": []}, {"model_type": None}, {"num_hidden_layers": float("inf")},
                                   {"hidden_size": float("nan")}, {"architectures": {"a": 1}, "model_type": [1]}])
def test_regression_config(patch):
    check_config({**_LLAMA, **patch})  # TypeError / AttributeError / OverflowError before the fix


@pytest.mark.parametrize("text", [
    "INFO non-default args: {{'model': '0', 'tensor_parallel_size': 0, 'max_model_len': 0}}",  # TypeError
    "INFO 09-10 [kv_cache_utils.py:868] Maximum concurrency for -1 tokens per request: -1x\n"
    "INFO 09-10 [gpu_worker.py:298] Available KV cache memory: 1 GiB",                          # negative count
    "INFO 09-10 [kv_cache_utils.py:864] GPU KV cache size: -5 tokens\nINFO Available KV cache memory: 1 GiB",
    "INFO non-default args: " + "(" * 5000 + ")" * 5000,                                       # deep literal
])
def test_regression_log(text):
    check_log(text)


_FLEET = dict(model="meta-llama/Llama-3.2-1B", gpu="RTX-6000-Ada", tp=8, pp=1, ep=False, rate=2.5, i=379, o=300,
              ttft=2, tpot=0.05, ip95=None, op95=None, cap=0.5, price=None, n1=False, mml=None)


@pytest.mark.parametrize("patch", [{"o": 1e308, "ip95": 1e308},     # OverflowError: inf to integer
                                   {"rate": 4.4e285, "i": 4e16},     # OverflowError
                                   {"i": 3.9e180, "o": 1.0},         # ValueError: NaN to integer
                                   {"o": 1.9e-73, "price": 1e308},   # NaN USD per million tokens
                                   {"rate": 1.2e-38, "i": 1e-300, "o": 1e-300, "pp": 2}])  # ZeroDivisionError
def test_regression_fleet(patch):
    check_fleet({**_FLEET, **patch})


def test_regression_profile_deep_json():
    check_profile(("a.json", b"[" * 10_000 + b"]" * 10_000))


def test_regression_query_deep_cmodel():
    import base64
    import zlib
    deep = base64.urlsafe_b64encode(zlib.compress(b"[" * 5000 + b"]" * 5000)).decode()
    check_query({"cmodel": deep, "cgpu": "x~nan~1~1", "cal": "c0.6_m0.8"})


@pytest.mark.parametrize("argv", [
    ["capacity", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100", "--gpu-memory-utilization", "nan", "--json"],
    ["capacity", "--model", "meta-llama/Llama-3.1-8B", "--gpu-memory-gib", "1e308", "--json"],
    ["perf", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100", "--batch-size", "8", "--input-len", "1000",
     "--output-len", "100", "--step-overhead-ms", "inf", "--json"],
    ["capacity", "--model", "/etc/passwd", "--gpu", "H100"],
    ["simulate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "GB200", "--request-rate", "3.943018391925276e+16",
     "--input-len", "2048", "--output-len", "50", "--duration-s", "5", "--json"],             # MemoryError
    ["simulate", "--model", "mistralai/Mistral-7B-v0.3", "--gpu", "MI250X", "--request-rate", "2", "--input-len",
     "nan", "--output-len", "50", "--duration-s", "5", "--json"],                                # ValueError
    ["simulate", "--model", "openai/gpt-oss-120b", "--gpu", "MI325X", "--request-rate", "2", "--input-len", "500",
     "--output-len", "50", "--duration-s", "5", "--seed=-2879325", "--policy", "static"],        # ValueError
])
def test_regression_cli(argv):
    check_cli(argv)
