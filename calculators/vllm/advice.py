"""``max_num_seqs`` advice from a length distribution, and the ``vllm serve`` line to paste."""
from __future__ import annotations

import numpy as np

from calculators.errors import InvalidInputError
from calculators.memory.gguf import file_type, is_gguf
from calculators.specs.schema import ModelSpec
from calculators.validation import positive
from calculators.vllm.capacity import CapacityResult, blocks_per_request

_QUANTILES = (np.arange(1000) + 0.5) / 1000
_Z95 = 1.6448536269514722  # standard normal 95th percentile


def lognormal_lengths(mean_len: float, p95_len: float | None = None) -> np.ndarray:
    """1,000 equally likely lengths [tokens] of a log-normal with this mean and 95th percentile.

    With ``p95_len`` omitted every request has the mean length. Solves
    ``exp(μ + σ²/2) = mean`` and ``exp(μ + 1.645 σ) = p95`` for σ (the smaller root).
    """
    mean = positive("mean_len", mean_len)
    if p95_len is None:
        return np.full(1, mean)
    p95 = positive("p95_len", p95_len)
    if p95 < mean:
        raise InvalidInputError("p95_len", p95_len, f"at least the mean length ({mean_len})")
    c = np.log(p95 / mean)  # σ²/2 − 1.645σ + c = 0
    disc = _Z95**2 - 2 * c
    if disc < 0:
        raise InvalidInputError("p95_len", p95_len, f"at most {mean * np.exp(_Z95**2 / 2):.0f} for this mean")
    sigma = _Z95 - np.sqrt(disc)
    mu = np.log(mean) - sigma**2 / 2
    from statistics import NormalDist
    z = np.array([NormalDist().inv_cdf(q) for q in _QUANTILES])
    return np.exp(mu + sigma * z)


def max_num_seqs_advice(model: ModelSpec, result: CapacityResult, *, mean_len: float,
                        p95_len: float | None = None) -> dict:
    """How many sequences of this length mix the KV pool holds, and a ``max_num_seqs`` to set.

    Every running sequence is counted at its full length (prompt + output), rounded up to whole
    blocks in every KV group. ``recommended`` = pool ÷ mean blocks per sequence, rounded down to a
    multiple of 8 (vLLM captures CUDA graphs for batch sizes in steps of 8); ``no_preemption`` =
    pool ÷ the blocks of a 95th-percentile sequence.
    """
    s, st = result.settings, result.binding
    lengths = np.minimum(np.ceil(lognormal_lengths(mean_len, p95_len)), s.max_model_len).astype(int)
    blocks = np.array([sum(blocks_per_request(model, g, int(n), s.max_num_batched_tokens)
                           for g in st.groups) for n in np.unique(lengths)])
    per_seq = blocks[np.searchsorted(np.unique(lengths), lengths)]
    pool = min(x.num_blocks for x in result.stages)
    at_mean = int(pool // per_seq.mean())
    at_p95 = int(pool // np.quantile(per_seq, 0.95))
    recommended = max(1, at_mean - at_mean % 8) if at_mean >= 8 else max(1, at_mean)
    return {"mean_len": float(mean_len), "p95_len": None if p95_len is None else float(p95_len),
            "blocks_per_sequence_mean": float(per_seq.mean()), "concurrency_at_mean": at_mean,
            "concurrency_at_p95": at_p95, "recommended_max_num_seqs": recommended,
            "no_preemption_max_num_seqs": max(at_p95, 0)}


def recommend_max_num_seqs(kv_max_num_seqs: int, slo_batch: int | None, knee_batch: int | None, *,
                           has_targets: bool) -> dict:
    """The one ``max_num_seqs`` to set, and why, from one length mix.

    ``kv_max_num_seqs``: what the KV pool holds at the mix (:func:`max_num_seqs_advice`'s
    ``recommended_max_num_seqs``, a multiple of 8) — more would only queue in vLLM or preempt.
    ``slo_batch``: the largest batch whose TPOT and TTFT meet the p99 targets (``None``: no batch does,
    or no targets, see ``has_targets``). The answer is the smaller of the two; the throughput knee
    ``knee_batch`` is reported, not imposed: above it a larger batch adds little throughput but the
    headroom lets bursts drain. Returns ``max_num_seqs``, ``binding`` (``"kv_cache"``, ``"slo"`` or
    ``"slo_unmet"``) and ``reason``, a sentence.
    """
    kv = max(1, int(kv_max_num_seqs))
    knee = f"; throughput flattens above batch {int(knee_batch):,} (the knee)" if knee_batch else ""
    if has_targets and slo_batch is None:
        return {"max_num_seqs": kv, "binding": "slo_unmet",
                "reason": f"no batch meets the latency targets on this configuration, so this is only the {kv:,} "
                          f"sequences the KV cache holds{knee} — see the Fleet planner for a layout that does"}
    if slo_batch is not None and slo_batch < kv:
        return {"max_num_seqs": int(slo_batch), "binding": "slo",
                "reason": f"the largest batch that meets the p99 latency targets (the KV cache would hold "
                          f"{kv:,}){knee}"}
    return {"max_num_seqs": kv, "binding": "kv_cache",
            "reason": "what the KV cache holds at this length mix, rounded down to a multiple of 8"
                      + (" (the latency targets allow more)" if slo_batch is not None else "") + knee}


def vllm_serve_command(model_id: str, result: CapacityResult, max_num_seqs: int | None = None,
                       data_parallel_size: int = 1) -> str:
    """The ``vllm serve`` line for these settings (flags only where they differ from defaults); with a
    ``data_parallel_size`` above 1, that many ranks of these settings (``--data-parallel-size``), each with its own
    ``max_num_seqs``.

    A GGUF file is served by its path with the original model's tokenizer, as vLLM's GGUF guide shows
    (https://docs.vllm.ai/en/v0.8.2/features/quantization/gguf.html); the file name here is a placeholder.
    """
    s = result.settings
    parts = [f"vllm serve {model_id}"]
    if is_gguf(s.quantization):
        ftype = file_type(s.quantization).upper()
        parts = [f"vllm serve ./{model_id.rsplit('/', 1)[-1]}-{ftype}.gguf --tokenizer {model_id}"]
    if s.tensor_parallel_size > 1:
        parts.append(f"--tensor-parallel-size {s.tensor_parallel_size}")
    if s.pipeline_parallel_size > 1:
        parts.append(f"--pipeline-parallel-size {s.pipeline_parallel_size}")
    if data_parallel_size > 1:
        parts.append(f"--data-parallel-size {data_parallel_size}")
    parts += [f"--gpu-memory-utilization {s.gpu_memory_utilization:g}", f"--max-model-len {s.max_model_len}"]
    if s.kv_cache_dtype != "auto":
        parts.append(f"--kv-cache-dtype {s.kv_cache_dtype}")
    if s.expert_parallel_size:
        parts.append("--enable-expert-parallel")
    if s.enforce_eager:
        parts.append("--enforce-eager")
    if s.language_model_only:
        parts.append("--language-model-only")
    parts.append(f"--max-num-seqs {max_num_seqs or s.max_num_seqs}")
    parts.append(f"--max-num-batched-tokens {s.max_num_batched_tokens}")
    return " ".join(parts)
