"""Scheduling policies of the simulated replica and the latency targets its runs are judged by.

Names follow vLLM's arguments (``max_num_seqs``, ``max_num_batched_tokens``, ``block_size``); block counts
come from vLLM's start-up accounting (:func:`kv_blocks`, docs/vllm-memory.md §4).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from calculators.errors import InvalidInputError
from calculators.validation import positive_int


@dataclass(frozen=True)
class ContinuousBatching:
    """Iteration-level scheduling (vLLM's argument names).

    ``num_blocks=None`` is unlimited KV cache; take it from :func:`kv_blocks` for a real GPU.
    ``prefix_cache_hit_rate`` is the share of each prompt whose prefill is skipped.
    """

    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    num_blocks: int | None = None
    block_size: int = 16
    prefix_cache_hit_rate: float = 0.0

    def __post_init__(self) -> None:
        positive_int("max_num_seqs", self.max_num_seqs)
        positive_int("max_num_batched_tokens", self.max_num_batched_tokens)
        positive_int("block_size", self.block_size)
        if self.num_blocks is not None:
            positive_int("num_blocks", self.num_blocks)
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise InvalidInputError("max_num_batched_tokens", self.max_num_batched_tokens,
                                    f"at least max_num_seqs ({self.max_num_seqs}), as vLLM requires")
        if not (0 <= self.prefix_cache_hit_rate < 1):
            raise InvalidInputError("prefix_cache_hit_rate", self.prefix_cache_hit_rate, "a fraction in [0, 1)")

    name = "continuous"


@dataclass(frozen=True)
class StaticBatching:
    """Request-level (static) batching: up to ``max_batch_size`` requests padded to the longest."""

    max_batch_size: int = 32
    max_wait_ms: float = 50.0
    num_blocks: int | None = None
    block_size: int = 16
    return_at_batch_end: bool = True

    def __post_init__(self) -> None:
        positive_int("max_batch_size", self.max_batch_size)
        positive_int("block_size", self.block_size)
        if self.num_blocks is not None:
            positive_int("num_blocks", self.num_blocks)
        if not (math.isfinite(self.max_wait_ms) and self.max_wait_ms >= 0):
            raise InvalidInputError("max_wait_ms", self.max_wait_ms, "a non-negative number of milliseconds")

    name = "static"

    @property
    def max_num_seqs(self) -> int:
        return self.max_batch_size


@dataclass(frozen=True)
class SLO:
    """Latency targets for goodput [s]; ``None`` is no target."""

    ttft_s: float | None = None
    tpot_s: float | None = None


def kv_blocks(model, gpu, *, tensor_parallel_size: int = 1, max_model_len: int | None = None,
              enable_dp_attention: bool = False, **flags) -> tuple[int, int]:
    """``(num_blocks, block_size)`` that vLLM would allocate for one replica, from
    :func:`calculators.vllm.capacity.vllm_capacity`; with data-parallel attention the blocks of its one pool per
    GPU together (:func:`calculators.vllm.concurrency.replica_capacity`)."""
    from calculators.vllm.concurrency import replica_capacity
    pools, cap = replica_capacity(model, gpu, tensor_parallel_size, dp_attention=enable_dp_attention,
                                  max_model_len=max_model_len, **flags)
    return pools * int(cap.binding.num_blocks), int(cap.settings.block_size)
