"""What changed between vLLM releases, as far as start-up memory accounting goes.

Source: docs/vllm-memory.md (read from vLLM source distributions 0.5.5 … 0.33.0).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from calculators.errors import InvalidInputError
from calculators.specs.schema import GPUSpec, ModelSpec
from calculators.validation import positive_int

DEFAULT_VLLM_VERSION = "0.33.0"
#: The oldest release whose start-up accounting docs/vllm-memory.md was read from.
OLDEST_RELEASE = (0, 5, 5)
_V2_RUNNER_023 = {"Qwen3ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM"}
_V2_RUNNER_024 = _V2_RUNNER_023 | {"DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM"}


@dataclass(frozen=True)
class VllmVersion:
    """A vLLM release and the engine that serves the model (V0 or V1)."""

    release: tuple[int, int, int]
    engine: str

    @property
    def text(self) -> str:
        return ".".join(map(str, self.release))

    def at_least(self, *version: int) -> bool:
        return self.release >= tuple(version) + (0,) * (3 - len(version))


def parse_vllm_version(text: str, engine: str = "auto") -> VllmVersion:
    """Parse ``0.10.2`` / ``v0.9.2rc1`` / ``0.11.0+cu128``; engine ``auto`` means the release's default."""
    m = re.match(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?", str(text))
    if not m:
        raise InvalidInputError("vllm_version", text, "a release such as 0.10.2")
    release = (int(m[1]), int(m[2]), int(m[3] or 0))
    if release < OLDEST_RELEASE or release >= (1, 0, 0):
        oldest = ".".join(map(str, OLDEST_RELEASE))
        raise InvalidInputError("vllm_version", text, f"a release from {oldest} up to 0.x")
    engine = engine.upper()
    if engine == "AUTO":
        engine = "V0" if release < (0, 8, 0) else "V1"
    if engine not in ("V0", "V1") or (engine == "V0" and release >= (0, 11, 0)) or (
            engine == "V1" and release < (0, 7, 0)):
        raise InvalidInputError("engine", engine, "V0 for releases up to 0.10.x, V1 from 0.7.0")
    return VllmVersion(release, engine)


def uses_v2_model_runner(v: VllmVersion, model: ModelSpec, quantized: bool) -> bool:
    """Whether the V2 GPU model runner is this model's default (0.22–0.28; ``use_v2_model_runner``)."""
    arch = model.architecture
    if v.engine != "V1" or not v.at_least(0, 22):
        return False
    if not v.at_least(0, 23):
        return arch == "Qwen3ForCausalLM" and not quantized
    if not v.at_least(0, 24):
        return arch in _V2_RUNNER_023 and not quantized
    if not v.at_least(0, 25):
        return arch in _V2_RUNNER_024
    return arch in _V2_RUNNER_024 or not model.is_moe


def subtracts_cudagraphs(v: VllmVersion, model: ModelSpec, quantized: bool, enforce_eager: bool) -> bool:
    """Whether this version deducts the CUDA-graph estimate from the KV budget (§2.5).

    V0 and V1 ≤ 0.19: no (graphs come on top of ``u × total``). 0.20+: yes, except models on the
    V2 runner in 0.22–0.28, whose estimate is 0. ``enforce_eager`` captures no graphs at all.
    """
    if enforce_eager or v.engine == "V0" or not v.at_least(0, 20):
        return False
    if v.at_least(0, 29):
        return True
    return not uses_v2_model_runner(v, model, quantized)


def caches_mla_latent(v: VllmVersion) -> bool:
    """0.7.1+: DeepSeek's MLA layers cache the compressed latent; before, vLLM expanded them into plain
    multi-head K and V (v0.7.1 release notes, https://github.com/vllm-project/vllm/releases/tag/v0.7.1)."""
    return v.at_least(0, 7, 1)


def uses_hybrid_kv_manager(v: VllmVersion) -> bool:
    """0.9.1+: windowed layers get their own KV groups; before, they were sized as full attention."""
    return v.engine == "V1" and v.at_least(0, 9, 1)


#: vLLM V1's default ``((API-server tokens, LLM-class tokens), max_num_seqs)`` per hardware tier
#: (``EngineArgs.get_batch_defaults`` in ``vllm/engine/arg_utils.py``, v0.33.0 lines 2973–3006).
_V1_TIERS = {"largest": ((16384, 16384), 1024), "large": ((8192, 16384), 1024), "small": ((2048, 8192), 256)}


def _v1_tier(v: VllmVersion, gpu_memory_gib: float, gpu_name: str, compute_capability: str | None) -> str:
    """vLLM V1's hardware tier for its scheduler defaults: 0.7.0–0.8.4 chose by name (H100, H200), 0.8.5 by
    memory (≥ 70 GiB), 0.9.0 left A100s out of it (PR 17885), 0.28.0 added a tier at ≥ 160 GiB (B200, B300,
    MI300X) and 0.33.0 keeps the GB10 (compute capability 12.1) small."""
    name = gpu_name.lower()
    if v.at_least(0, 28) and gpu_memory_gib >= 160:
        return "largest"
    if not v.at_least(0, 8, 5):
        return "large" if "h100" in name or "h200" in name else "small"
    small = ((v.at_least(0, 9) and "a100" in name) or (v.at_least(0, 33) and compute_capability == "12.1"))
    return "large" if gpu_memory_gib >= 70 and not small else "small"


def _v0_chunks_by_default(v: VllmVersion, model: ModelSpec, max_model_len: int, rocm: bool) -> bool:
    """Whether V0 turns chunked prefill on by itself: from 0.5.3 for a ``max_model_len`` above 32,768 tokens,
    not with sliding windows, nor multimodal models from 0.6.2, nor on ROCm from 0.6.5, nor MLA from 0.8.0
    (``EngineArgs.create_engine_config``; ``_set_default_args_v0`` from 0.8.0)."""
    if max_model_len <= 32768 or not v.at_least(0, 5, 3) or "sliding_attention" in model.layer_types:
        return False
    multimodal = model.vision_encoder is not None or model.encoder_params > 0
    return not ((multimodal and v.at_least(0, 6, 2)) or (rocm and v.at_least(0, 6, 5))
                or (model.is_mla and v.at_least(0, 8)))


def _v0_defaults(v: VllmVersion, model: ModelSpec, max_model_len: int, rocm: bool) -> tuple[int, int]:
    """V0's ``(max_num_batched_tokens, max_num_seqs)``: chunks of 512 tokens (2,048 from 0.6.5) where chunked
    prefill is on, else ``max(max_model_len, 2048)``; 256 sequences (``SchedulerConfig``). 0.7.1–0.7.3 switched
    chunked prefill off for MLA models after the chunk had been sized, so they keep the chunk."""
    if _v0_chunks_by_default(v, model, max_model_len, rocm):
        return (2048 if v.at_least(0, 6, 5) else 512), 256
    return max(max_model_len, 2048), 256


def default_scheduler_limits(v: VllmVersion, model: ModelSpec, gpu_memory_gib: float, gpu_name: str,
                             max_model_len: int, *, rocm: bool = False, compute_capability: str | None = None,
                             offline: bool = False, max_num_batched_tokens: int | None = None,
                             max_num_seqs: int | None = None) -> tuple[int, int]:
    """``(max_num_batched_tokens, max_num_seqs)`` vLLM runs with: those given, the others its defaults.

    ``offline``: the ``LLM`` class (``benchmark_throughput.py``) rather than ``vllm serve``. Given values must be
    whole numbers from 1 (else :class:`InvalidInputError` names the flag). V1 picks by
    hardware tier (:func:`_v1_tier`); from 0.10.1 the default ``max_num_seqs`` is at most the token budget, from
    0.11.1 the default budget at most ``max_num_seqs × max_model_len``. V0: :func:`_v0_defaults`. Read from the
    releases' ``vllm/engine/arg_utils.py`` and ``vllm/config.py`` (docs/vllm-memory.md §2.3)."""
    max_num_batched_tokens, max_num_seqs = (None if x is None else int(positive_int(name, x, scalar=True))
                                            for name, x in (("max_num_batched_tokens", max_num_batched_tokens),
                                                            ("max_num_seqs", max_num_seqs)))
    if v.engine == "V0":
        tokens, seqs = _v0_defaults(v, model, max_model_len, rocm)
    else:
        (api, llm), seqs = _V1_TIERS[_v1_tier(v, gpu_memory_gib, gpu_name, compute_capability)]
        tokens, seqs = (llm if offline else api), (seqs if v.at_least(0, 8, 4) else 1024)
    seqs = seqs if max_num_seqs is None else max_num_seqs
    if max_num_batched_tokens is None and v.engine == "V1" and v.at_least(0, 11, 1):
        tokens = min(tokens, seqs * max_model_len)
    tokens = tokens if max_num_batched_tokens is None else max_num_batched_tokens
    if max_num_seqs is None and v.engine == "V1" and v.at_least(0, 10, 1):
        seqs = min(seqs, tokens)
    return tokens, seqs


def serve_defaults(model: ModelSpec, gpu: GPUSpec, max_model_len: int | None = None, *,
                   max_num_batched_tokens: int | None = None, max_num_seqs: int | None = None,
                   vllm_version: str = DEFAULT_VLLM_VERSION) -> tuple[int, int]:
    """``(max_num_batched_tokens, max_num_seqs)`` that ``vllm serve`` runs ``model`` with on ``gpu`` at the
    release: those given, else its defaults (:func:`default_scheduler_limits`;
    ``max_model_len`` defaults to the model's context)."""
    return default_scheduler_limits(parse_vllm_version(vllm_version), model, gpu.memory_gib, gpu.name,
                                    max_model_len or model.max_position_embeddings, rocm=gpu.vendor == "AMD",
                                    compute_capability=gpu.compute_capability,
                                    max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs)
