"""The one max_num_seqs recommendation: the KV figure, capped by the largest batch meeting the targets."""
from __future__ import annotations

from calculators.specs.catalog import get_gpu, get_model
from calculators.vllm.advice import recommend_max_num_seqs, vllm_serve_command
from calculators.vllm.capacity import vllm_capacity


def test_recommendation_is_the_kv_figure_when_the_targets_allow_more():
    r = recommend_max_num_seqs(96, 200, 48, has_targets=True)
    assert (r["max_num_seqs"], r["binding"]) == (96, "kv_cache")
    assert "the latency targets allow more" in r["reason"] and "above batch 48 (the knee)" in r["reason"]


def test_recommendation_is_the_slo_batch_when_it_is_smaller():
    r = recommend_max_num_seqs(96, 37, 48, has_targets=True)
    assert (r["max_num_seqs"], r["binding"]) == (37, "slo")
    assert "would hold 96" in r["reason"]


def test_recommendation_without_targets_is_the_kv_figure():
    r = recommend_max_num_seqs(96, None, 48, has_targets=False)
    assert (r["max_num_seqs"], r["binding"]) == (96, "kv_cache")
    assert "latency targets" not in r["reason"]


def test_recommendation_when_no_batch_meets_the_targets_says_so():
    r = recommend_max_num_seqs(96, None, 48, has_targets=True)
    assert (r["max_num_seqs"], r["binding"]) == (96, "slo_unmet")
    assert "no batch meets the latency targets" in r["reason"]


def test_a_gguf_file_is_served_by_path_with_the_original_tokenizer():
    r = vllm_capacity(get_model("meta-llama/Llama-3.2-3B"), gpu=get_gpu("L4"), quantization="gguf-q4_k_m",
                      max_model_len=8192)
    cmd = vllm_serve_command("meta-llama/Llama-3.2-3B", r)
    assert cmd.startswith("vllm serve ./Llama-3.2-3B-Q4_K_M.gguf --tokenizer meta-llama/Llama-3.2-3B ")
