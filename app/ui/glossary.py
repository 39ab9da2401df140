"""One line per term of the trade, shown as the help tooltip wherever the term labels a figure."""
from __future__ import annotations

GLOSSARY = {
    "ttft": "time to first token: from a request's arrival to its first output token (queueing, if any, and the "
            "prompt's prefill)",
    "tpot": "time per output token: the gap between consecutive output tokens of one request, after the first",
    "e2e": "end-to-end latency of one request: TTFT + (output tokens − 1) × TPOT",
    "kv_tokens": "tokens of context the KV cache holds across all running requests (vLLM's 'GPU KV cache size')",
    "max_concurrency": "how many requests of max_model_len tokens fit in the KV cache at once (vLLM's "
                       "'Maximum concurrency')",
    "available_kv": "memory left for the KV cache on each GPU after weights, activations, CUDA graphs and "
                    "non-torch allocations",
    "kv_per_token": "bytes of keys and values one token costs on one GPU, summed over that GPU's layers",
    "max_num_seqs": "vLLM's cap on requests running at once; more queue in vLLM",
    "knee": "the batch beyond which more requests in flight add little throughput but still add latency",
    "slo_batch": "the largest batch whose TPOT and TTFT meet the p99 targets",
    "crossover": "the batch at which decode stops being limited by memory bandwidth and becomes compute-bound",
    "ridge": "FLOP per byte at which the GPU's compute and memory bandwidth take equal time (peak ÷ bandwidth)",
    "kv_limit": "largest batch of prompt + output tokens the KV cache holds",
}
