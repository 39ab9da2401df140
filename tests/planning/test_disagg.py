"""Disaggregated prefill/decode: KV hand-off worked by hand, GPU-seconds, and the comparison."""
import numpy as np
import pytest

from calculators.errors import InvalidInputError
from calculators.perf.roofline import Roofline
from calculators.planning.disagg import (
    PCIE5_X16_BYTES_PER_S,
    decode_gpu_seconds,
    kv_bytes_per_request,
    kv_transfer_time_s,
    plan_disaggregated,
    prefill_batch,
    prefill_gpu_seconds,
    transfer_link,
)
from calculators.planning.fleet import Workload
from calculators.specs.catalog import get_gpu, get_model

L70 = "meta-llama/Llama-3.1-70B-Instruct"
W = Workload(request_rate_per_s=40, input_len=2000, output_len=300, ttft_p99_s=1.0, tpot_p99_s=0.05)


def test_kv_bytes_moved_llama70b():
    # 2 (K,V) × 8 KV heads × 128 head_dim × 2 B × 80 layers = 327,680 B/token; × 2,000 tokens
    assert kv_bytes_per_request(get_model(L70), 2000) == 2000 * 327_680 == 655_360_000
    assert kv_bytes_per_request(get_model(L70), 2000, kv_cache_dtype="fp8") == 327_680_000
    np.testing.assert_array_equal(kv_bytes_per_request(get_model(L70), [1000, 2000]), [327_680_000, 655_360_000])


def test_transfer_time_hand_worked():
    # 655,360,000 B / 450e9 B/s = 1.45636 ms (H100 NVLink 4: 900 GB/s bidirectional = 450 per direction)
    assert kv_transfer_time_s(655_360_000, 450e9) == pytest.approx(1.456356e-3, rel=1e-6)
    bw, text = transfer_link(get_gpu("H100"))
    assert bw == 450e9 and "per direction" in text
    bw, text = transfer_link(get_gpu("H100"), inter_node_gb_per_s=50)
    assert bw == 50e9 and "given" in text
    # 655.36 MB over 50 GB/s = 13.1072 ms
    assert kv_transfer_time_s(655_360_000, bw) == pytest.approx(13.1072e-3)
    no_link = get_gpu("L4").model_copy(update={"scale_up_bytes_per_s_per_direction": 0.0})
    assert transfer_link(no_link)[0] == PCIE5_X16_BYTES_PER_S
    with pytest.raises(InvalidInputError):
        kv_transfer_time_s(1.0, 0.0)


def test_gpu_seconds_per_request():
    r = Roofline(get_model(L70), get_gpu("H100"), tensor_parallel_size=4)
    assert prefill_batch(2000, 8192) == 4 and prefill_batch(10_000, 8192) == 1
    # prefill of 4 prompts shared by 4 requests, × 4 GPUs
    assert prefill_gpu_seconds(r, 2000, 4) == pytest.approx(float(r.prefill_time_s(2000, 4)) / 4 * 4)
    step = float(r.decode_step_time_s(64, 2000 + 150))
    assert decode_gpu_seconds(r, 64, 2000, 300) == pytest.approx(300 * step / 64 * 4)
    # vectorised over batch equals a scalar loop
    b = np.array([1.0, 8.0, 64.0])
    np.testing.assert_allclose(decode_gpu_seconds(r, b, 2000, 300),
                               [float(decode_gpu_seconds(r, x, 2000, 300)) for x in b])


def test_plan_disaggregated_issue_scenario():
    d = plan_disaggregated(get_model(L70), get_gpu("H100"), W)
    assert d.fits and d.meets_slo
    assert d.transfer_s == pytest.approx(1.456356e-3, rel=1e-6)
    assert d.ttft_p99_s <= 1.0 and d.tpot_s <= 0.05
    assert d.total_gpus == d.prefill.gpus + d.decode.gpus
    assert d.prefill_decode_gpu_ratio == pytest.approx(d.prefill.gpu_seconds_per_request /
                                                       d.decode.gpu_seconds_per_request)
    assert d.prefill.utilisation <= 0.8 + 1e-9 and d.decode.utilisation <= 0.8 + 1e-9
    assert d.colocated is not None and d.beats_colocated == (d.total_gpus < d.colocated.total_gpus)
    assert "GPU" in d.verdict


def test_slow_link_hurts_ttft():
    fast = plan_disaggregated(get_model(L70), get_gpu("H100"), W)
    slow = plan_disaggregated(get_model(L70), get_gpu("H100"), W, inter_node_gb_per_s=1)
    assert slow.transfer_s == pytest.approx(0.65536)
    # 0.66 s of the 1 s TTFT budget goes to the hand-off, so the prefill pool needs more GPUs (it may take fewer,
    # wider instances: TP 8 instead of TP 4) and must answer faster: less of the TTFT is left to the prefill
    assert slow.prefill.gpus >= fast.prefill.gpus
    assert slow.ttft_p99_s - slow.transfer_s < fast.ttft_p99_s - fast.transfer_s
