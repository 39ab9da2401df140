"""``llmcap perf`` and ``llmcap knee``: step time, latency and throughput; the knee and the SLO batch."""
from __future__ import annotations

import argparse
import json

from calculators.cli.flags import add_perf, roofline
from calculators.report.perf import factors_text, knee_document, perf_document, published_runs_lines
from calculators.validation import positive_int
from calculators.vllm.versions import serve_defaults

LOADS = {"static_batch": "static batch of {concurrency:g}", "concurrency": "{concurrency:g} requests in flight",
         "request_rate": "{request_rate:g} requests/s (mean {concurrency:.1f} in flight)"}


def cmd_perf(a: argparse.Namespace) -> int:
    batch = None if a.batch_size is None else int(positive_int("batch_size", a.batch_size, scalar=True))
    r = roofline(a)
    seqs = serve_defaults(r.model, r.gpu, max_num_batched_tokens=r.max_num_batched_tokens,
                          max_num_seqs=a.max_num_seqs)[1]
    doc = perf_document(r, batch_size=batch, concurrency=a.concurrency, request_rate=a.request_rate,
                        max_num_seqs=seqs, input_len=a.input_len, output_len=a.output_len)
    if a.json:
        print(json.dumps(doc, indent=2))
        return 0
    layout = ", attention data-parallel" if doc["enable_dp_attention"] else ""
    print(f"{doc['model']} on {doc['gpu']} × {doc['tensor_parallel_size']} ({doc['compute_dtype']}{layout}), "
          f"{LOADS[doc['load_mode']].format(**doc)}, {doc['input_len']} in / {doc['output_len']} out")
    if doc["overloaded"]:
        print("  OVERLOADED: more requests arrive than max_num_seqs in flight can serve; the queue grows")
    ttft = "—" if doc["ttft_s"] is None else f"{doc['ttft_s'] * 1e3:.1f} ms"
    print(f"  TTFT {ttft}   TPOT {doc['tpot_s'] * 1e3:.2f} ms (median inter-token gap {doc['itl_median_s'] * 1e3:.2f}"
          f" ms)   end-to-end {doc['e2e_latency_s']:.2f} s")
    if "tpot_p99_s" in doc:
        p99 = "—" if doc["ttft_p99_s"] is None else f"{doc['ttft_p99_s'] * 1e3:,.0f} ms"
        print(f"  p99 over requests: TTFT {p99}   TPOT {doc['tpot_p99_s'] * 1e3:.2f} ms (at most "
              f"{doc['p99_slots']:,} running, as the fleet planner prices a replica)")
    print(f"  {doc['output_tokens_per_s']:,.0f} output tokens/s per replica, {doc['output_tokens_per_s_per_gpu']:,.0f}"
          f" per GPU, {doc['tokens_per_s_per_user']:.1f} per user")
    pcie = " (NCCL over PCIe)" if doc["allreduce_over_pcie"] else ""
    print(f"  decode step: compute {doc['decode_compute_s'] * 1e3:.2f} ms, memory {doc['decode_memory_s'] * 1e3:.2f}"
          f" ms, all-reduce {doc['decode_allreduce_s'] * 1e3:.2f} ms{pcie},"
          f" overhead {doc['step_overhead_s'] * 1e3:.1f} ms → {doc['bound']}-bound")
    print(f"  ridge {doc['ridge_point_flop_per_byte']:.0f} FLOP/byte; {doc['crossover_note']}; "
          f"KV cache holds {doc['kv_batch_limit']} such sequences whole, "
          f"{doc['kv_running_limit']} at their mean length")
    print(f"  {_band_line(doc)}")
    for i, line in enumerate(published_runs_lines(doc["published_runs"] or doc["family_runs"])):
        print(f"  {'  ' if i else ''}{line}")
    if "warning" in doc:
        print(f"  warning: {doc['warning']}")
    return 0


def _band_line(doc: dict) -> str:
    """The 80 % bands of the timed figures, or why there are none."""
    b = doc["band_80"]
    if b is None:
        return ("no 80 % band: these are your own efficiencies (or a calibration), and the bands describe the "
                "shipped fitted model")
    ttft = "" if b["ttft_s"] is None else f"TTFT {b['ttft_s'][0] * 1e3:,.1f}–{b['ttft_s'][1] * 1e3:,.1f} ms · "
    lo, hi = b["output_tokens_per_s"]
    return (f"80 % band from public measurements: {ttft}TPOT {b['tpot_s'][0] * 1e3:,.2f}–{b['tpot_s'][1] * 1e3:,.2f}"
            f" ms · {lo:,.0f}–{hi:,.0f} output tokens/s per replica ({b['note']})")


def cmd_knee(a: argparse.Namespace) -> int:
    doc = knee_document(roofline(a), input_len=a.input_len, output_len=a.output_len,
                        ttft_target_s=None if a.ttft_ms is None else a.ttft_ms / 1e3,
                        tpot_target_s=None if a.tpot_ms is None else a.tpot_ms / 1e3,
                        threshold=a.threshold, max_batch=a.max_batch)
    if a.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"{doc['model']} on {doc['gpu']}: {doc['message']} (KV limit {doc['kv_batch_limit']} sequences)")
    for row in doc.get("curve", []):
        print(f"  batch {row['batch_size']:6.0f}  {row['output_tokens_per_s']:10,.0f} tok/s  TTFT "
              f"{row['ttft_s'] * 1e3:8.1f} ms  TPOT {row['tpot_s'] * 1e3:7.2f} ms")
    if f := doc.get("band_80_factors"):
        print(f"  80 % bands of these figures from public measurements: {factors_text(f)}")
    return 0


def register(sub) -> None:
    """Add ``perf`` and ``knee`` to the main parser's sub-parsers."""
    pf = sub.add_parser("perf", help="step time, latency and throughput under one load")
    add_perf(pf)
    load = pf.add_mutually_exclusive_group(required=True)
    load.add_argument("--batch-size", type=int, help="a static batch of this many prompts started together")
    load.add_argument("--concurrency", type=float, help="this many requests in flight (closed loop)")
    load.add_argument("--request-rate", type=float, help="Poisson arrivals per second (open loop)")
    pf.add_argument("--max-num-seqs", type=int,
                    help="open loop: most requests in flight (default: vLLM's for the GPU)")
    pf.add_argument("--scheduler-recv-interval", type=int, default=1,
                    help="SGLang: decode steps between the scheduler's polls for new requests (default 1, as vLLM)")
    pf.set_defaults(func=cmd_perf)
    kn = sub.add_parser("knee", help="the knee of the throughput curve and the SLO batch")
    add_perf(kn)
    kn.add_argument("--ttft-ms", type=float)
    kn.add_argument("--tpot-ms", type=float)
    kn.add_argument("--threshold", type=float, default=0.15, help="knee: doubling gains less than this")
    kn.add_argument("--max-batch", type=int)
    kn.set_defaults(func=cmd_knee)
