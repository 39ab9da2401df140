"""The engine a corpus row ran, as the product states it: its roofline, its scheduler's limits and the batch
its KV pool holds (docs/performance-model.md §11: "Ceiling batch", "Slots of a closed loop or a static batch",
"What a running sequence is charged"). :mod:`calculators.perf.comparable` builds each configuration's roofline
to check it; :mod:`calculators.perf.accuracy` predicts its rows with it.

Pure: pandas and NumPy, no Streamlit or plotly. Units: tokens and sequences.
"""
from __future__ import annotations

from functools import cache, lru_cache

import numpy as np
import pandas as pd

from calculators.errors import InvalidInputError
from calculators.perf.coefficients import (
    DEFAULT_ENGINE,
    Profile,
    engine_release,
)
from calculators.perf.roofline import DEFAULT_MAX_NUM_BATCHED_TOKENS, Efficiencies, Roofline
from calculators.specs.catalog import get_gpu, get_model
from calculators.vllm.capacity import CapacityResult
from calculators.vllm.concurrency import batch_limit, replica_capacity, running_footprint_tokens
from calculators.vllm.versions import serve_defaults

ENGINE_MAX_BATCH = {"vllm-v0": 256, "trtllm": 2048, "trtllm-old": 2048, "lmdeploy": 256}
"""Default largest batch [sequences] of each engine generation but vLLM V1's (:func:`scheduler_limits`): V0's
``max_num_seqs`` (256 in every release, ``SchedulerConfig``), TensorRT-LLM's ``max_batch_size``
(2048, https://nvidia.github.io/TensorRT-LLM/commands/trtllm-build.html), LMDeploy's ``max_batch_size`` (256 on
datacentre GPUs). SGLang and ATOM have none: their KV pool is the limit."""


TRTLLM_FREE_GPU_MEMORY_FRACTION = 0.9
"""TensorRT-LLM's KV pool: this share of the memory the weights and the runtime's buffers leave
(``kv_cache_free_gpu_mem_fraction``, default 0.90 per
https://github.com/NVIDIA/TensorRT-LLM/blob/00f37686aa854010d68bcbd0f4ab000221541ca6/docs/source/performance/perf-overview.md),
not vLLM's share of the whole memory less them."""


def row_roofline(model_id: str, gpu_id: str, tp: int, pp: int, quantization: str | None, kv_dtype: str,
              efficiencies: Efficiencies, engine: str = DEFAULT_ENGINE, profile: Profile | None = None,
              settings: tuple[int, int] = (DEFAULT_MAX_NUM_BATCHED_TOKENS, 1), dp_attention: bool = False,
              enable_chunked_prefill: bool | None = None) -> Roofline:
    """One roofline per configuration: the given efficiencies, or (default ones) the fitted set of ``profile``
    (default: the shipped fit) for the GPU's family and the engine; ``settings`` are the engine's
    ``(max_num_batched_tokens, scheduler_recv_interval)``; ``dp_attention``: attention data-parallel across the
    ``tp`` GPUs; ``enable_chunked_prefill``: vLLM's flag where the run states it (None: the engine's default)."""
    return Roofline(get_model(model_id), get_gpu(gpu_id), tensor_parallel_size=tp, pipeline_parallel_size=pp,
                    quantization=quantization, kv_cache_dtype=kv_dtype, efficiencies=efficiencies, engine=engine,
                    profile=profile, max_num_batched_tokens=settings[0], scheduler_recv_interval=settings[1],
                    enable_dp_attention=dp_attention, enable_chunked_prefill=enable_chunked_prefill)


@cache
def scheduler_limits(engine: str, version: object, generation: str, model_id: object, gpu_id: object,
                     stated_tokens: int | None) -> tuple[int, float]:
    """The token budget and the largest batch [sequences] a row's engine ran with: the budget it states, else for
    vLLM V1 the ``vllm serve`` defaults of its release on its GPU
    (:func:`~calculators.vllm.versions.default_scheduler_limits`: 8,192 tokens and 1,024 sequences on GPUs of
    70 GiB or more from 0.8.5), else :data:`DEFAULT_MAX_NUM_BATCHED_TOKENS` and :data:`ENGINE_MAX_BATCH`. V0's own
    defaults hang on flags the corpus does not record (``max_model_len``, multi-step scheduling), so V0 rows keep
    the fixed ones."""
    fixed = stated_tokens or DEFAULT_MAX_NUM_BATCHED_TOKENS, float(ENGINE_MAX_BATCH.get(generation, np.inf))
    release = engine_release(engine, version) if generation.startswith("vllm-v1") else None
    if release is None or pd.isna(model_id) or pd.isna(gpu_id):
        return fixed
    try:
        budget, seqs = serve_defaults(get_model(str(model_id)), get_gpu(str(gpu_id)),
                                      max_num_batched_tokens=stated_tokens, vllm_version=".".join(map(str, release)))
    except InvalidInputError:  # a release outside those read (docs/vllm-memory.md)
        return fixed
    return budget, float(seqs)


@lru_cache(maxsize=4096)
def kv_limit(model_id: str, gpu_id: str, tp: int, pp: int, quantization: str | None, kv_dtype: str,
              context_tokens: int, trtllm_pool: bool = False, dp_attention: bool = False) -> int:
    """Sequences of ``context_tokens`` tokens the KV pool of one replica holds: vLLM's accounting (its share of
    the whole memory less weights, activations and the rest), or with ``trtllm_pool`` TensorRT-LLM's,
    :data:`TRTLLM_FREE_GPU_MEMORY_FRACTION` of what the same weights, activations and rest leave (a flag, not the
    engine's name, so that every other engine shares one cached answer). With ``dp_attention`` each GPU keeps its
    own sequences' cache (:func:`~calculators.vllm.concurrency.replica_capacity`)."""
    model, gpu = get_model(model_id), get_gpu(gpu_id)

    def pool(kv_cache_memory_bytes: int | None = None) -> tuple[int, CapacityResult]:
        return replica_capacity(model, gpu, tp, pp, dp_attention=dp_attention, quantization=quantization,
                                kv_cache_dtype=kv_dtype, max_model_len=context_tokens,
                                kv_cache_memory_bytes=kv_cache_memory_bytes)

    pools, capacity = pool()
    if trtllm_pool:
        stage = capacity.binding
        free = gpu.memory_bytes - stage.weights_bytes - stage.activation.value - stage.non_torch.value
        pools, capacity = pool(int(TRTLLM_FREE_GPU_MEMORY_FRACTION * free))
    return pools * batch_limit(model, capacity, float(context_tokens))


def footprint_tokens(engine: str, input_len: np.ndarray, output_len: np.ndarray,
                     lockstep: np.ndarray | bool = False) -> np.ndarray:
    """Tokens of KV cache one running sequence of ``I`` prompt and ``O`` output tokens is charged when the engine
    decides how many run at once [tokens]: vLLM's
    :func:`~calculators.vllm.concurrency.running_footprint_tokens` (``I + O/2``, or ``I + O`` in ``lockstep``);
    TensorRT-LLM's default policy (``GUARANTEED_NO_EVICT``) reserves each request's ``I + O`` on admission, and so
    does this for the engines whose reservation the rows do not state."""
    return running_footprint_tokens(input_len, output_len, np.asarray(lockstep, dtype=bool)
                                    | (not engine.startswith("vllm")))


def ceiling_batch(pm: Roofline, engine: str, input_len: np.ndarray, output_len: np.ndarray,
                  num_prompts: np.ndarray, max_num_seqs: float = np.inf,
                  lockstep: np.ndarray | bool = False) -> np.ndarray:
    """The batch [sequences] an engine runs for a throughput ceiling: the fewest of the sequences the KV pool
    holds (:func:`kv_limit`: vLLM's accounting, TensorRT-LLM's own; sequences of :func:`footprint_tokens`), the
    engine's largest batch ``max_num_seqs`` (:func:`scheduler_limits`; none for SGLang and ATOM) and the prompts
    the run sends; at least 1. ``lockstep``: the runs whose requests all grow together."""
    config = (pm.model.id, pm.gpu.id, int(np.ravel(pm.tensor_parallel_size)[0]), pm.pipeline_parallel_size,
              pm.quantization, pm.kv_cache_dtype)
    trtllm_pool = engine.startswith("trtllm")
    footprint = footprint_tokens(engine, input_len, output_len, lockstep)
    kv = np.array([kv_limit(*config, int(c), trtllm_pool, pm.enable_dp_attention) for c in footprint], dtype=float)
    return np.maximum(np.fmin(np.minimum(kv, max_num_seqs), num_prompts), 1.0)


__all__ = ["ENGINE_MAX_BATCH", "TRTLLM_FREE_GPU_MEMORY_FRACTION", "ceiling_batch", "footprint_tokens", "kv_limit",
           "row_roofline", "scheduler_limits"]
