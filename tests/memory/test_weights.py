"""Weight bytes per GPU against vLLM's own `Model loading took X GiB` lines and model cards."""
from __future__ import annotations

import numpy as np
import pytest

from calculators.errors import InvalidInputError
from calculators.memory.weights import (
    expert_rank_padding,
    gathered_bytes_per_stage,
    parameter_counts,
    step_read_bytes_per_gpu,
    weight_bytes_per_gpu,
    weight_bytes_per_stage,
)
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
    # V1-06: the same at TP 4 on A100s, vLLM 0.10.1: each rank's 720-wide expert share padded to 768
    ("openai/gpt-oss-120b", {"tensor_parallel_size": 4}, 17.22, 0.005),
    # C17: Qwen2.5-7B-Instruct-AWQ on an RTX 4080, vLLM 0.26.0 (printed with 2 decimals)
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", {}, 5.29, 0.02),
])
def test_model_loading_took(model, kwargs, logged_gib, rel):
    assert weight_bytes_per_gpu(get_model(model), **kwargs).item() / GiB == pytest.approx(logged_gib, rel=rel)


def test_mxfp4_pads_each_ranks_share_of_the_expert_width():
    # gpt-oss-120b, expert width 2,880 → 2,944 whole; per rank 2,880/tp up to a multiple of 128:
    # TP 2: 1,440 → 1,536; TP 4: 720 → 768; TP 8: 360 → 384; with expert parallelism whole experts
    m = get_model("openai/gpt-oss-120b")
    got = expert_rank_padding(m, "mxfp4", np.array([1.0, 2.0, 4.0, 8.0]), None)
    assert got.tolist() == pytest.approx([1.0, 1536 * 2 / 2944, 768 * 4 / 2944, 384 * 8 / 2944])
    assert expert_rank_padding(m, "mxfp4", np.array([4.0]), np.array([4])).tolist() == [1.0]


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


def test_a_forward_pass_reads_the_weights_less_the_rows_it_looks_up():
    # Llama-3.1-8B (LM head untied): 8,030,261,248 × 2 B of weights less the token embedding, 128,256 × 4,096 × 2 B
    # (rows looked up); the cos/sin cache, 131,072 positions × 128 × 2 B, is held but looked up by position too.
    m = get_model("meta-llama/Llama-3.1-8B")
    assert weight_bytes_per_gpu(m) == 8_030_261_248 * 2 + 131_072 * 128 * 2
    assert step_read_bytes_per_gpu(m) == 8_030_261_248 * 2 - 128_256 * 4096 * 2
    # Llama-3.2-1B ties the embedding to the LM head, which reads it whole: only the cos/sin cache
    # (131,072 × 64 × 2 B) is looked up. Split over two stages the LM head has its own copy on the last,
    # so the first stage's 128,256 × 2,048 × 2 B embedding is looked up by row.
    tied = get_model("meta-llama/Llama-3.2-1B")
    assert gathered_bytes_per_stage(tied).ravel().tolist() == [131_072 * 64 * 2]
    assert gathered_bytes_per_stage(tied, pipeline_parallel_size=2).ravel().tolist() == [
        131_072 * 64 * 2 + 128_256 * 2048 * 2, 131_072 * 64 * 2]


def test_experts_split_by_expert_parallel_size():
    m = get_model("mistralai/Mixtral-8x7B-v0.1")
    tp_only = weight_bytes_per_gpu(m, tensor_parallel_size=8).item()
    with_ep = weight_bytes_per_gpu(m, tensor_parallel_size=8, expert_parallel_size=8).item()
    assert with_ep == pytest.approx(tp_only, rel=0.001)  # 8 experts / 8 GPUs = 1/8 of each expert either way


@pytest.mark.parametrize("model_id", sorted(load_models()))
def test_parameter_counts_agree_with_model_cards(model_id):
    m = load_models()[model_id]
    counts = parameter_counts(m)
    # Falcon-40B's card rounds 41.3B to "40B" and Kimi-K2's 1.026T to "1T"; Gemma 3 and Llama 4 cards include
    # the vision tower. GLM-4.7-Flash's "30B-A3B" names a size class: 3.26B per token outside the embeddings
    # and output head (its catalog note; test_minimax_m25_parameters_by_hand shows the arithmetic).
    tolerance = 0.035 if "falcon" in model_id or "Kimi-K2" in model_id else 0.025
    active_tolerance = 0.25 if model_id == "zai-org/GLM-4.7-Flash" else 0.05
    assert counts["total"] == pytest.approx(m.params_total_card, rel=tolerance)
    if m.params_active_card != m.params_total_card:  # vendors leave input embeddings out of "active"
        assert counts["active"] - counts["embedding"] / 2 <= m.params_active_card * (1 + active_tolerance)
        assert counts["active"] >= m.params_active_card * 0.95


def test_unknown_quantization():
    with pytest.raises(InvalidInputError, match="quantization"):
        weight_bytes_per_gpu(get_model("Qwen/Qwen3-8B"), quantization="int3")


# --- bitsandbytes -------------------------------------------------------------------------------------

def test_bnb_4bit_statistics_by_hand():
    from calculators.memory.weights import bnb_4bit_bytes

    # 256 × 256 = 65,536 weights: 32,768 B packed; 1,024 blocks of 64 → fp32 absmax 4,096 B.
    assert bnb_4bit_bytes(65_536) == 32_768 + 4_096
    # double quantisation: 1,024 uint8 absmaxes + ⌈1,024 / 256⌉ = 4 fp32 second-level absmaxes.
    assert bnb_4bit_bytes(65_536, double_quant=True) == 32_768 + 1_024 + 16
    # 100 weights: 50 B packed; 2 blocks (the last one partial) → 8 B, or 2 B + one fp32 = 6 B.
    assert bnb_4bit_bytes(100) == 58 and bnb_4bit_bytes(100, double_quant=True) == 56


def _tiny_bnb_model(quantization: str | None = None):
    from calculators.specs.hf_config import model_from_config

    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 64, "num_hidden_layers": 2, "intermediate_size": 512,
           "vocab_size": 1000, "max_position_embeddings": 128, "torch_dtype": "bfloat16", "tie_word_embeddings": False,
           "attention_bias": False}
    if quantization:
        cfg["quantization_config"] = {"quant_method": "bitsandbytes", "load_in_4bit": quantization == "4bit",
                                      "load_in_8bit": quantization == "8bit", "bnb_4bit_quant_type": "nf4",
                                      "bnb_4bit_use_double_quant": True}
    return model_from_config(cfg, id="tiny")


def test_bitsandbytes_4bit_weights_of_a_small_model_by_hand():
    """hidden 256, 4 heads × 64, 2 KV heads, 2 layers, MLP 512, vocab 1,000, untied, bf16, 128 positions.

    Each linear: n weights → n/2 + 4·⌈n/64⌉ bytes (4 bits + an fp32 absmax per 64; vLLM keeps fp32
    absmaxes even for double-quantised checkpoints, dequantising the nested statistics at load):
      q  256×256 = 65,536 → 32,768 + 4,096 = 36,864;  k, v 256×128 = 32,768 → 16,384 + 2,048 = 18,432 each;
      o  36,864;  gate, up, down 256×512 = 131,072 → 65,536 + 8,192 = 73,728 each.
      Per layer 36,864 + 2·18,432 + 36,864 + 3·73,728 = 331,776; 2 layers = 663,552.
    Unquantised (bf16): 2 norms a layer 2·2·256·2 = 2,048, final norm 512, embedding and LM head
    ⌈1,000/64⌉·64 = 1,024 rows × 256 × 2 = 524,288 each, cos/sin cache 128 × 64 × 2 = 16,384.
    Total 663,552 + 2,048 + 512 + 2·524,288 + 16,384 = 1,731,072 B.
    """
    m = _tiny_bnb_model("4bit")
    assert m.quantization == "bitsandbytes"
    assert weight_bytes_per_gpu(m).item() == 1_731_072
    # the same figure for the bf16 checkpoint served with --quantization bitsandbytes (in-flight NF4)
    assert weight_bytes_per_gpu(_tiny_bnb_model(), quantization="bitsandbytes").item() == 1_731_072


def test_bitsandbytes_8bit_weights_by_hand():
    """LLM.int8: one int8 per weight + one fp32 scale (SCB) per output row.

    k and v (256 in, 128 out): 2 × (32,768 + 4·128) = 66,560 B; q (256 → 256): 65,536 + 1,024 = 66,560 B.
    """
    from calculators.memory.weights import Linear, linear_bytes

    assert linear_bytes(Linear(256, 128, 2, "kv", True), "bitsandbytes-8bit", 2) == 66_560
    assert linear_bytes(Linear(256, 256, 1, "tp", True), "bitsandbytes-8bit", 2) == 66_560
    assert linear_bytes(Linear(256, 4, 1, "none", False), "bitsandbytes-8bit", 2) == 256 * 4 * 2  # router: bf16
    m = _tiny_bnb_model("8bit")
    assert m.quantization == "bitsandbytes-8bit"
    # --quantization bitsandbytes (vLLM's one name for both) keeps the checkpoint's 8-bit layout
    assert weight_bytes_per_gpu(m, quantization="bitsandbytes").item() == weight_bytes_per_gpu(m).item()


def test_llama_31_8b_bitsandbytes_4bit_by_hand():
    """Llama-3.1-8B, --quantization bitsandbytes (in-flight NF4), TP 1.

    q, o: 4096² = 16,777,216 → 8,388,608 + 4·262,144 = 9,437,184 each; k, v: 4096·1024 = 4,194,304 →
    2,097,152 + 262,144 = 2,359,296 each; gate, up, down: 4096·14336 = 58,720,256 → 29,360,128 + 3,670,016 =
    33,030,144 each. Per layer 2·9,437,184 + 2·2,359,296 + 3·33,030,144 = 122,683,392; 32 layers =
    3,925,868,544. bf16: norms 32·2·4096·2 + 4096·2 = 532,480; embedding and LM head 128,256 × 4096 × 2 =
    1,050,673,152 each; cos/sin cache 131,072 × 128 × 2 = 33,554,432. Total 6,061,301,760 B.
    """
    w = weight_bytes_per_gpu(get_model("meta-llama/Llama-3.1-8B-Instruct"), quantization="bitsandbytes").item()
    assert w == 3_925_868_544 + 532_480 + 2 * 1_050_673_152 + 33_554_432 == 6_061_301_760


def test_bitsandbytes_is_accepted_where_vllm_accepts_it():
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    model = ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100", "--quantization", "bitsandbytes"]
    for cmd in (["capacity"], ["perf", "--batch-size", "8", "--input-len", "512", "--output-len", "64"]):
        p = subprocess.run([sys.executable, "-m", "calculators.cli", cmd[0], *model, *cmd[1:], "--json"],
                           capture_output=True, text=True, cwd=root, timeout=120)
        assert p.returncode == 0, p.stderr
        if cmd[0] == "capacity":
            doc = json.loads(p.stdout)
            assert doc["settings"]["quantization"] == "bitsandbytes" and doc["weights_bytes"] == 6_061_301_760


def test_minimax_m25_parameters_by_hand():
    # 62 layers of attention 3,072 × (48·128 + 2·8·128) + 6,144 × 3,072 = 44,040,192, 256 experts of
    # 3 × 3,072 × 1,536 = 3,623,878,656 and a 3,072 × 256 router; two 3,072-wide norms a layer and a final one;
    # untied embeddings and output head 2 × 200,064 × 3,072. The card says "230B total" for the series.
    layer = 44_040_192 + 3_623_878_656 + 786_432 + 2 * 3_072
    assert parameter_counts(get_model("MiniMaxAI/MiniMax-M2.5"))["total"] == 62 * layer + 3_072 + 1_229_193_216


def test_glm_47_flash_active_parameters_by_hand():
    # MLA attention a layer: q_a 2,048·768 + q_b 768·20·256 + kv_a 2,048·576 + kv_b 512·20·(192 + 256)
    # + o 20·256·2,048 = 21,757,952, over 47 layers; 46 MoE layers with 4 routed + 1 shared experts of
    # 3 × 2,048 × 1,536 and a 2,048 × 64 router; one dense layer 3 × 2,048 × 10,240: 3.262 billion per token,
    # which the card calls "A3B".
    c = parameter_counts(get_model("zai-org/GLM-4.7-Flash"))
    by_hand = 47 * 21_757_952 + 46 * (5 * 9_437_184 + 131_072) + 62_914_560
    assert c["active"] - c["embedding"] == pytest.approx(by_hand, rel=1e-4)  # the rest is norms
