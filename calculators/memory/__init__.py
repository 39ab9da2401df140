"""How many bytes a model takes on a GPU: the KV cache per token and the weights.

- :mod:`~calculators.memory.kv_cache` — ``kv_bytes_per_token``, ``sequences_that_fit``, layer kinds (full,
  sliding-window, chunked-local, MLA) and KV dtypes, as vLLM's KV-cache specs page them.
- :mod:`~calculators.memory.weights` — ``parameter_counts``, ``weight_bytes_per_gpu``,
  ``weight_bytes_per_stage``: dense and MoE, quantised or not, sharded by TP/PP/EP.

Method: docs/vllm-memory.md §2.2 (weights) and §3 (bytes per token).
"""
