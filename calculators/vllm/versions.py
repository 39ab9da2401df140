"""What changed between vLLM releases, as far as start-up memory accounting goes.

Source: docs/vllm-memory.md (read from vLLM source distributions 0.5.5 … 0.33.0).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from calculators.errors import InvalidInputError
from calculators.specs.schema import ModelSpec

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


def default_scheduler_limits(v: VllmVersion, gpu_memory_gib: float, gpu_name: str,
                             max_model_len: int) -> tuple[int, int]:
    """``(max_num_batched_tokens, max_num_seqs)`` that ``vllm serve`` picks when not given.

    V1 (``EngineArgs._set_default_args``): GPUs with ≥ 70 GiB other than A100 get 8192 / 1024,
    others 2048 / 256. V0: without chunked prefill ``max(max_model_len, 2048)`` tokens; chunked
    prefill switches on by default above 32,768 tokens with 512-token chunks; 256 sequences.
    """
    if v.engine == "V1":
        big = gpu_memory_gib >= 70 and "A100" not in gpu_name.upper()
        return (8192, 1024) if big else (2048, 256)
    return (max(max_model_len, 2048), 256) if max_model_len <= 32768 else (512, 256)
