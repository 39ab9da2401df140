"""A pasted start-up log checked against the scenario: another model, GPU or flags are named (worked by hand)."""
from __future__ import annotations

import pytest

from calculators.report.capacity import capacity_document
from calculators.specs.catalog import get_gpu, get_model, load_gpus
from calculators.vllm.capacity import vllm_capacity
from calculators.vllm.startup_log import gpus_with_memory, log_mismatches, parse_vllm_log, scenario_updates

# Llama-3.1-8B on one H100: vLLM prints "Model loading took 14.9888 GiB" (parameters in bf16 and the rotary
# cache); the product reproduces it.
L8 = get_model("meta-llama/Llama-3.1-8B")
H100 = get_gpu("H100-SXM")
LOG_70B_TP4 = """\
INFO 09-10 12:00:00 [core.py:1] Initializing a V1 LLM engine (v0.10.2) with config: \
model='meta-llama/Llama-3.1-70B-Instruct', tensor_parallel_size=4, max_seq_len=131072
INFO 09-10 12:00:01 [gpu_model_runner.py:2007] Model loading took 32.8894 GiB and 30.1 seconds
INFO 09-10 12:00:40 [gpu_worker.py:298] Available KV cache memory: 32.06 GiB
"""
LOG_8B_A100_40 = """\
INFO 09-10 12:00:01 [model_runner.py:1] Model loading took 14.9888 GiB and 7.6 seconds
INFO 09-10 12:00:40 [worker.py:1] Memory profiling results: total_gpu_memory=39.39GiB \
initial_memory_usage=15.2GiB peak_torch_memory=16.1GiB memory_usage_post_profile=15.5GiB non_torch_memory=0.2GiB \
kv_cache_size=19.1GiB gpu_memory_utilization=0.90
"""


def _doc(**kw) -> dict:
    return capacity_document(L8, vllm_capacity(L8, gpu=H100, **kw))


def _check(text: str, doc: dict) -> dict:
    found = log_mismatches(parse_vllm_log(text), doc, model_ids=(L8.id, *L8.aliases),
                           gpu_memory_gib=H100.memory_gib, gpus=load_gpus())
    return {m.field: m for m in found}


def test_a_log_of_another_model_is_named_with_its_weights_gap():
    found = _check(LOG_70B_TP4, _doc())
    assert found["model"].suggestion == "meta-llama/Llama-3.1-70B-Instruct"
    assert "this log is of meta-llama/Llama-3.1-70B-Instruct, not meta-llama/Llama-3.1-8B" in found["model"].message
    # 14.9888 GiB predicted against 32.8894 GiB printed: 14.9888 / 32.8894 − 1 = −54.4 %
    assert found["weights"].scenario_value == pytest.approx(14.9888, abs=1e-3)
    assert "(32.89 GiB per GPU) are -54 % off the scenario's (14.99 GiB)" in found["weights"].message
    assert found["tensor_parallel_size"].log_value == 4 and found["tensor_parallel_size"].scenario_value == 1


def test_a_log_of_another_gpu_suggests_the_catalog_gpu_of_that_size():
    found = _check(LOG_8B_A100_40, _doc())
    assert set(found) == {"gpu"}  # same model, same weights
    # 39.39 GiB against the H100's 79.19: a 40 GB A100 (39.49 GiB, 0.3 % away), not the H100
    assert found["gpu"].suggestion == "A100-40GB-SXM"
    assert "it looks like A100-40GB-SXM or A100-40GB-PCIe" in found["gpu"].message


def test_the_same_setup_is_quiet():
    assert _check(LOG_8B_A100_40.replace("39.39GiB", "79.19GiB"), _doc()) == {}


def test_instruct_name_matches_its_base_model():
    text = LOG_70B_TP4.replace("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-8B-Instruct")
    assert "model" not in _check(text, _doc())


def test_gpus_with_memory_within_two_percent():
    assert gpus_with_memory(79.19, load_gpus())[:2] == ["A100-80GB-SXM", "A100-80GB-PCIe"]
    assert gpus_with_memory(1000.0, load_gpus()) == []


@pytest.mark.parametrize(("line", "setting"), [
    # vLLM 0.10.1.1, dennislee22/vLLM-benchmarking log/vllm-7B-1gpuA10080GB-0.25GRAM.log
    ("(EngineCore_0 pid=1812) INFO 09-04 01:02:57 [topk_topp_sampler.py:50] Using FlashInfer for top-p & top-k "
     "sampling.", "on"),
    # vLLM 0.10.2 / 0.11.0 without the flashinfer package
    ("WARNING 10-14 19:22:46 [topk_topp_sampler.py:66] FlashInfer is not available. Falling back to the "
     "PyTorch-native implementation of top-p & top-k sampling. For the best performance, please install "
     "FlashInfer.", "off"),
])
def test_the_sampler_line_sets_flashinfer_sampler(line, setting):
    log = parse_vllm_log(line + "\nINFO [gpu_worker.py:276] Available KV cache memory: 5.01 GiB")
    assert log.settings["flashinfer_sampler"] == setting
    assert scenario_updates(log)["flashinfer_sampler"] == setting
    assert log.recognised_lines == 1  # the sampler line reveals a setting, not a start-up number
