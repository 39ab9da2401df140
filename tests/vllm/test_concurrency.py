"""The pool's batch limit and concurrency, against numbers worked out by hand from a real start-up log."""
import numpy as np

from calculators.specs.catalog import get_model
from calculators.units import GiB
from calculators.vllm.capacity import vllm_capacity
from calculators.vllm.concurrency import (
    batch_limit,
    concurrency,
    concurrency_curve,
    pool_blocks,
    running_footprint_tokens,
)

MODEL = get_model("meta-llama/Llama-3.1-70B-Instruct")


def _log_70b_tp4(**flags):
    # A real log: Llama-3.1-70B TP4 on H100, "Available KV cache memory: 32.06 GiB", 420,208 tokens.
    return vllm_capacity(MODEL, gpu_memory_bytes=80 * GiB, tensor_parallel_size=4, max_model_len=131072,
                         kv_cache_memory_bytes=int(32.06 * GiB), vllm_version="0.10.2", **flags)


def test_batch_limit_counts_whole_requests_in_the_pool():
    r = _log_70b_tp4()
    assert pool_blocks(r) == 420_208 // 16 == 26_263
    # 2,000 tokens hold ceil(2000 / 16) = 125 blocks: floor(26,263 / 125) = 210 requests.
    assert batch_limit(MODEL, r, 2000) == 210
    # 1,999.2 tokens round up to 2,000: a partial token still needs its slot.
    assert batch_limit(MODEL, r, 1999.2) == 210
    # max_model_len 131,072 holds 8,192 blocks: 3 whole requests (vLLM prints 3.21x).
    assert batch_limit(MODEL, r, 131_072) == 3


def test_batch_limit_refuses_what_vllm_refuses():
    r = _log_70b_tp4()
    assert batch_limit(MODEL, r, 131_073) == 0  # longer than max_model_len
    empty = vllm_capacity(MODEL, gpu_memory_bytes=80 * GiB, tensor_parallel_size=4, max_model_len=131072,
                          kv_cache_memory_bytes=1, vllm_version="0.10.2")  # 1 B: no block
    assert batch_limit(MODEL, empty, 100) == 0


def test_concurrency_is_vectorised_and_caps_at_max_model_len():
    r = _log_70b_tp4()
    got = concurrency(MODEL, r, [16, 2000, 131_072, 10**6])
    np.testing.assert_allclose(got, [26_263, 26_263 / 125, 26_263 / 8192, 26_263 / 8192])
    assert f"{got[2]:.2f}" == "3.21"  # the printed "Maximum concurrency ... 3.21x"


def test_concurrency_curve_spans_one_block_to_max_model_len_with_the_typical_length():
    frame = concurrency_curve(MODEL, _log_70b_tp4(), points=10, typical_len=2300)
    assert frame["context_tokens"].iloc[0] == 16 and frame["context_tokens"].iloc[-1] == 131_072
    assert 2300 in set(frame["context_tokens"])
    assert frame.loc[frame["context_tokens"] == 2300, "max_concurrency"].item() == 26_263 / 144  # ceil(2300/16)


def test_running_sequences_are_charged_their_mean_length_unless_they_grow_together():
    # 2,000 + 500/2 = 2,250; 512 + 255/2 = 639.5, whole tokens: 640; started together, all reach I + O at once
    assert running_footprint_tokens([2000, 512], [500, 255]).tolist() == [2250.0, 640.0]
    assert running_footprint_tokens([2000, 512], [500, 255], together=[True, False]).tolist() == [2500.0, 640.0]
