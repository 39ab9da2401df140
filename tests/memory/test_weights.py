"""Weight bytes per GPU against vLLM's own `Model loading took X GiB` lines and model cards."""
from __future__ import annotations

import pytest

from calculators.errors import InvalidInputError
from calculators.memory.weights import parameter_counts, weight_bytes_per_gpu, weight_bytes_per_stage
from calculators.specs.catalog import get_model, load_models
from calculators.units import GiB
from tests.conftest import hf


def test_llama_31_8b_parameter_count_exact():
    # 32 × (4096·(4096+2·1024+4096) + 3·4096·14336 + 2·4096) + 2·128256·4096 + 4096 = 8,030,261,248
    assert parameter_counts(hf("meta-llama__Llama-3.1-8B"))["total"] == 8_030_261_248


def test_llama_31_8b_bf16_against_a_real_log():
    # 8,030,261,248 × 2 B + cos/sin cache 131,072 × 128 × 2 B = 14.98877 GiB; vLLM 0.11.0 printed "Model loading
    # took 14.9889 GiB" (an A100 40GB log, tests/fixtures/vllm_logs/startup_corpus.json V1-23).
    w = weight_bytes_per_gpu(get_model("meta-llama/Llama-3.1-8B-Instruct")).item()
    assert w == 8_030_261_248 * 2 + 131_072 * 128 * 2
    assert w / GiB == pytest.approx(14.9889, abs=2e-4)


@pytest.mark.parametrize("model, kwargs, logged_gib, rel", [
    # C16: Qwen3-235B-A22B FP8 (block-wise), TP8 with expert parallelism on L40S, vLLM 0.10.2
    ("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", {"tensor_parallel_size": 8, "expert_parallel_size": 8}, 27.7183, 0.005),
    # C20: Mistral-7B-Instruct-v0.2 GPTQ 4-bit g128 on DGX Spark, vLLM 0.11.0
    ("TheBloke/Mistral-7B-Instruct-v0.2-GPTQ", {}, 3.8844, 0.005),
    # C32: gpt-oss-120b MXFP4 experts (Marlin padding) on an H100, vLLM 0.10.1
    ("openai/gpt-oss-120b", {}, 65.9651, 0.005),
    # C17: Qwen2.5-7B-Instruct-AWQ on an RTX 4080, vLLM 0.26.0 (printed with 2 decimals)
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", {}, 5.29, 0.02),
])
def test_model_loading_took(model, kwargs, logged_gib, rel):
    assert weight_bytes_per_gpu(get_model(model), **kwargs).item() / GiB == pytest.approx(logged_gib, rel=rel)


def test_quantisation_formats_shrink_weights_in_order():
    m = get_model("meta-llama/Llama-3.1-70B")
    sizes = {q: weight_bytes_per_gpu(m, quantization=q).item() for q in ("none", "fp8", "awq", "nvfp4", "mxfp4")}
    assert sizes["none"] > sizes["fp8"] > sizes["nvfp4"] > sizes["mxfp4"] > sizes["awq"]
    # fp8 halves the linear layers but not the embeddings (2 × 128,256 × 8,192 × 2 B stay bf16)
    assert sizes["fp8"] == pytest.approx(sizes["none"] / 2 + 128_256 * 8192 * 2, rel=0.002)


def test_tensor_parallel_splits_and_pp_places_embeddings():
    m = get_model("meta-llama/Llama-3.1-70B")
    one, four = weight_bytes_per_gpu(m, tensor_parallel_size=[1, 4]).tolist()
    assert four == pytest.approx(one / 4, rel=0.01)
    first, last = weight_bytes_per_stage(m, pipeline_parallel_size=2).ravel().tolist()
    assert first == pytest.approx(last, rel=1e-3)  # 40 layers each; embedding on the first, LM head on the last


def test_experts_split_by_expert_parallel_size():
    m = get_model("mistralai/Mixtral-8x7B-v0.1")
    tp_only = weight_bytes_per_gpu(m, tensor_parallel_size=8).item()
    with_ep = weight_bytes_per_gpu(m, tensor_parallel_size=8, expert_parallel_size=8).item()
    assert with_ep == pytest.approx(tp_only, rel=0.001)  # 8 experts / 8 GPUs = 1/8 of each expert either way


@pytest.mark.parametrize("model_id", sorted(load_models()))
def test_parameter_counts_agree_with_model_cards(model_id):
    m = load_models()[model_id]
    counts = parameter_counts(m)
    # Falcon-40B's card rounds 41.3B to "40B"; Gemma 3 and Llama 4 cards include the vision tower.
    tolerance = 0.035 if "falcon" in model_id else 0.025
    assert counts["total"] == pytest.approx(m.params_total_card, rel=tolerance)
    if m.params_active_card != m.params_total_card:  # vendors leave input embeddings out of "active"
        assert counts["active"] - counts["embedding"] / 2 <= m.params_active_card * 1.05
        assert counts["active"] >= m.params_active_card * 0.95


def test_unknown_quantization():
    with pytest.raises(InvalidInputError, match="quantization"):
        weight_bytes_per_gpu(get_model("Qwen/Qwen3-8B"), quantization="int3")
