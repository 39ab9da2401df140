"""Estimates of the start-up terms vLLM measures rather than computes, each with a range.

vLLM *measures* the activation peak of a dummy forward pass, the growth of non-torch memory and
the CUDA-graph pool; no formula reproduces them exactly. These estimates are fitted by hand to the
public start-up logs (docs/vllm-memory.md §2.3–§2.5 and §7)
(observed: activation 0.19–0.57 GiB for 7–14B dense models at 2–8k batched tokens, ~1.0 GiB for
Qwen2.5-7B-AWQ, 1.3–1.4 GiB for 70B TP4 / 235B TP8, 2.07 GiB for Llama-3.1-8B at 20k tokens on V0;
non-torch 0.06–0.43 GiB; CUDA graphs 0.48 GiB for a 28-layer 7B, 3.45 GiB for a 94-layer MoE at
TP8). Each returns ``(estimate, low, high)`` in bytes; the ranges cover every observation.
"""
from __future__ import annotations

from dataclasses import dataclass

from calculators.specs.schema import ModelSpec
from calculators.units import GiB, MiB

#: Live activation tensors per batched token: input + residual (2·hidden) and the MLP's
#: gate/up output plus activation output (3 × FFN width on this rank), in the activation dtype.
ACTIVATION_HIDDEN_COPIES = 2
ACTIVATION_FFN_COPIES = 3
#: Bytes per vocabulary entry per dummy sequence in the sampler pass (fp32 logits, probabilities,
#: sort keys): fitted to the logs above.
SAMPLER_BYTES_PER_VOCAB = 8
ACTIVATION_BASE_BYTES = 0.2 * GiB
ACTIVATION_RANGE = (0.5, 3.2)
NON_TORCH_SINGLE_BYTES = 0.1 * GiB
NON_TORCH_MULTI_EXTRA_BYTES = 0.15 * GiB
NON_TORCH_RANGE_BYTES = (0.05 * GiB, 0.5 * GiB)
CUDAGRAPH_PER_LAYER_BYTES = {"dense": 17 * MiB, "moe": 37 * MiB}
CUDAGRAPH_RANGE = (0.5, 2.0)


@dataclass(frozen=True)
class Estimate:
    """An estimated quantity [bytes] with the range it may take and how it was estimated."""

    value: float
    low: float
    high: float
    basis: str

    @classmethod
    def exact(cls, value: float, basis: str) -> Estimate:
        return cls(value, value, value, basis)


def activation_peak(model: ModelSpec, *, max_num_batched_tokens: int, max_num_seqs: int,
                    tensor_parallel_size: int, act_bytes: int) -> Estimate:
    """Peak activation memory of vLLM's profile run on one GPU [bytes]."""
    ffn = max(model.intermediate_size,
              model.num_experts_per_tok * model.moe_intermediate_size + model.shared_expert_intermediate_size)
    per_token = (ACTIVATION_HIDDEN_COPIES * model.hidden_size
                 + ACTIVATION_FFN_COPIES * ffn / tensor_parallel_size) * act_bytes
    sampler_seqs = min(max_num_seqs, max_num_batched_tokens)
    value = (max_num_batched_tokens * per_token + sampler_seqs * model.vocab_size * SAMPLER_BYTES_PER_VOCAB
             + ACTIVATION_BASE_BYTES)
    basis = (f"{max_num_batched_tokens} tokens × {per_token:,.0f} B + {sampler_seqs} seqs × "
             f"{model.vocab_size} vocab × {SAMPLER_BYTES_PER_VOCAB} B + {ACTIVATION_BASE_BYTES / GiB:.1f} GiB")
    return Estimate(value, value * ACTIVATION_RANGE[0], value * ACTIVATION_RANGE[1], basis)


def non_torch(num_gpus: int) -> Estimate:
    """CUDA context growth, cuBLAS workspaces and (multi-GPU) NCCL / custom all-reduce buffers."""
    value = NON_TORCH_SINGLE_BYTES + (NON_TORCH_MULTI_EXTRA_BYTES if num_gpus > 1 else 0)
    return Estimate(value, *NON_TORCH_RANGE_BYTES, "0.1 GiB, +0.15 GiB with more than one GPU")


def cudagraph(model: ModelSpec, layers_on_gpu: int, enforce_eager: bool) -> Estimate:
    """CUDA-graph pool for the default capture sizes [bytes]; zero with ``enforce_eager``."""
    if enforce_eager:
        return Estimate.exact(0.0, "enforce_eager: no CUDA graphs")
    per_layer = CUDAGRAPH_PER_LAYER_BYTES["moe" if model.is_moe else "dense"]
    value = layers_on_gpu * per_layer
    return Estimate(value, value * CUDAGRAPH_RANGE[0], value * CUDAGRAPH_RANGE[1],
                    f"{layers_on_gpu} layers × {per_layer / MiB:.0f} MiB")
