"""The pure modules behind the app: the URL codec of the scenario and the vLLM log reader."""
from __future__ import annotations

import math
import re

import pytest

from calculators.errors import InvalidInputError
from calculators.scenario import (
    QUERY_KEYS,
    Scenario,
    config_from_fields,
    custom_gpu,
    decode_config,
    decode_custom_gpu,
    encode_config,
    encode_custom_gpu,
    scenario_from_query,
    scenario_to_query,
)
from calculators.vllm.startup_log import comparison_rows, parse_vllm_log, scenario_updates
from tests.app.helpers import LOG_70B_TP4


def test_round_trip_every_field():
    s = Scenario(model="m/x", gpu="H200", tensor_parallel_size=8, pipeline_parallel_size=2, dtype="float16",
                 quantization="fp8", kv_cache_dtype="fp8", gpu_memory_utilization=0.85, max_model_len=32768,
                 max_num_batched_tokens=4096, max_num_seqs=128, block_size=32, enforce_eager=True,
                 vllm_version="0.10.2", kv_cache_memory_gib=32.06, mean_len=1500, p95_len=4000,
                 data_parallel_size=4, enable_expert_parallel=True)
    q = scenario_to_query(s)
    assert q["v"] == "1" and set(QUERY_KEYS) <= set(q)
    back, messages = scenario_from_query(q)
    assert back == s and messages == []


def test_the_readme_lists_every_link_key():
    from pathlib import Path
    readme = Path(__file__).resolve().parents[2].joinpath("README.md").read_text(encoding="utf-8")
    listed = re.search(r"\(keys:\s*`([^`]+)`", readme)
    assert listed is not None and set(listed.group(1).split()) == set(QUERY_KEYS)


def test_defaults_written_and_read():
    q = scenario_to_query(Scenario())
    assert q["max_len"] == "0" and q["eager"] == "false"
    assert scenario_from_query(q) == (Scenario(), [])


@pytest.mark.parametrize("params, needle", [
    ({"tp": "abc"}, "tp='abc'"), ({"util": "1.5"}, "util='1.5'"), ({"util": "nan"}, "util='nan'"),
    ({"quant": "magic"}, "quant='magic'"), ({"vllm": "2.0"}, "vllm='2.0'"), ({"tp": "2.5"}, "whole number"),
    ({"zzz": "1"}, "unknown parameter 'zzz'"), ({"v": "9"}, "v='9'"), ({"eager": "maybe"}, "eager='maybe'"),
    ({"model": ""}, "model=''"),
])
def test_bad_params_are_messages_not_exceptions(params, needle):
    s, messages = scenario_from_query(params)
    assert isinstance(s, Scenario)
    assert any(needle in m for m in messages), messages


def test_list_values_take_the_last():
    s, _ = scenario_from_query({"tp": ["2", "4"]})
    assert s.tensor_parallel_size == 4


def test_cli_args_mirror_kwargs():
    args = Scenario(kv_cache_memory_gib=32.06, enforce_eager=True).cli_args()
    assert args[args.index("--kv-cache-memory") + 1] == str(int(32.06 * 2**30))
    assert "--enforce-eager" in args


def test_data_parallel_ranks_reach_the_capacity_and_the_cli():
    # vLLM's --data-parallel-size 8 --enable-expert-parallel at TP 1: each rank holds the experts of 8 GPUs' share
    s = Scenario(model="deepseek-ai/DeepSeek-R1", gpu="H200-SXM", data_parallel_size=8, enable_expert_parallel=True)
    assert s.capacity_kwargs()["tensor_parallel_size"] == 1 and s.capacity_kwargs()["expert_parallel_size"] == 8
    args = s.cli_args()
    assert args[args.index("--data-parallel-size") + 1] == "8" and "--enable-expert-parallel" in args
    assert "--data-parallel-size" not in Scenario().cli_args()
    assert Scenario(tensor_parallel_size=2, data_parallel_size=4).capacity_kwargs()["expert_parallel_size"] is None
    # the timed figures take DP8 + EP at TP 1 as data-parallel attention over 8 GPUs; TP 2 inside a rank they do not
    from calculators.specs.catalog import get_model
    r1 = get_model("deepseek-ai/DeepSeek-R1")
    assert s.attention_ranks(r1) == 8 and s.timed(r1)
    tp2 = s.model_copy(update={"tensor_parallel_size": 2, "data_parallel_size": 4})
    assert tp2.attention_ranks(r1) == 1 and not tp2.timed(r1) and Scenario().timed(r1)


def test_a_data_parallel_log_sets_the_ranks():
    # vLLM's non-default args line of a DP8 + EP launch (the format of vLLM 0.25's api_utils.py), each rank's line
    log = parse_vllm_log(
        "INFO 08-07 21:32:22 [api_utils.py:273] non-default args: {'model_tag': 'deepseek-ai/DeepSeek-R1', "
        "'data_parallel_size': 8, 'enable_expert_parallel': True, 'max_model_len': 8192}\n"
        "(EngineCore_DP0 pid=1) INFO 08-07 21:35:00 [kv_cache_utils.py:1087] GPU KV cache size: 408,256 tokens\n")
    updates = scenario_updates(log)
    assert updates["data_parallel_size"] == 8 and updates["enable_expert_parallel"] is True
    assert Scenario().model_copy(update=updates).capacity_kwargs()["expert_parallel_size"] == 8


def test_custom_gpu_validation_and_round_trip():
    g = custom_gpu("MyGPU", 96.0, memory_bandwidth_gb_per_s=3000, bf16_tflop_per_s=900)
    assert math.isclose(g.memory_gib, 96.0)
    assert decode_custom_gpu(encode_custom_gpu(g)) == g
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(InvalidInputError):
            custom_gpu("x", bad)
    with pytest.raises(InvalidInputError):
        custom_gpu("a/b", 10)
    with pytest.raises(InvalidInputError):
        decode_custom_gpu("only~two")


def test_config_round_trip_and_garbage():
    cfg = config_from_fields(id="me/m", hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
                             num_key_value_heads=8, intermediate_size=8192, vocab_size=1000,
                             max_position_embeddings=4096)
    assert decode_config(encode_config(cfg)) == cfg
    for bad in ("!!!", "abcd", "x" * 9000):
        with pytest.raises(InvalidInputError):
            decode_config(bad)


def test_log_70b_tp4():
    log = parse_vllm_log(LOG_70B_TP4)
    assert (log.version, log.engine) == ("0.10.2", "V1")  # fingerprint: 0.9.1–0.27, separate lines
    assert log.kv_cache_gib == 32.06 and log.kv_cache_tokens == (420_208,) and log.max_concurrency == (3.21,)
    assert log.concurrency_len == 131_072 and log.weights_gib == 32.8894
    up = scenario_updates(log)
    assert up == {"vllm_version": "0.10.2", "max_model_len": 131072, "kv_cache_memory_gib": 32.06}


def test_log_compared_with_prediction():
    from calculators.report.capacity import capacity_document
    from calculators.specs.catalog import get_gpu, get_model
    from calculators.vllm.capacity import vllm_capacity
    m = get_model("meta-llama/Llama-3.1-70B-Instruct")
    s = Scenario(tensor_parallel_size=4).model_copy(update=scenario_updates(parse_vllm_log(LOG_70B_TP4)))
    doc = capacity_document(m, vllm_capacity(m, gpu=get_gpu("H100"), **s.capacity_kwargs()))
    rows = {r["quantity"]: r for r in comparison_rows(parse_vllm_log(LOG_70B_TP4), doc)}
    assert rows["GPU KV cache size [tokens]"]["difference"] == 0
    assert round(rows["Maximum concurrency [x]"]["predicted"], 2) == 3.21


def test_real_logs_from_fixtures(vllm_cases):
    for cid, case in vllm_cases.items():
        lines = case.get("log_lines_verbatim") or case.get("log_lines_normalized")
        if cid == "C31":  # a summary of two versions, not a log
            with pytest.raises(InvalidInputError):
                parse_vllm_log("\n".join(lines))
            continue
        log = parse_vllm_log("\n".join(lines))
        tokens = case["reported"].get("gpu_kv_cache_size_tokens")
        if isinstance(tokens, int):
            assert tokens in log.kv_cache_tokens, cid
    v0 = parse_vllm_log(  # vLLM 0.6.4.post1, Llama-3.2-1B on a GTX 1080 (github.com/xlisp/jimw-vllm README)
        "INFO 12-06 14:08:00 model_runner.py:1077] Loading model weights took 2.3185 GB\n"
        "INFO 12-06 14:08:01 worker.py:232] Memory profiling results: total_gpu_memory=7.92GiB "
        "initial_memory_usage=2.73GiB peak_torch_memory=3.49GiB memory_usage_post_profile=2.76GiB "
        "non_torch_memory=0.44GiB kv_cache_size=3.60GiB gpu_memory_utilization=0.95\n"
        "INFO 12-06 14:08:01 gpu_executor.py:113] # GPU blocks: 7366, # CPU blocks: 8192\n"
        "INFO 12-06 14:08:01 gpu_executor.py:117] Maximum concurrency for 105088 tokens per request: 1.12x\n")
    assert (v0.version, v0.engine, v0.num_gpu_blocks, v0.kv_cache_gib) == ("0.6.4", "V0", 7366, 3.60)
    assert v0.total_gpu_memory_gib == 7.92 and v0.peak_torch_gib == 3.49 and v0.non_torch_gib == 0.44
    c16 = parse_vllm_log("\n".join(vllm_cases["C16"]["log_lines_verbatim"]))
    assert c16.cudagraph_gib == 3.45 and c16.budget_gib == 39.98 and c16.kv_cache_gib == 10.65


def test_v0_budget_lines():
    text = ("INFO worker.py:241] the current vLLM instance can use total_gpu_memory (79.19GiB) x "
            "gpu_memory_utilization (0.90) = 71.27GiB\n"
            "INFO worker.py:241] model weights take 14.99GiB; non_torch_memory takes 0.25GiB; PyTorch activation "
            "peak memory takes 1.23GiB; the rest of the memory reserved for KV Cache is 54.80GiB.\n"
            "INFO executor_base.py:110] # cuda blocks: 28057, # CPU blocks: 2048\n")
    log = parse_vllm_log(text)
    assert log.engine == "V0" and log.budget_gib == 71.27 and log.kv_cache_gib == 54.80
    assert log.num_gpu_blocks == 28057 and log.num_cpu_blocks == 2048 and log.gpu_memory_utilization == 0.9


def test_banner_and_settings():
    text = ("INFO api_server.py:1 vLLM API server version 0.11.0\n"
            "INFO core.py:1 Initializing a V1 LLM engine (v0.11.0) with config: model='meta-llama/Llama-3.1-70B', "
            "dtype=torch.bfloat16, max_seq_len=65536, tensor_parallel_size=4, pipeline_parallel_size=1, "
            "quantization=None, enforce_eager=False, kv_cache_dtype=auto\n"
            "INFO gpu_worker.py:1 Available KV cache memory: 30.00 GiB\n")
    log = parse_vllm_log(text)
    assert log.version == "0.11.0"
    assert log.settings["tensor_parallel_size"] == 4 and log.settings["max_model_len"] == 65536
    up = scenario_updates(log)
    assert up["tensor_parallel_size"] == 4 and up["max_model_len"] == 65536


@pytest.mark.parametrize("text", ["", "   ", "hello", "GPU KV cache size: lots", "x" * 3_000_000])
def test_not_a_log(text):
    with pytest.raises(InvalidInputError) as info:
        parse_vllm_log(text)
    assert info.value.field == "log"
