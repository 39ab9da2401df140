"""GGUF weight bytes (calculators/memory/gguf.py): llama.cpp's mixtures by hand, published file sizes and a
real vLLM start-up log."""
from __future__ import annotations

import pytest

from calculators.errors import InvalidInputError
from calculators.memory import gguf
from calculators.memory.weights import Linear, resolve_quantization, weight_bytes_per_gpu
from calculators.specs.catalog import get_model
from calculators.units import GiB


def test_use_more_bits_picks_llama_cpps_layers_for_28_layers():
    # i < 28/8 = 3, i >= 7·28/8 = 24, or (i − 3) % 3 == 2: worked by hand from llama.cpp's rule
    assert [i for i in range(28) if gguf.use_more_bits(i, 28)] == [0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27]


def test_block_sizes_are_ggmls():
    # bits per weight: Q8_0 8.5, Q4_0 4.5, Q4_K 4.5, Q5_K 5.5, Q6_K 6.5625 (ggml type traits)
    bpw = {t: 8 * size / per for t, (per, size) in gguf.BLOCKS.items()}
    assert (bpw["q8_0"], bpw["q4_0"], bpw["q4_k"], bpw["q5_k"], bpw["q6_k"]) == (8.5, 4.5, 4.5, 5.5, 6.5625)


def test_q4_k_m_layer_by_hand():
    # Llama-3.2-3B layer 5 (a "more bits" layer): v and down in Q6_K, the rest Q4_K; 256-weight blocks
    v = Linear(3072, 1024, 1, "kv", True, role="v")
    down = Linear(8192, 3072, 1, "tp", True, role="down")
    q = Linear(3072, 3072, 1, "tp", True, role="q")
    assert gguf.linear_bytes(v, "q4_k_m", 5, 28, 2) == 1024 * 12 * 210
    assert gguf.linear_bytes(down, "q4_k_m", 5, 28, 2) == 3072 * 32 * 210
    assert gguf.linear_bytes(down, "q4_k_m", 6, 28, 2) == 3072 * 32 * 144
    assert gguf.linear_bytes(q, "q4_k_m", 5, 28, 2) == 3072 * 12 * 144


def test_rows_not_a_multiple_of_the_block_fall_back_as_llama_cpp_does():
    # a 2880-wide row (gpt-oss) is not a multiple of 256: Q4_K → Q5_0 (32-weight blocks of 22 bytes)
    assert gguf.matrix_bytes("q4_k", 10, 2880) == 10 * 90 * 22
    assert gguf.matrix_bytes("q6_k", 10, 2880) == 10 * 90 * 34


def test_output_matrix_gets_q6_k_unless_the_file_is_q8_0():
    assert gguf.embedding_block_types("q4_k_m", tied=True) == ("q6_k", "q6_k")
    assert gguf.embedding_block_types("q4_k_m", tied=False) == ("q4_k", "q6_k")
    assert gguf.embedding_block_types("q8_0", tied=True) == ("q8_0", "q8_0")


#: File sizes published on https://huggingface.co/bartowski/Llama-3.2-1B-Instruct-GGUF (llama.cpp b3821), GB.
PUBLISHED_1B_GB = {"q8_0": 1.32, "q6_k": 1.02, "q5_k_m": 0.91, "q5_k_s": 0.89, "q4_k_m": 0.81, "q4_k_s": 0.78}


@pytest.mark.parametrize("ftype", PUBLISHED_1B_GB)
def test_llama_32_1b_tensors_match_published_file_sizes(ftype):
    """The file is the tensors (norms in F32) plus 3–10 MB of metadata (the tokenizer's 128,256 tokens and
    280,147 merges); the sizes are rounded to 10 MB."""
    m = get_model("meta-llama/Llama-3.2-1B")
    rope = m.rope_cache_positions * m.rotary_dim * 2
    norms = 2 * m.hidden_size * m.num_hidden_layers + m.hidden_size
    tensors = weight_bytes_per_gpu(m, quantization=f"gguf-{ftype}", dtype="float16").item() - rope + 2 * norms
    published = PUBLISHED_1B_GB[ftype] * 1e9
    assert published - 5e6 - 10e6 <= tensors <= published + 5e6 - 3e6


def test_llama_32_3b_q8_0_matches_vllm_model_loading():
    # "Model loading took 3.2637 GB" (GiB), vLLM 0.8.2, Llama-3.2-3B-Instruct-Q8_0.gguf
    # (https://github.com/eformat/ragit-dev/blob/main/docs/2-local-rag/1-local-rag-langchain.md).
    # By hand: 28 × 100,663,296 weights × 34/32 + tied embedding 128,256 × 3,072 × 34/32 + fp16 norms
    # (28 × 2 + 1) × 3,072 × 2 + rope cache 131,072 × 128 × 2 = 3,447,265,280 B.
    m = get_model("meta-llama/Llama-3.2-3B")
    got = weight_bytes_per_gpu(m, quantization="gguf-q8_0", dtype="float16").item()
    assert got == 3_447_265_280
    assert got / GiB == pytest.approx(3.2637, rel=0.02)


def test_plain_gguf_asks_for_the_file_type():
    with pytest.raises(InvalidInputError) as e:
        resolve_quantization(get_model("meta-llama/Llama-3.2-3B"), "gguf")
    assert e.value.field == "quantization" and "gguf-q4_k_m" in str(e.value)


def test_gguf_of_a_moe_model_is_refused_with_the_reason():
    with pytest.raises(InvalidInputError) as e:
        resolve_quantization(get_model("Qwen/Qwen3-30B-A3B"), "gguf-q4_k_m")
    assert e.value.field == "quantization" and "dense decoders" in str(e.value)
