"""How many requests a computed KV pool holds: the batch limit, and concurrency over context length.

All three read a :class:`~calculators.vllm.capacity.CapacityResult` (the pool vLLM would allocate with
the scenario's flags) and count blocks as vLLM's scheduler does: a request of ``L`` tokens holds
:func:`~calculators.vllm.capacity.request_blocks` blocks (``ceil(L / block_size)`` for full attention;
windowed layers cap it), and the pool is the smallest pipeline stage's ``num_gpu_blocks``
(docs/vllm-memory.md §4–§5).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from calculators.specs.schema import GPUSpec, ModelSpec
from calculators.vllm.capacity import CapacityResult, request_blocks, vllm_capacity

if TYPE_CHECKING:
    import pandas as pd


class RankLayout(NamedTuple):
    """The KV pools of one replica: ``pools`` alike, each of ``tensor_parallel_size`` GPUs with the experts split
    ``expert_parallel_size`` ways (None: the caller's choice) — :func:`~calculators.vllm.capacity.vllm_capacity`'s
    flags of one pool."""

    pools: int
    tensor_parallel_size: int
    expert_parallel_size: int | None


def attention_ranks(tensor_parallel_size: int, enable_dp_attention: bool = False) -> RankLayout:
    """The KV pools of one replica of ``tensor_parallel_size`` GPUs: one pool of that TP size; with data-parallel
    attention (MoE models only; the roofline refuses it for a dense one) one pool per GPU, each GPU holding
    attention whole and ``1/tp`` of the experts and keeping the cache of its own sequences — vLLM's
    ``--data-parallel-size tp --enable-expert-parallel``, whose start-up log prints one such pool per rank. The
    replica holds ``pools`` times what one pool holds."""
    if not enable_dp_attention or tensor_parallel_size == 1:
        return RankLayout(1, tensor_parallel_size, None)
    return RankLayout(tensor_parallel_size, 1, tensor_parallel_size)


def replica_capacity(model: ModelSpec, gpu: GPUSpec, tensor_parallel_size: int, pipeline_parallel_size: int = 1, *,
                     expert_parallel: bool = False, dp_attention: bool = False,
                     **flags) -> tuple[int, CapacityResult]:
    """The KV pools of one replica, ``(pools, one pool's vLLM capacity)``: one pool of the replica's TP size
    (experts split across it with ``expert_parallel``), or with ``dp_attention`` one per GPU
    (:func:`attention_ranks`). ``flags`` are :func:`~calculators.vllm.capacity.vllm_capacity`'s."""
    ranks = attention_ranks(tensor_parallel_size, dp_attention)
    ep = ranks.expert_parallel_size or (tensor_parallel_size if expert_parallel else None)
    return ranks.pools, vllm_capacity(model, gpu=gpu, tensor_parallel_size=ranks.tensor_parallel_size,
                                      pipeline_parallel_size=pipeline_parallel_size, expert_parallel_size=ep, **flags)


def pool_blocks(result: CapacityResult) -> int:
    """KV blocks every stage can give: the smallest stage's ``num_gpu_blocks`` [blocks]."""
    return int(min(s.num_blocks for s in result.stages))


def batch_limit(model: ModelSpec, result: CapacityResult, context_tokens: float) -> int:
    """Largest batch of ``context_tokens``-token sequences the pool holds at once [sequences].

    ``floor(pool_blocks / request_blocks(ceil(context_tokens)))``; 0 when the context exceeds
    ``max_model_len`` (vLLM refuses such a request) or no block is left.
    """
    n = int(np.ceil(context_tokens))
    if pool_blocks(result) <= 0 or n > result.settings.max_model_len:
        return 0
    return pool_blocks(result) // int(request_blocks(model, result.binding.groups, n, result.settings))


def running_footprint_tokens(input_len: ArrayLike, output_len: ArrayLike, together: ArrayLike = False) -> np.ndarray:
    """Tokens of KV cache a running sequence of ``I`` prompt and ``O`` output tokens holds on average while vLLM
    decides how many run at once [tokens]; vectorised.

    vLLM admits a request when the blocks of its prompt are free and, when a running sequence finds no block for
    its next token, preempts the newest one (the scheduler of vLLM v0.11.0,
    https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/core/sched/scheduler.py). Requests that arrive one
    by one (a closed loop's replacements, an open loop) are spread over their decode, so a full pool holds them at
    their mean length ``ceil(I + O/2)``: 2,000 + 500 tokens hold 2,250 on average. Requests started
    ``together`` (a static batch; a benchmark whose requests all have one length, in lockstep) all reach
    ``I + O`` at once, and are charged that (docs/performance-model.md §2).
    """
    half = np.where(np.asarray(together, dtype=bool), 1.0, 0.5)
    return np.ceil(np.asarray(input_len, dtype=float) + half * np.asarray(output_len, dtype=float))


def concurrency(model: ModelSpec, result: CapacityResult, lengths: ArrayLike) -> np.ndarray:
    """Sequences of each length the pool holds at once, fractional as vLLM prints it [sequences].

    ``num_gpu_blocks / request_blocks(L)`` with ``L`` capped at ``max_model_len``; vectorised.
    """
    n = np.minimum(np.ceil(np.asarray(lengths, dtype=float)), result.settings.max_model_len).astype(np.int64)
    return pool_blocks(result) / request_blocks(model, result.binding.groups, n, result.settings)


def concurrency_curve(model: ModelSpec, result: CapacityResult, *, points: int = 60,
                      typical_len: float | None = None) -> pd.DataFrame:
    """Concurrency over context length (tidy: ``context_tokens``, ``max_concurrency``).

    Lengths run geometrically from one block to ``max_model_len`` (both included, plus ``typical_len``).
    """
    import pandas as pd
    s = result.settings
    extra = [int(typical_len)] if typical_len else []
    lengths = np.unique(np.concatenate([np.geomspace(s.block_size, s.max_model_len, points).round(),
                                        [s.max_model_len], extra]).astype(np.int64))
    lengths = lengths[(lengths >= 1) & (lengths <= s.max_model_len)]
    return pd.DataFrame({"context_tokens": lengths, "max_concurrency": concurrency(model, result, lengths)})
