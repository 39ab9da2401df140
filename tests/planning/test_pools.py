"""Mixed pools: shares, separate sizing, totals."""
import pytest

from calculators.errors import InvalidInputError
from calculators.planning.fleet import Workload, plan_fleet
from calculators.planning.pools import PoolSpec, plan_pools
from calculators.specs.catalog import get_gpu, get_model

L70 = "meta-llama/Llama-3.1-70B-Instruct"
W = Workload(request_rate_per_s=40, input_len=2000, output_len=300, ttft_p99_s=1.0, tpot_p99_s=0.05)
POOLS = [PoolSpec("latency", 0.25, ttft_p99_s=0.5, tpot_p99_s=0.03),
         PoolSpec("throughput", 0.75, ttft_p99_s=10.0, tpot_p99_s=0.1)]


def test_pools_sized_separately_and_totalled():
    m, gpus = get_model(L70), [get_gpu("H100")]
    mixed = plan_pools(m, gpus, W, POOLS, max_pp=1)
    lat, thr = mixed.pools
    assert lat.workload.request_rate_per_s == 10 and thr.workload.request_rate_per_s == 30
    assert lat.workload.tpot_p99_s == 0.03 and thr.workload.ttft_p99_s == 10.0
    # each pool equals plan_fleet's first plan on its own workload
    alone = plan_fleet(m, gpus, lat.workload, max_pp=1)[0]
    assert (lat.plan.total_gpus, lat.plan.tensor_parallel_size) == (alone.total_gpus, alone.tensor_parallel_size)
    assert mixed.total_gpus == lat.plan.total_gpus + thr.plan.total_gpus
    assert mixed.usd_per_hour == pytest.approx(lat.plan.usd_per_hour + thr.plan.usd_per_hour)
    tokens_per_s = 40 * (2000 + 300)
    assert mixed.usd_per_million_tokens == pytest.approx(mixed.usd_per_hour / 3600 / tokens_per_s * 1e6)
    # the single pool is sized at the strictest targets (0.5 s, 30 ms) for all 40 req/s
    assert mixed.single_pool is not None and mixed.single_pool.tpot_p99_s <= 0.03
    assert mixed.meets_slo and "pool" in mixed.verdict


def test_shares_must_sum_to_one():
    with pytest.raises(InvalidInputError, match="sum to 1"):
        plan_pools(get_model(L70), [get_gpu("H100")], W, [PoolSpec("a", 0.5), PoolSpec("b", 0.3)])
    with pytest.raises(InvalidInputError):
        PoolSpec("bad", 1.5)
