"""``llmcap simulate``: the event simulator of one replica from the command line.

Register with :func:`register` on the main parser's sub-parsers; bad input raises
:class:`~calculators.errors.InvalidInputError`, which the main CLI turns into exit status 2.
"""
from __future__ import annotations

import argparse
import json

from calculators.cli.flags import resolve_model
from calculators.errors import InvalidInputError
from calculators.perf.bands import band_factors
from calculators.perf.roofline import Roofline
from calculators.report.perf import factors_text
from calculators.sim.policies import SLO, ContinuousBatching, StaticBatching, kv_blocks
from calculators.sim.workload import Gamma, Poisson, length_distribution, make_workload, read_trace
from calculators.specs.catalog import get_gpu
from calculators.vllm.versions import serve_defaults

WARMUP_SHARE = 0.10  # of --duration-s left out of the statistics by default (the empty-server transient)


def register(sub) -> argparse.ArgumentParser:
    """Add the ``simulate`` sub-command to ``sub`` (an ``add_subparsers`` object) and return it."""
    p = sub.add_parser("simulate", help="event-simulate one replica: throughput, latency percentiles, preemptions")
    p.add_argument("--model", required=True, help="catalog id (Hugging Face repo id) or path to a config.json")
    p.add_argument("--gpu", required=True, help="GPU name or alias (e.g. H100)")
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--enable-dp-attention", action="store_true",
                   help="MoE models: attention data-parallel across the tensor-parallel GPUs, one KV pool per GPU")
    p.add_argument("--request-rate", type=float, help="Poisson arrivals per second (not needed with --trace)")
    p.add_argument("--arrival-cv", type=float, help="bursty: gamma inter-arrival times with this CV (1 = Poisson)")
    p.add_argument("--input-len", type=float, help="mean prompt tokens")
    p.add_argument("--output-len", type=float, help="mean output tokens")
    p.add_argument("--input-len-p95", type=float)
    p.add_argument("--output-len-p95", type=float)
    p.add_argument("--length-dist", choices=["lognormal", "fixed", "trace"],
                   help="default: lognormal when p95s are given, else fixed")
    p.add_argument("--trace", help="CSV with arrival_time_s,input_tokens,output_tokens")
    p.add_argument("--policy", choices=["continuous", "static"], default="continuous")
    p.add_argument("--max-num-seqs", type=int,
                   help="continuous: running sequences; static: batch size (default: vLLM's for the GPU)")
    p.add_argument("--max-num-batched-tokens", type=int, help="default: vLLM's for the GPU")
    p.add_argument("--scheduler-recv-interval", type=int, default=1,
                   help="SGLang: decode steps between the scheduler's polls for new requests (default 1, as vLLM)")
    p.add_argument("--max-wait-ms", type=float, default=50.0, help="static batching: longest wait to fill a batch")
    p.add_argument("--max-model-len", type=int, help="vLLM max_model_len (sizes the KV cache; clips lengths)")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    p.add_argument("--prefix-cache-hit-rate", type=float, default=0.0)
    p.add_argument("--duration-s", type=float, default=300.0, help="arrivals and the simulated clock stop here")
    p.add_argument("--warmup-s", type=float, help="statistics leave out the first seconds (default: 10 %% of the "
                                                  "duration; 0 counts everything)")
    p.add_argument("--ttft-slo-ms", type=float, help="TTFT target for goodput")
    p.add_argument("--tpot-slo-ms", type=float, help="TPOT target for goodput")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_simulate)
    return p


def _workload(a: argparse.Namespace, max_len: int | None):
    if a.length_dist == "trace" or a.trace:
        if not a.trace:
            raise InvalidInputError("trace", None, "a CSV file path with --length-dist trace")
        return read_trace(a.trace)
    if a.seed < 0:  # numpy's generators raised ValueError("expected non-negative integer")
        raise InvalidInputError("seed", a.seed, "a whole number ≥ 0")
    if a.request_rate is None:
        raise InvalidInputError("request_rate", None, "requests per second (or --trace FILE)")
    if not a.request_rate > 0:
        raise InvalidInputError("request_rate", a.request_rate, "a positive number of requests per second")
    arrivals = Poisson(a.request_rate) if a.arrival_cv is None else Gamma(a.request_rate, a.arrival_cv)
    lengths = [length_distribution(getattr(a, f"{w}_len"), getattr(a, f"{w}_len_p95"), kind=a.length_dist,
                                   max_len=max_len, field=f"{w}_len") for w in ("input", "output")]
    return make_workload(arrivals, *lengths, duration_s=a.duration_s, seed=a.seed)


def simulate_document(a: argparse.Namespace) -> dict:
    """Run the simulation the arguments describe and return the JSON document."""
    model, gpu = resolve_model(a.model), get_gpu(a.gpu)
    tp = a.tensor_parallel_size
    tokens, seqs = serve_defaults(model, gpu, a.max_model_len, max_num_batched_tokens=a.max_num_batched_tokens,
                                  max_num_seqs=a.max_num_seqs)  # the flags given, else vllm serve's for the GPU
    pm = Roofline(model, gpu, tensor_parallel_size=tp, max_num_batched_tokens=tokens,
                  scheduler_recv_interval=a.scheduler_recv_interval, enable_dp_attention=a.enable_dp_attention)
    num_blocks, block_size = kv_blocks(model, gpu, tensor_parallel_size=tp, max_model_len=a.max_model_len,
                                       gpu_memory_utilization=a.gpu_memory_utilization,
                                       enable_dp_attention=a.enable_dp_attention)
    if num_blocks <= 0:
        return {"fits": False, "message": "the model does not fit: no KV-cache blocks left"}
    if a.enable_dp_attention and a.max_num_seqs is None:
        seqs *= tp  # vLLM's max_num_seqs is each data-parallel rank's
    wl = _workload(a, a.max_model_len)
    pol: StaticBatching | ContinuousBatching
    if a.policy == "static":
        pol = StaticBatching(max_batch_size=seqs, max_wait_ms=a.max_wait_ms, num_blocks=num_blocks,
                             block_size=block_size)
    else:
        pol = ContinuousBatching(max_num_seqs=seqs, max_num_batched_tokens=tokens,
                                 num_blocks=num_blocks, block_size=block_size,
                                 prefix_cache_hit_rate=a.prefix_cache_hit_rate)
    slo = SLO(None if a.ttft_slo_ms is None else a.ttft_slo_ms / 1e3,
              None if a.tpot_slo_ms is None else a.tpot_slo_ms / 1e3)
    from calculators.sim.engine import simulate  # pandas: loaded when a simulation runs, not at start-up
    warmup = WARMUP_SHARE * a.duration_s if a.warmup_s is None else a.warmup_s
    if not (0 <= warmup < a.duration_s):
        raise InvalidInputError("warmup_s", warmup, f"seconds in [0, --duration-s = {a.duration_s:g})")
    res = simulate(pm, wl, pol, duration_s=a.duration_s, slo=slo, warmup_s=warmup)
    return {"fits": True, "model": model.id, "gpu": gpu.name, "tensor_parallel_size": tp,
            "enable_dp_attention": a.enable_dp_attention, "num_blocks": num_blocks,
            "block_size": block_size, "max_num_seqs": seqs, "max_num_batched_tokens": tokens, "warmup_s": warmup,
            **res.summary(), "band_80_factors": band_factors(gpu)}


def _text(d: dict) -> str:
    if not d["fits"]:
        return d["message"]
    ms = lambda k: "—" if d.get(k) is None else f"{d[k] * 1e3:.1f}"  # noqa: E731
    dp = ", attention data-parallel" if d["enable_dp_attention"] else ""
    lines = [f"{d['model']} on {d['gpu']} (TP{d['tensor_parallel_size']}{dp}), {d['policy']} batching, "
             f"KV cache {d['num_blocks']} blocks of {d['block_size']} tokens",
             f"max_num_seqs {d['max_num_seqs']}, max_num_batched_tokens {d['max_num_batched_tokens']}",
             f"steady-state statistics: the first {d['warmup_s']:g} s (warm-up) left out",
             f"requests: {d['completed']} of {d['arrived']} arrived finished in {d['elapsed_s']:.1f} s "
             f"({d['stop_reason']}); {d['rejected']} rejected; {d['preemptions']} preemptions",
             f"throughput: {d['request_throughput_per_s']:.2f} req/s, {d['output_tokens_per_s']:.0f} output tok/s, "
             f"{d['input_tokens_per_s']:.0f} input tok/s; goodput {d['goodput_requests_per_s']:.2f} req/s",
             "latency [ms]      mean      p50      p95      p99"]
    for m in ("ttft", "tpot", "itl", "e2e", "queue_wait"):
        lines.append(f"  {m:12s} " + " ".join(f"{ms(f'{m}_{s}_s'):>8s}" for s in ("mean", "p50", "p95", "p99")))
    lines.append(f"mean batch {d['mean_batch_size']:.1f}, mean queue {d['mean_queue_depth']:.1f}, "
                 f"KV usage mean {d['mean_kv_usage']:.0%} max {d['max_kv_usage']:.0%}")
    lines.append("the step times come from the performance model, whose 80 % bands on public measurements are "
                 + factors_text(d["band_80_factors"]))
    if d["overloaded"]:
        lines.append(f"OVERLOADED: offered load is {d['overload_factor']:.2f}× the achieved throughput; "
                     "the queue grew until the time limit")
    return "\n".join(lines)


def cmd_simulate(a: argparse.Namespace) -> int:
    """Handler of ``llmcap simulate``."""
    doc = simulate_document(a)
    print(json.dumps(doc, indent=2) if a.json else _text(doc))
    return 0
