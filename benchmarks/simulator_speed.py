"""Speed of the event simulator (prints figures; not a pass/fail test).

Targets: 10,000 requests of one configuration in ≤ 2 s; a 12-point sweep in ≤ 15 s.
Run: ``.venv/bin/python benchmarks/simulator_speed.py``.
"""
from __future__ import annotations

import time

from calculators.perf.roofline import Roofline
from calculators.sim.engine import simulate
from calculators.sim.policies import ContinuousBatching, StaticBatching, kv_blocks
from calculators.sim.sweeps import sweep_max_num_seqs
from calculators.sim.workload import LogNormal, Poisson, make_workload
from calculators.specs.catalog import get_gpu, get_model


def _timed(label: str, fn):
    t0 = time.perf_counter()
    out = fn()
    print(f"{label:62s} {time.perf_counter() - t0:6.2f} s")
    return out


def main() -> None:
    model, gpu = get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100")
    pm = Roofline(model, gpu)
    num_blocks, block_size = kv_blocks(model, gpu, max_model_len=8192)
    wl = make_workload(Poisson(20), LogNormal(512, 1500, 8000), LogNormal(256, 700, 4000), num_requests=10_000,
                       seed=1)
    cont = ContinuousBatching(num_blocks=num_blocks, block_size=block_size)
    print(f"Llama-3.1-8B on H100, KV {num_blocks} blocks × {block_size}; 10,000 requests, Poisson 20/s, "
          "input 512 (p95 1500), output 256 (p95 700)")
    r = _timed("continuous, max_num_seqs 256 (target ≤ 2 s)", lambda: simulate(pm, wl, cont))
    print(f"  {len(r.timeseries)} steps, {r.request_throughput_per_s:.2f} req/s, p99 TTFT "
          f"{r.latency['ttft']['p99'] * 1e3:.0f} ms, p99 TPOT {r.latency['tpot']['p99'] * 1e3:.1f} ms")
    scarce = ContinuousBatching(num_blocks=2000, block_size=block_size)
    r = _timed("continuous, 2,000 KV blocks (preempting)", lambda: simulate(pm, wl, scarce))
    print(f"  {len(r.timeseries)} steps, {r.preemptions} preemptions")
    _timed("static, batch 32", lambda: simulate(pm, wl, StaticBatching(32, num_blocks=num_blocks)))
    grid = [1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256]
    sw = _timed("sweep of max_num_seqs, 12 points × 10,000 requests, ≤ 600 s simulated (target ≤ 15 s)",
                lambda: sweep_max_num_seqs(pm, wl, grid, policy=cont, duration_s=600))
    print(sw.frame[["max_num_seqs", "request_throughput_per_s", "ttft_p99_s", "tpot_p99_s", "overloaded"]]
          .to_string(index=False))
    print(f"knee: max_num_seqs = {sw.knee:g}")


if __name__ == "__main__":
    main()
