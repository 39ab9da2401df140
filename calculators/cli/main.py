"""``llmcap``: the command-line face of the calculators. Bad input exits 2 with one clear line."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from calculators.cli.simulate import add_simulate_parser
from calculators.errors import InvalidInputError
from calculators.perf.roofline import COMPUTE_EFFICIENCY, MEMORY_EFFICIENCY, STEP_OVERHEAD_S, Efficiencies, Roofline
from calculators.report.capacity import capacity_document, capacity_text
from calculators.report.perf import knee_document, perf_document
from calculators.specs.catalog import CatalogError, get_gpu, get_model, load_gpus, load_models
from calculators.specs.hf_config import load_config_file
from calculators.specs.schema import ModelSpec
from calculators.units import GiB
from calculators.vllm.capacity import vllm_capacity
from calculators.vllm.versions import DEFAULT_VLLM_VERSION


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own usage errors: one line, exit 2
        self.exit(2, f"llmcap: error: {message}\n")


def resolve_model(name: str) -> ModelSpec:
    """A catalog id, or a path to a ``config.json`` (CLI only; the app never opens paths)."""
    if name.endswith(".json") or Path(name).is_file():
        return load_config_file(name)
    return get_model(name)


def _capacity_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="catalog id (Hugging Face repo id) or path to a config.json")
    p.add_argument("--gpu", help="GPU name, alias or driver name (e.g. H100, A100-80GB)")
    p.add_argument("--gpu-memory-gib", type=float, help="total GPU memory as the framework reports it [GiB]")
    p.add_argument("--num-gpus", type=int, help="GPUs in all (default: TP × PP)")
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    p.add_argument("--enable-expert-parallel", action="store_true")
    p.add_argument("--dtype", default="auto", choices=["auto", "bfloat16", "float16", "float32"])
    p.add_argument("--quantization", default=None)
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    p.add_argument("--max-model-len", type=int)
    p.add_argument("--max-num-batched-tokens", type=int)
    p.add_argument("--max-num-seqs", type=int)
    p.add_argument("--block-size", type=int)
    p.add_argument("--enforce-eager", action="store_true")
    p.add_argument("--kv-cache-memory", type=int, help="KV-cache bytes per GPU (skips the estimate)")
    p.add_argument("--vllm-version", default=DEFAULT_VLLM_VERSION)
    p.add_argument("--engine", default="auto", choices=["auto", "v0", "v1", "V0", "V1"])
    p.add_argument("--seq-len-mean", type=float, help="mean prompt + output tokens, for max_num_seqs advice")
    p.add_argument("--seq-len-p95", type=float, help="95th percentile of prompt + output tokens")
    p.add_argument("--calibration", help="a calibration file; recorded in the result (memory is not timed)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def cmd_capacity(a: argparse.Namespace) -> int:
    model = resolve_model(a.model)
    gpu = get_gpu(a.gpu) if a.gpu else None
    if gpu is None and a.gpu_memory_gib is None:
        raise InvalidInputError("gpu", None, "--gpu NAME or --gpu-memory-gib X")
    tp, pp = a.tensor_parallel_size, a.pipeline_parallel_size
    if a.num_gpus is not None and a.num_gpus != tp * pp:
        raise InvalidInputError("num_gpus", a.num_gpus, f"tensor_parallel_size × pipeline_parallel_size ({tp * pp})")
    result = vllm_capacity(
        model, gpu=gpu, gpu_memory_bytes=None if a.gpu_memory_gib is None else a.gpu_memory_gib * GiB,
        tensor_parallel_size=tp, pipeline_parallel_size=pp, dtype=a.dtype, quantization=a.quantization,
        kv_cache_dtype=a.kv_cache_dtype, gpu_memory_utilization=a.gpu_memory_utilization,
        max_model_len=a.max_model_len, max_num_batched_tokens=a.max_num_batched_tokens, max_num_seqs=a.max_num_seqs,
        block_size=a.block_size, enforce_eager=a.enforce_eager, kv_cache_memory_bytes=a.kv_cache_memory,
        vllm_version=a.vllm_version, engine=a.engine, expert_parallel_size=tp if a.enable_expert_parallel else None)
    cal = _load_calibration(a.calibration)
    served = a.model if not (a.model.endswith(".json") or Path(a.model).is_file()) else model.id
    doc = capacity_document(model, result, mean_len=a.seq_len_mean, p95_len=a.seq_len_p95, served_name=served)
    if cal:
        doc["calibration"] = json.loads(cal.to_json())
    print(json.dumps(doc, indent=2) if a.json else capacity_text(doc))
    return 0


def cmd_gpus(a: argparse.Namespace) -> int:
    rows = [{"id": g.id, "name": g.name, "memory_gib": round(g.memory_gib, 2),
             "memory_bandwidth_gb_per_s": g.memory_bandwidth_bytes_per_s / 1e9,
             "bf16_tflop_per_s": g.peak_flop_per_s.get("bf16", 0) / 1e12, "aliases": list(g.aliases)}
            for g in load_gpus().values()]
    if a.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(f"{r['id']:18s} {r['memory_gib']:8.2f} GiB {r['memory_bandwidth_gb_per_s']:8.0f} GB/s "
                  f"{r['bf16_tflop_per_s']:8.1f} TFLOP/s bf16   {r['name']}")
    return 0


def cmd_models(a: argparse.Namespace) -> int:
    rows = [{"id": m.id, "attention": m.attention_type, "layers": m.num_hidden_layers,
             "params_total": m.params_total_card, "params_active": m.params_active_card,
             "moe": m.is_moe, "quantization": m.quantization, "aliases": list(m.aliases)}
            for m in load_models().values()]
    if a.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(f"{r['id']:48s} {r['attention']:4s} {r['layers']:4d} layers "
                  f"{(r['params_total'] or 0) / 1e9:7.1f}B{' MoE' if r['moe'] else ''}"
                  f"{' ' + r['quantization'] if r['quantization'] else ''}")
    return 0


def _model_on_gpu_args(p: argparse.ArgumentParser) -> None:
    """The flags that pick a roofline: model, GPU, parallelism and formats (vLLM's names)."""
    p.add_argument("--model", required=True)
    p.add_argument("--gpu", required=True)
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    p.add_argument("--dtype", default="auto", choices=["auto", "bfloat16", "float16"])
    p.add_argument("--quantization", default=None)
    p.add_argument("--kv-cache-dtype", default="auto")


def _perf_args(p: argparse.ArgumentParser) -> None:
    _model_on_gpu_args(p)
    p.add_argument("--input-len", type=int, required=True)
    p.add_argument("--output-len", type=int, required=True)
    p.add_argument("--compute-efficiency", type=float, default=COMPUTE_EFFICIENCY)
    p.add_argument("--memory-efficiency", type=float, default=MEMORY_EFFICIENCY)
    p.add_argument("--step-overhead-ms", type=float, default=STEP_OVERHEAD_S * 1e3)
    p.add_argument("--calibration", help="a calibration file saved by `llmcap profile calibrate --output`")
    p.add_argument("--json", action="store_true")


def _read_files(paths: list[str]) -> list[tuple[str, bytes]]:
    from calculators.profiles import MAX_PROFILE_BYTES
    out = []
    for name in paths:
        path = Path(name)
        try:
            if path.stat().st_size > MAX_PROFILE_BYTES:
                raise InvalidInputError(name, f"{path.stat().st_size} bytes", f"at most {MAX_PROFILE_BYTES} bytes")
            out.append((path.name, path.read_bytes()))
        except OSError as exc:
            raise InvalidInputError("file", name, f"a readable file ({exc.strerror})") from None
    return out


def _load_calibration(path: str | None):
    from calculators.perf.calibration import Calibration
    if path is None:
        return None
    return Calibration.from_json(_read_files([path])[0][1])


def _roofline(a: argparse.Namespace) -> Roofline:
    from calculators.perf.calibration import calibrated
    from calculators.validation import positive_int
    for name in ("input_len", "output_len"):
        positive_int(name, getattr(a, name))
    eff = Efficiencies(compute=a.compute_efficiency, memory=a.memory_efficiency,
                       step_overhead_s=a.step_overhead_ms / 1e3)
    cal = _load_calibration(getattr(a, "calibration", None))
    r = _plain_roofline(a, eff)
    return calibrated(r, cal) if cal else r


def cmd_profile_import(a: argparse.Namespace) -> int:
    from calculators.profiles import load_many
    profile = load_many(_read_files(a.files))
    doc = profile.model_dump(mode="json")
    if a.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"{profile.source_format}: {profile.model or 'model not stated'} on {profile.gpu or 'GPU not stated'}, "
          f"{len(profile.load_points)} load point(s)")
    for lp in profile.load_points:
        load = f"rate {lp.request_rate_per_s:g}/s" if lp.request_rate_per_s is not None else f"conc {lp.concurrency}"
        tpot = lp.tpot_s.median if lp.tpot_s and lp.tpot_s.median else (lp.tpot_s.mean if lp.tpot_s else None)
        ttft = lp.ttft_s.median if lp.ttft_s else None
        print(f"  {load:14s} {lp.output_tokens_per_s or 0:10,.0f} out tok/s  TTFT p50 "
              f"{(ttft or 0) * 1e3:8.1f} ms  TPOT {(tpot or 0) * 1e3:7.2f} ms")
    return 0


def cmd_profile_calibrate(a: argparse.Namespace) -> int:
    from calculators.perf.calibration import calibrate, profile_points
    from calculators.profiles import load_many
    profile = load_many(_read_files(a.files))
    r = _plain_roofline(a, Efficiencies())
    cal = calibrate(r, profile_points(profile), source=", ".join(profile.source_files))
    if a.output:
        Path(a.output).write_text(cal.to_json())
    doc = {**json.loads(cal.to_json()), "permalink_param": cal.to_param()}
    if a.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"{cal.model} on {cal.gpu} × {cal.tensor_parallel_size}: compute efficiency {cal.compute_efficiency:.2f}, "
          f"memory efficiency {cal.memory_efficiency:.2f}, step overhead {cal.step_overhead_s * 1e3:.2f} ms "
          f"(median |error| {cal.median_abs_error:.1%} over {cal.points} points)")
    return 0


def _plain_roofline(a: argparse.Namespace, eff: Efficiencies) -> Roofline:
    return Roofline(resolve_model(a.model), get_gpu(a.gpu), tensor_parallel_size=a.tensor_parallel_size,
                    pipeline_parallel_size=a.pipeline_parallel_size, quantization=a.quantization, dtype=a.dtype,
                    kv_cache_dtype=a.kv_cache_dtype, efficiencies=eff)


def cmd_perf(a: argparse.Namespace) -> int:
    from calculators.validation import positive_int
    doc = perf_document(_roofline(a), batch_size=int(positive_int("batch_size", a.batch_size, scalar=True)),
                        input_len=a.input_len, output_len=a.output_len)
    if a.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"{doc['model']} on {doc['gpu']} × {doc['tensor_parallel_size']} ({doc['compute_dtype']}), batch "
          f"{doc['batch_size']}, {doc['input_len']} in / {doc['output_len']} out")
    print(f"  TTFT {doc['ttft_s'] * 1e3:.1f} ms   TPOT {doc['tpot_s'] * 1e3:.2f} ms   end-to-end "
          f"{doc['e2e_latency_s']:.2f} s")
    print(f"  {doc['output_tokens_per_s']:,.0f} output tokens/s per replica, {doc['output_tokens_per_s_per_gpu']:,.0f}"
          f" per GPU, {doc['tokens_per_s_per_user']:.1f} per user")
    print(f"  decode step: compute {doc['decode_compute_s'] * 1e3:.2f} ms, memory {doc['decode_memory_s'] * 1e3:.2f}"
          f" ms, all-reduce {doc['decode_allreduce_s'] * 1e3:.2f} ms, overhead {doc['step_overhead_s'] * 1e3:.1f} ms"
          f" → {doc['bound']}-bound")
    print(f"  ridge {doc['ridge_point_flop_per_byte']:.0f} FLOP/byte; {doc['crossover_note']}; "
          f"KV cache holds {doc['kv_batch_limit']} such sequences")
    if "warning" in doc:
        print(f"  warning: {doc['warning']}")
    return 0


def cmd_knee(a: argparse.Namespace) -> int:
    doc = knee_document(_roofline(a), input_len=a.input_len, output_len=a.output_len,
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
    return 0


def cmd_plan(a: argparse.Namespace) -> int:
    from calculators.planning.fleet import Workload, fleet_summary, pareto_front, plan_fleet
    model = resolve_model(a.model)
    gpus = [get_gpu(g) for g in a.gpu]
    w = Workload(request_rate_per_s=a.request_rate, input_len=a.input_len, output_len=a.output_len,
                 ttft_p99_s=None if a.ttft_p99_ms is None else a.ttft_p99_ms / 1e3,
                 tpot_p99_s=None if a.tpot_p99_ms is None else a.tpot_p99_ms / 1e3,
                 input_len_p95=a.input_len_p95, output_len_p95=a.output_len_p95)
    plans = plan_fleet(model, gpus, w, quantization=a.quantization, kv_cache_dtype=a.kv_cache_dtype,
                       utilisation_cap=a.headroom, n_plus_one=a.n_plus_one, usd_per_gpu_hour=a.usd_per_gpu_hour,
                       max_pp=a.max_pipeline_parallel_size)
    front = {(p.gpu, p.tensor_parallel_size, p.pipeline_parallel_size) for p in pareto_front(plans)}
    doc = {"model": model.id, "workload": {k: v for k, v in vars(w).items()}, "summary": fleet_summary(model, plans),
           "cost_split": "GPU time split between prefill (input tokens) and decode (output tokens) by their "
                         "shares of a request cycle",
           "layouts": [{**p.as_dict(), "pareto": (p.gpu, p.tensor_parallel_size, p.pipeline_parallel_size) in front}
                       for p in plans]}
    if a.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"{model.id}: {w.request_rate_per_s:g} req/s, {w.input_len:g} in / {w.output_len:g} out — {doc['summary']}")
    print(f"{'gpu':12s} {'TP':>3s} {'PP':>3s} {'batch':>6s} {'repl':>5s} {'GPUs':>5s} {'$/hour':>9s} {'$/1M out':>9s} "
          f"{'TTFT p99':>9s} {'TPOT':>7s} {'tok/s/GPU':>9s}  SLO")
    for p in plans:
        if not p.fits:
            print(f"{p.gpu:12s} {p.tensor_parallel_size:3d} {p.pipeline_parallel_size:3d}  {p.message}")
            continue
        cost = "—" if p.usd_per_hour is None else f"{p.usd_per_hour:.2f}"
        per_m = "—" if p.usd_per_million_output_tokens is None else f"{p.usd_per_million_output_tokens:.3f}"
        print(f"{p.gpu:12s} {p.tensor_parallel_size:3d} {p.pipeline_parallel_size:3d} {p.batch_size:6d} "
              f"{p.replicas:5d} {p.total_gpus:5d} {cost:>9s} {per_m:>9s} {p.ttft_p99_s * 1e3:7.0f}ms "
              f"{p.tpot_s * 1e3:5.1f}ms "
              f"{p.output_tokens_per_s_per_gpu:9.0f}  {'yes' if p.meets_slo else 'no: ' + p.message}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="llmcap", description="LLM serving capacity planner")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    c = sub.add_parser("capacity", help="KV cache and concurrency as vLLM reports them at start-up")
    _capacity_args(c)
    c.set_defaults(func=cmd_capacity)
    pf = sub.add_parser("perf", help="roofline step time, latency and throughput at one batch size")
    _perf_args(pf)
    pf.add_argument("--batch-size", type=int, required=True)
    pf.set_defaults(func=cmd_perf)
    kn = sub.add_parser("knee", help="the knee of the throughput curve and the SLO batch")
    _perf_args(kn)
    kn.add_argument("--ttft-ms", type=float)
    kn.add_argument("--tpot-ms", type=float)
    kn.add_argument("--threshold", type=float, default=0.15, help="knee: doubling gains less than this")
    kn.add_argument("--max-batch", type=int)
    kn.set_defaults(func=cmd_knee)
    pl = sub.add_parser("plan", help="rank layouts and size the fleet for a load under an SLO")
    pl.add_argument("--model", required=True)
    pl.add_argument("--gpu", action="append", required=True, help="repeat for several GPU types")
    pl.add_argument("--request-rate", type=float, required=True, help="requests per second")
    pl.add_argument("--input-len", type=float, required=True)
    pl.add_argument("--output-len", type=float, required=True)
    pl.add_argument("--input-len-p95", type=float)
    pl.add_argument("--output-len-p95", type=float)
    pl.add_argument("--ttft-p99-ms", type=float)
    pl.add_argument("--tpot-p99-ms", type=float)
    pl.add_argument("--headroom", type=float, default=0.8, help="utilisation cap per replica (0, 1]")
    pl.add_argument("--n-plus-one", action="store_true", help="one spare replica")
    pl.add_argument("--usd-per-gpu-hour", type=float)
    pl.add_argument("--quantization")
    pl.add_argument("--kv-cache-dtype", default="auto")
    pl.add_argument("--max-pipeline-parallel-size", type=int, default=4)
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_plan)
    pr = sub.add_parser("profile", help="import measured benchmark runs and calibrate the model on them")
    prs = pr.add_subparsers(dest="profile_command", required=True, parser_class=_Parser)
    imp = prs.add_parser("import", help="read benchmark files into one normalised profile")
    imp.add_argument("files", nargs="+")
    imp.add_argument("--json", action="store_true")
    imp.set_defaults(func=cmd_profile_import)
    cal = prs.add_parser("calibrate", help="fit the roofline's efficiencies to a measured profile")
    cal.add_argument("files", nargs="+")
    _model_on_gpu_args(cal)
    cal.add_argument("--output", "-o", help="save the calibration (JSON) here")
    cal.add_argument("--json", action="store_true")
    cal.set_defaults(func=cmd_profile_calibrate)
    add_simulate_parser(sub)
    for name, func, text in (("gpus", cmd_gpus, "list the GPU catalog"), ("models", cmd_models, "list the models")):
        s = sub.add_parser(name, help=text)
        s.add_argument("--json", action="store_true")
        s.set_defaults(func=func)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # output piped into `head`
        return 0
    except InvalidInputError as exc:
        print(f"llmcap: error: {exc}", file=sys.stderr)
        return 2
    except CatalogError as exc:
        print(f"llmcap: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
