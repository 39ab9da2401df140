"""Release parsing and the per-release rules of calculators/vllm/versions.py."""
from __future__ import annotations

import pytest

from calculators.errors import InvalidInputError
from calculators.specs.catalog import get_model
from calculators.vllm.versions import default_scheduler_limits, parse_vllm_version


@pytest.mark.parametrize(("text", "release", "engine"), [
    ("0.5.5", (0, 5, 5), "V0"),  # the oldest release whose accounting was read (docs/vllm-memory.md §2.7)
    ("v0.9.2rc1", (0, 9, 2), "V1"),
    ("0.11.0+cu128", (0, 11, 0), "V1"),
    ("0.10", (0, 10, 0), "V1"),
])
def test_releases_parse_with_their_default_engine(text, release, engine):
    v = parse_vllm_version(text)
    assert (v.release, v.engine) == (release, engine)


@pytest.mark.parametrize("text", ["0.5.4", "0.4.3", "1.0.0", "latest", ""])
def test_releases_outside_the_read_range_are_refused_by_name(text):
    with pytest.raises(InvalidInputError) as exc:
        parse_vllm_version(text)
    assert exc.value.field == "vllm_version"


LLAMA_8B, LLAMA_70B, R1 = "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B", "deepseek-ai/DeepSeek-R1"


@pytest.mark.parametrize(("release", "engine", "model", "gib", "name", "rocm", "offline", "limits"), [
    # V1, EngineArgs.get_batch_defaults / _set_default_args_v1 in vllm/engine/arg_utils.py of each release
    ("0.33.0", "auto", LLAMA_8B, 178.4, "NVIDIA B200", False, False, (16384, 1024)),  # >= 160 GiB (L2973)
    ("0.33.0", "auto", LLAMA_8B, 192.0, "AMD Instinct MI300X", True, False, (16384, 1024)),
    ("0.27.1", "auto", LLAMA_8B, 178.4, "NVIDIA B200", False, False, (8192, 1024)),  # no such tier yet
    ("0.33.0", "auto", LLAMA_8B, 139.8, "NVIDIA H200", False, False, (8192, 1024)),  # >= 70 GiB
    ("0.33.0", "auto", LLAMA_8B, 139.8, "NVIDIA H200", False, True, (16384, 1024)),  # the LLM class
    ("0.10.2", "auto", LLAMA_8B, 79.2, "NVIDIA A100-SXM4-80GB", False, False, (2048, 256)),  # A100 left out
    ("0.8.5", "auto", LLAMA_8B, 79.2, "NVIDIA A100-SXM4-80GB", False, False, (8192, 1024)),  # memory only
    ("0.8.4", "auto", LLAMA_8B, 192.0, "AMD Instinct MI300X", True, False, (2048, 256)),  # by name: not H100/H200
    ("0.8.3", "auto", LLAMA_8B, 44.4, "NVIDIA L40S", False, False, (2048, 1024)),  # 1024 sequences for all
    ("0.8.3", "auto", LLAMA_8B, 79.1, "NVIDIA H100 80GB HBM3", False, False, (8192, 1024)),
    # V0: SchedulerConfig in vllm/config.py; chunked prefill by default above 32,768 tokens
    ("0.6.3", "auto", "meta-llama/Llama-3.1-405B", 79.1, "NVIDIA H100 80GB HBM3", False, True, (512, 256)),
    ("0.6.3", "auto", "meta-llama/Llama-3.1-405B", 192.0, "AMD Instinct MI300X", True, True, (512, 256)),
    ("0.6.5", "auto", "meta-llama/Llama-3.1-405B", 79.1, "NVIDIA H100 80GB HBM3", False, False, (2048, 256)),
    ("0.6.5", "auto", "meta-llama/Llama-3.1-405B", 192.0, "AMD Instinct MI300X", True, False, (131072, 256)),
    ("0.7.3", "auto", R1, 139.8, "NVIDIA H200", False, False, (2048, 256)),  # MLA off after the chunk was sized
    ("0.9.2", "V0", R1, 139.8, "NVIDIA H200", False, False, (163840, 256)),  # MLA: no chunked prefill from 0.8
])
def test_scheduler_defaults_follow_the_release_and_the_gpu(release, engine, model, gib, name, rocm, offline,
                                                            limits):
    """``(max_num_batched_tokens, max_num_seqs)`` as each release's source sets them for a GPU that reports
    ``gib`` GiB under ``name``, at the model's full context."""
    spec = get_model(model)
    got = default_scheduler_limits(parse_vllm_version(release, engine), spec, gib, name,
                                   spec.max_position_embeddings, rocm=rocm, offline=offline)
    assert got == limits


def test_scheduler_defaults_yield_to_the_flags_given():
    """0.10.1+ caps the default ``max_num_seqs`` at a given token budget, 0.11.1+ the default budget at
    ``max_num_seqs × max_model_len``; flags given are kept as they are."""
    v, spec = parse_vllm_version("0.33.0"), get_model(LLAMA_8B)
    assert default_scheduler_limits(v, spec, 79.1, "NVIDIA H100", 131072, max_num_batched_tokens=512) == (512, 512)
    assert default_scheduler_limits(v, spec, 79.1, "NVIDIA H100", 4, max_num_seqs=8) == (32, 8)
    assert default_scheduler_limits(v, spec, 79.1, "NVIDIA H100", 4, max_num_batched_tokens=64,
                                    max_num_seqs=8) == (64, 8)
    assert default_scheduler_limits(parse_vllm_version("0.10.0"), spec, 79.1, "NVIDIA H100", 131072,
                                    max_num_batched_tokens=512) == (512, 1024)
