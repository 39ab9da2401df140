"""The one max_num_seqs recommendation: the KV figure, capped by the largest batch meeting the targets."""
from __future__ import annotations

from calculators.vllm.advice import recommend_max_num_seqs


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
