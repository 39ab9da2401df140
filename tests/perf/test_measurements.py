"""The public measurement corpus loads, is big and varied enough, holds no held-out source, refuses bad rows
with the file, row and field named, and carries the published numbers exactly."""
from __future__ import annotations

import copy
import json
import re

import numpy as np
import pandas as pd
import pytest

from calculators.memory.kv_cache import kv_bytes_per_sequence
from calculators.memory.weights import weight_bytes_per_stage
from calculators.perf import measurements as meas
from calculators.perf.coefficients import engine_generation
from calculators.perf.comparable import comparable_rows
from calculators.perf.measurements import (
    GPUS,
    HELD_OUT,
    METRIC_KEYS,
    MeasurementError,
    load_measurements,
    load_sources,
    measurements_frame,
    parse_file,
    unit_of,
)
from calculators.specs.catalog import get_gpu, get_model, load_gpus

GOOD_ROW = {
    "source_id": "dstack",
    "source_url": "https://github.com/dstackai/benchmarks/blob/7f37e6697725e58dd09b9ef190b62ce19f01d45e/x.json",
    "published": "2025-03-18", "engine": "sglang", "engine_version": "0.4.3", "gpu": "H200 SXM 141GB",
    "gpu_count": 8, "model": "deepseek-ai/DeepSeek-R1", "precision": "fp8", "kv_cache_dtype": None,
    "tp": 8, "pp": 1, "ep": None, "dp": None, "input_len": 3200, "output_len": 800,
    "load_mode": "concurrency", "concurrency": 16, "request_rate": None, "batch_size": None, "num_prompts": 64,
    "metrics": {"ttft_median_ms": 900.0, "ttft_p99_ms": 1500.0, "output_tok_s": 1200.0}, "notes": "",
}


def _doc(**changes: object) -> dict:
    source = json.loads((meas.DATA_DIR / "dstack.json").read_text())["source"]
    row = copy.deepcopy(GOOD_ROW) | changes
    return {"source": source, "rows": [GOOD_ROW, row]}


def _find(source_id: str, url_part: str, **fields: object) -> meas.Measurement:
    hits = [m for m in load_measurements() if m.source_id == source_id and url_part in m.source_url
            and all(getattr(m, k) == v for k, v in fields.items())]
    assert len(hits) == 1, (source_id, url_part, fields, len(hits))
    return hits[0]


def test_corpus_loads_large_and_varied():
    rows, sources = load_measurements(), load_sources()
    assert len(rows) >= 600 and len(sources) >= 10
    assert {m.source_id for m in rows} == set(sources)
    assert len({m.gpu_family for m in rows}) >= 5 and len({m.engine for m in rows}) >= 5
    assert {m.load_mode for m in rows} == {"concurrency", "request_rate", "offline_max", "static_batch"}


def test_good_row_passes():
    _, rows = parse_file(_doc(), "dstack.json")
    assert rows[1].metrics["ttft_p99_ms"] == 1500.0


def test_no_held_out_source_anywhere():
    pattern = re.compile("|".join(HELD_OUT.values()), re.IGNORECASE)
    for path in meas.DATA_DIR.iterdir():
        if path.name.endswith(".json"):
            assert not pattern.search(path.read_text()), path.name
    for m in load_measurements():
        assert meas.held_out(m.source_url) is None
    for s in load_sources().values():
        assert all(meas.held_out(u) is None for u in s.urls)


@pytest.mark.parametrize("url", [
    "https://github.com/ROCm/vllm/blob/0123456789abcdef0123456789abcdef01234567/docs/dev-docker/README.md",
    "https://docs.nvidia.com/nim/benchmarking/llm/latest/performance.html",
    "https://docs.gpustack.ai/latest/performance-lab/qwen3-8b/h100/",
    "https://docs.vultr.com/inference-cookbook/x",
    "https://github.com/mlcommons/inference_results_v4.1/tree/0123456789abcdef0123456789abcdef01234567/closed",
    "https://github.com/vllm-project/perf-dashboard/blob/0123456789abcdef0123456789abcdef01234567/x.json",
    "https://github.com/vllm-project/vllm/issues/12569",
    "https://github.com/vllm-project/vllm/pull/21348#issuecomment-3131313131",
])
def test_held_out_url_is_refused(url):
    with pytest.raises(MeasurementError, match=r"measurements/dstack.json row 1: source_url: .*held-out"):
        parse_file(_doc(source_url=url), "dstack.json")


@pytest.mark.parametrize("url", [
    "https://github.com/vllm-project/vllm/issues/12568#issuecomment-2631234567",
    "https://github.com/vllm-project/vllm/issues/125690",   # not thread 12569: the number ends where it ends
    "https://github.com/sgl-project/sglang/pull/4321",
    "https://github.com/sgl-project/sglang/discussions/77",
])
def test_a_github_thread_needs_no_commit(url):
    """An issue, pull request or discussion has no file to pin; the thread (or comment) is its address."""
    _, rows = parse_file(_doc(source_url=url), "dstack.json")
    assert rows[1].source_url == url


@pytest.mark.parametrize(("changes", "field"), [
    ({"metrics": {"ttft_p99_ms": -3}}, r"metrics\.ttft_p99_ms: got -3; a positive finite number"),
    ({"metrics": {"ttft_p99_ms": 0}}, r"metrics\.ttft_p99_ms: got 0"),
    ({"metrics": {"ttft_p99_ms": float("nan")}}, r"metrics\.ttft_p99_ms: got nan"),
    ({"metrics": {"ttft": 12.0}}, r"metrics\.ttft: .*unit suffix"),
    ({"metrics": {"latency_ms": 12.0}}, r"metrics\.latency_ms: .*known metric key"),
    ({"metrics": {"ttft_median_ms": 200.0, "ttft_p99_ms": 100.0}}, r"metrics\.ttft_median_ms: got 200\.0; at most"),
    ({"metrics": {}}, r"metrics: .*non-empty"),
    ({"concurrency": None}, r"concurrency: got None; a value, because load_mode is 'concurrency'"),
    ({"load_mode": "request_rate"}, r"request_rate: got None"),
    ({"load_mode": "static_batch"}, r"batch_size: got None"),
    ({"engine": "vLLM"}, r"engine: got 'vLLM'"),
    ({"engine": "deepspeed"}, r"engine: got 'deepspeed'"),
    ({"precision": "FP8"}, r"precision: got 'FP8'"),
    ({"gpu": "H100"}, r"gpu: got 'H100'; a normalised GPU name"),
    ({"gpu_count": 0}, r"gpu_count: got 0"),
    ({"tp": 16}, r"tp: got 16; at most gpu_count"),
    ({"request_rate": -1.0}, r"request_rate: got -1\.0"),
    ({"published": "2025-13-01"}, r"published: got '2025-13-01'"),
    ({"source_url": "https://github.com/dstackai/benchmarks/blob/main/x.csv"}, r"source_url: .*40-hex commit"),
    ({"source_url": "https://github.com/sgl-project/sglang/pull/12/files"}, r"source_url: .*40-hex commit"),
    ({"source_id": "inferencex"}, r"source_id: got 'inferencex'"),
    ({"extra": {"derived_metrics": ["output_tok_s_per_gpu"]}}, r"extra\.derived_metrics"),
    ({"extra": {"lockstep": "yes"}}, r"extra\.lockstep: got 'yes'; true or false"),
    ({"extra": {"lengths_uniform_from": 1.2}}, r"extra\.lengths_uniform_from: got 1\.2; a fraction from 0 to 1"),
    ({"extra": {"lengths_uniform_from": "0.8"}}, r"extra\.lengths_uniform_from: got '0\.8'; a fraction"),
    ({"extra": {"enable_chunked_prefill": "on"}}, r"extra\.enable_chunked_prefill: got 'on'; true or false"),
    ({"colour": "red"}, r"colour: .*extra inputs"),
    ({"max_num_batched_tokens": 0}, r"max_num_batched_tokens: "),
    ({"scheduler_recv_interval": 0}, r"scheduler_recv_interval: "),
])
def test_bad_rows_are_refused_naming_file_row_and_field(changes, field):
    with pytest.raises(MeasurementError, match=r"^measurements/dstack\.json row 1: " + field):
        parse_file(_doc(**changes), "dstack.json")


def test_bad_file_shape_and_source_are_refused():
    with pytest.raises(MeasurementError, match="'source' and a list 'rows'"):
        parse_file({"rows": []}, "dstack.json")
    with pytest.raises(MeasurementError, match=r"other\.json source: source_id: got .dstack."):
        parse_file(_doc(), "other.json")


def test_metric_keys_all_carry_a_unit():
    assert all(unit_of(k) for k in METRIC_KEYS)
    assert unit_of("output_tok_s") == "_tok_s" and unit_of("ttft_p99_ms") == "_ms" and unit_of("ttft") is None


def test_gpu_names_map_to_the_catalog():
    catalog = load_gpus()
    assert all(cid in catalog for _, cid in GPUS.values() if cid is not None)
    assert all("gpu_as_published" in m.extra for m in load_measurements())


def test_flags_and_derived_metrics_are_consistent():
    rows = load_measurements()
    assert sum(bool(m.extra.get("disaggregated")) for m in rows) > 500
    assert sum(m.extra.get("spec_decoding") == "mtp" for m in rows) > 300
    lockstep = [m for m in rows if m.extra.get("lockstep")]  # fixed lengths stated in the notes
    fixed = ("random_range_ratio=1", "generated-shared-prefix", "fixed lengths")
    assert lockstep and all(m.load_mode == "concurrency" and any(f in (m.notes or "") for f in fixed)
                            for m in lockstep)
    mlperf = [m for m in rows if m.source_id == "mlperf_inference_v5.1"]
    assert mlperf and all(m.input_len is None and m.output_len is None for m in mlperf)
    assert all(m.extra["derived_metrics"] == ["output_tok_s_per_gpu"] for m in mlperf
               if "output_tok_s_per_gpu" in m.metrics)


ATTENTION_DP = re.compile(r"enable[-_]dp[-_]attention|enable_attention_dp|attention[- ]dp|dp[- ]attention", re.I)
NOT_ATTENTION_DP = re.compile(r"no dp-attention|without dp[- ]attention|enable_attention_dp[=: ]+false", re.I)


def test_rows_launched_with_attention_data_parallel_say_so_in_dp():
    """A row whose launch flags turn on attention data parallelism (SGLang's ``--enable-dp-attention`` sets
    ``dp_size = tp_size`` in 0.4.x; TensorRT-LLM's ``enable_attention_dp``) states ``dp = tp``, so the accuracy
    harness can leave it out: the product's tensor parallelism splits the attention instead."""
    flagged = []
    for m in load_measurements():
        text = f"{m.engine_version} {m.notes} {json.dumps(m.extra)}"
        if ATTENTION_DP.search(text) and not NOT_ATTENTION_DP.search(text):
            flagged.append(m)
    assert len(flagged) > 300
    assert [(m.source_id, m.source_url, m.tp, m.dp) for m in flagged if m.dp != m.tp] == []
    dstack = [m for m in flagged if m.source_id == "dstack"]
    assert len(dstack) == 24 and all(m.engine == "sglang" and m.dp == 8 for m in dstack)


def test_no_row_runs_an_engine_generation_released_after_it_was_published():
    """The fit prices each engine generation with its own factor, so a row must not land in one its date rules out:
    vLLM's V1 engine had its alpha on 2025-01-27 (https://blog.vllm.ai/2025/01/27/v1-alpha-release.html), so a vLLM
    run published before then ran V0; SGLang 0.4.0 was announced on 2024-12-04
    (https://lmsys.org/blog/2024-12-04-sglang-v0-4/), so a run published in 2024 ran 0.4 or older, not 0.5."""
    rows = [(m.source_id, m.published, m.engine_version, engine_generation(m.engine, m.engine_version))
            for m in load_measurements()]
    early_vllm = [r for r in rows if r[3].startswith("vllm") and r[1] < "2025-01-27"]
    early_sglang = [r for r in rows if r[3].startswith("sglang") and r[1] < "2025"]
    assert len(early_vllm) > 150 and len(early_sglang) > 20  # dstack's, Oracle's, DataCrunch's, SGLang's own
    assert [r for r in early_vllm if r[3] != "vllm-v0"] == []
    assert [r for r in early_sglang if r[3] != "sglang-old"] == []


def test_spot_check_trtllm_perf_overview():
    # https://github.com/NVIDIA/TensorRT-LLM/blob/00f37686aa854010d68bcbd0f4ab000221541ca6/docs/source/performance/perf-overview.md
    # table "Llama 3.1 8B", H200 TP1 (FP8), ISL/OSL 128/128: 27,911 total output tokens/s.
    m = _find("trtllm_perf_overview", "00f37686", gpu="H200 SXM 141GB", model="nvidia/Llama-3.1-8B-Instruct-FP8",
              input_len=128, output_len=128)
    assert m.metrics["output_tok_s"] == 27911 and m.load_mode == "offline_max" and m.tp == 1


def test_spot_check_mlperf():
    # https://github.com/mlcommons/inference_results_v5.1/tree/965182b03376a00fcae415c54e560e1c83937932/closed/AMD/results/8xMI300X_2xEPYC_9575F/llama2-70b-99/Interactive
    # ID 5.1-0001 (AMD): 8840.42 tokens/s at 29.5 target QPS, TTFT p99 435.9761 ms, TPOT p99 39.507635 ms.
    m = _find("mlperf_inference_v5.1", "closed/AMD/results/8xMI300X_2xEPYC_9575F/llama2-70b-99/Interactive")
    assert (m.gpu, m.gpu_count, m.request_rate) == ("MI300X", 8, 29.5)
    assert m.metrics["output_tok_s"] == 8840.42
    assert m.metrics["ttft_p99_ms"] == 435.9761 and m.metrics["tpot_p99_ms"] == 39.507635


def test_spot_check_datacrunch():
    # https://github.com/datacrunch-research/blogs/blob/60e1e7adb3482b2397231e04cbbccaf38040c77c/deepseek-v3-h200-deployment/deepseek-v3-h200-deployment.md
    # DeepSeek-V3 BF16, 8x H200, random 1024/1024 at 1 req/s: median E2E 214924.09 ms, TTFT 587.15 ms, 639.99 tok/s.
    m = _find("datacrunch", "deepseek-v3-h200-deployment", precision="bf16", gpu_count=8, request_rate=1.0)
    assert m.metrics == {"e2el_median_ms": 214924.09, "ttft_median_ms": 587.15, "tpot_median_ms": 209.48,
                         "itl_median_ms": 159.64, "output_tok_s": 639.99}


def test_spot_check_sglang_cookbook():
    # https://github.com/sgl-project/sgl-cookbook/blob/7b5bd9c05e3d86da5161ac2be9b91c19a34bf49d/docs/autoregressive/DeepSeek/DeepSeek-R1.md
    # §5.1 on 8x B200, SGLang 0.5.6.post1, chat 1K/1K at --max-concurrency 16: 80 requests, 39668 input and
    # 40725 generated tokens, median TTFT 131.71 ms, median TPOT 17.46 ms, output 795.30 tok/s.
    m = _find("sglang_cookbook", "DeepSeek-R1.md", concurrency=16, input_len=1000, output_len=1000)
    assert (m.gpu, m.gpu_count, m.tp, m.engine_version) == ("B200", 8, 8, "0.5.6.post1")
    assert {k: m.metrics[k] for k in ("total_input_tokens", "total_output_tokens", "ttft_median_ms",
                                      "tpot_median_ms", "output_tok_s")} == {
        "total_input_tokens": 39668, "total_output_tokens": 40725, "ttft_median_ms": 131.71,
        "tpot_median_ms": 17.46, "output_tok_s": 795.3}


def test_spot_check_l40s_study():
    # https://github.com/TechBroMoho/quantized-llm-serving/blob/1b5b81838b1b94858ab793dafb7741d3e755ba5a/results/perf/phase6/results_table.md
    # bf16, c128 (Qwen3-8B on one L40S, vLLM 0.10.2, 512 in / 256 out): 1943.7 output tok/s, TTFT p50 166.3 ms,
    # TPOT p50 65.5 ms; the point's summary.json (b158aeb) carries them unrounded.
    m = _find("techbromoho_quantized_llm_serving", "bf16-20260924T003034Z/c128/", precision="bf16")
    assert (m.gpu, m.tp, m.concurrency, m.input_len, m.output_len, m.engine_version) == ("L40S", 1, 128, 512, 256,
                                                                                           "0.10.2")
    assert round(m.metrics["output_tok_s"], 1) == 1943.7
    assert round(m.metrics["ttft_median_ms"], 1) == 166.3 and round(m.metrics["tpot_median_ms"], 1) == 65.5


def test_spot_check_inferencex_engine_settings():
    # https://github.com/SemiAnalysisAI/InferenceX/blob/4f630348d98c7c163f9b0fd76c5814d8db43560e/benchmarks/single_node/dsr1_fp8_b200.sh
    # SGLang on 8 x B200 (FP8): --chunked-prefill-size 32768, --scheduler-recv-interval 30 at concurrency >= 16,
    # else 10; dsr1_fp8_h200.sh: --chunked-prefill-size 32768 and no recv interval (every step).
    rows = [m for m in load_measurements() if m.source_id == "inferencex" and m.engine == "sglang"
            and m.gpu == "B200" and m.precision == "fp8" and m.tp == 8 and not m.extra.get("disaggregated")]
    assert rows and all(m.max_num_batched_tokens == 32768 for m in rows)
    assert {m.scheduler_recv_interval for m in rows if m.concurrency and m.concurrency >= 16} == {30}
    assert {m.scheduler_recv_interval for m in rows if m.concurrency and m.concurrency < 16} == {10}
    h200 = [m for m in load_measurements() if m.source_id == "inferencex" and m.engine == "sglang"
            and m.gpu == "H200 SXM 141GB" and not m.extra.get("disaggregated")]
    assert {(m.max_num_batched_tokens, m.scheduler_recv_interval) for m in h200} == {(32768, None)}


def _inferencex_single_node(engine: str, gpu: str, precision: str) -> list:
    return [m for m in load_measurements() if m.source_id == "inferencex" and m.engine == engine and m.gpu == gpu
            and m.precision == precision and not m.extra.get("disaggregated") and not m.extra.get("spec_decoding")]


def test_spot_check_inferencex_kv_cache_dtype_follows_the_scripts_history():
    # https://github.com/SemiAnalysisAI/InferenceX/pull/544 (merged 2026-01-23 UTC) added --kv-cache-dtype fp8_e4m3
    # to dsr1_fp8_mi300x.sh; dsr1_fp8_h200.sh never passes one (16-bit KV); dsr1_fp8_h200_trt.sh writes
    # kv_cache_config: dtype: fp8.
    mi300x = _inferencex_single_node("sglang", "MI300X", "fp8")
    assert {m.kv_cache_dtype for m in mi300x if m.published < "2026-01-23"} == {"auto"}
    assert {m.kv_cache_dtype for m in mi300x if m.published >= "2026-01-23"} == {"fp8"}
    assert {m.kv_cache_dtype for m in _inferencex_single_node("sglang", "H200 SXM 141GB", "fp8")} == {"auto"}
    assert {m.kv_cache_dtype for m in _inferencex_single_node("trtllm", "H200 SXM 141GB", "fp8")} == {"fp8"}


def test_spot_check_inferencex_trtllm_token_budget():
    # dsr1_fp8_h200_trt.sh: MAX_NUM_TOKENS = (CONC + ISL + 64 + 63) / 64 * 64, floored at 8192 from
    # https://github.com/SemiAnalysisAI/InferenceX/pull/258 (2026-01-21). 1k prompts at 4 in flight before it:
    # (4 + 1024 + 64 + 63) // 64 * 64 = 1152; 8k prompts at 16 in flight: (16 + 8192 + 127) // 64 * 64 = 8320.
    rows = _inferencex_single_node("trtllm", "H200 SXM 141GB", "fp8")
    early = {(m.input_len, m.concurrency): m.max_num_batched_tokens for m in rows
             if m.published < "2026-01-21"}
    assert early[(1024, 4)] == 1152 and early[(8192, 16)] == 8320
    assert {m.max_num_batched_tokens for m in rows if m.published >= "2026-01-21"
            and m.input_len == 1024} == {8192}


def test_frame_is_tidy():
    frame = measurements_frame()
    assert len(frame) == len(load_measurements())
    assert {"gpu_family", "disaggregated", "output_tok_s_per_gpu", "ttft_p99_ms"} <= set(frame.columns)
    assert frame["ttft_p99_ms"].dropna().gt(0).all()


def test_readme_counts_match_the_files():
    text = (meas.DATA_DIR / "README.md").read_text()
    counts = {m.source_id: 0 for m in load_measurements()}
    for m in load_measurements():
        counts[m.source_id] += 1
    for sid, n in counts.items():
        assert f"| `{sid}` | {n} |" in text, sid
    assert f"{len(load_measurements()):,} rows from {len(counts)} sources" in text


def test_spot_check_tensorrt_llm_70b_fp4_rows_run_the_checkpoints_fp8_cache():
    # TensorRT-LLM's accuracy test of nvidia/Llama-3.3-70B-Instruct-FP4 (test_nvfp4_tp4) sets no KV dtype, and the
    # harness holds it to the references/mmlu.yaml entry with kv_cache_quant_algo FP8 (at 000a01de), matched on the
    # checkpoint's own config: trtllm-bench at its defaults ran that checkpoint with an FP8 cache.
    rows = [m for m in load_measurements()
            if m.source_id == "trtllm_perf_overview" and m.model == "nvidia/Llama-3.3-70B-Instruct-FP4"]
    assert len(rows) == 30
    assert {m.kv_cache_dtype for m in rows} == {"fp8"}
    assert all("kv_cache_quant_algo FP8" in m.notes for m in rows)


def _kv_read_per_token(row: dict) -> float:
    """KV bytes [B] one GPU reads per output token of ``row``, averaged over its decode: the step at context c reads
    the c tokens each layer keeps (windowed layers at most their window), for c = I … I + O − 1."""
    context = row["input_len"] + np.arange(row["output_len"])
    per_sequence = kv_bytes_per_sequence(get_model(row["model_id"]), context, tensor_parallel_size=row["tp"],
                                         pipeline_parallel_size=row["pp"], kv_cache_dtype=row["kv_dtype"])
    return float(np.mean(per_sequence))


def test_no_throughput_beats_the_memory_bandwidth_its_kv_cache_needs():
    # Each output token makes its GPU read the KV cache of its sequence once, so no engine can generate more tokens/s
    # per GPU than HBM bandwidth / (KV bytes read per token × GPUs it is split over), whatever its batch (weights
    # and activations only lower it). A row above that bound states a KV dtype wider than the run used.
    # Worked by hand: Llama-3.1-8B with a 16-bit cache keeps 2 · 32 layers · 8 heads · 128 · 2 B = 131,072 B a
    # token; 128 in / 4,096 out averages 2,175.5 tokens of context, so an H100 (3,350 GB/s) tops out at
    # 3.35e12 / (131,072 · 2,175.5) = 11,748 tokens/s, below the 14,325 TensorRT-LLM publishes for its FP8
    # checkpoint: that checkpoint's cache is FP8 (65,536 B a token; bound 23,497).
    rows = comparable_rows().dropna(subset=["measured_throughput"])
    over = []
    for row in rows.to_dict("records"):
        bound = get_gpu(row["catalog_gpu"]).memory_bandwidth_bytes_per_s / (_kv_read_per_token(row) * row["tp"])
        if row["measured_throughput"] > bound:
            over.append((row["source_id"], row["source_row"], row["model"], row["kv_dtype"], round(bound)))
    assert not over, over
    worked = {"model_id": "meta-llama/Llama-3.1-8B-Instruct", "tp": 1, "pp": 1, "kv_dtype": "auto",
              "input_len": 128, "output_len": 4096}
    assert _kv_read_per_token(worked) == pytest.approx(131_072 * 2_175.5)
    assert get_gpu("H100-SXM").memory_bandwidth_bytes_per_s / _kv_read_per_token(worked) == pytest.approx(11_748, abs=1)


def test_every_tensorrt_llm_static_batch_fits_in_its_gpus():
    # TensorRT-LLM's static-batch benchmark (gptSessionBenchmark) holds every sequence of the batch at once, so
    # weights + batch · (I + O) · KV bytes per token must fit in one GPU's memory. Worked by hand: the H200 launch
    # post's Llama-2-13B batch of 1,024 at 128 + 128 tokens needs 1,024 · 256 · 819,200 B = 214.7 GB of 16-bit
    # cache, more than the H200's 141 GB; with FP8 (409,600 B a token) it is 107.4 GB beside 13 GB of weights.
    rows = comparable_rows()
    rows = rows[(rows["engine"] == "trtllm") & (rows["load"] == "static_batch")].drop_duplicates("row_id")
    over = []
    for row in rows.to_dict("records"):
        model = get_model(row["model_id"])
        quantization = None if pd.isna(row["quantization"]) else row["quantization"]
        weights = weight_bytes_per_stage(model, tensor_parallel_size=row["tp"], pipeline_parallel_size=row["pp"],
                                         quantization=quantization).max()
        kv = kv_bytes_per_sequence(model, row["input_len"] + row["output_len"], tensor_parallel_size=row["tp"],
                                   pipeline_parallel_size=row["pp"], kv_cache_dtype=row["kv_dtype"])
        if weights + row["batch"] * float(kv) > get_gpu(row["catalog_gpu"]).memory_bytes:
            over.append((row["source_id"], row["source_row"], row["model"], row["batch"], row["kv_dtype"]))
    assert not over, over
    llama_13b = get_model("meta-llama/Llama-2-13b-hf")
    assert float(kv_bytes_per_sequence(llama_13b, 256)) * 1_024 == 1_024 * 256 * 819_200  # 214.7 GB
    assert float(kv_bytes_per_sequence(llama_13b, 256, kv_cache_dtype="fp8")) * 1_024 == 1_024 * 256 * 409_600
