"""Measured-profile importers: every real fixture, unit conversions, combining a sweep, and bad files.

Expected numbers were read by hand from the fixture files in tests/fixtures/profiles/.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from calculators.errors import InvalidInputError
from calculators.profiles import (
    MAX_PROFILE_BYTES,
    Profile,
    combine,
    detect_and_load,
    detect_format,
    load_many,
)

FIX = Path(__file__).parents[1] / "fixtures" / "profiles"
VLLM = sorted(FIX.glob("vllm-benchmark_serving-*.json"))
NIGHTLY = FIX / "vllm-nightly-benchmark_results-v0.8.3_llama-3.3-70b_8xA100-40GB_tp8_qps-sweep.json"
COMMANDS = FIX / "vllm-nightly-commands-v0.8.3_llama-3.3-70b_tp8_qps-04.json"
IMX = FIX / "legacy-benchmark_serving-format_handmade_gpt-oss-120b_h200_tp8_isl1024_osl1024_conc64.json"
IMX_AGG = FIX / "inferencemax-agg-format_handmade_gpt-oss-120b_h200_tp8_isl1024_osl1024_conc64.json"
GUIDE = FIX / "guidellm-v0.3.0_benchmarks_stripped.json"
AIP = "aiperf-0.1.x-dev_gpt-oss-20b_conc100_profile_export"
AIP_JSON, AIP_CSV, AIP_JSONL = FIX / f"{AIP}_aiperf.json", FIX / f"{AIP}_aiperf.csv", FIX / f"{AIP}.jsonl"
GENAI = FIX / "genai-perf-0.0.9dev_gpt2_analyze_export_genai_perf.csv"
AIP_SWEEP = FIX / "aiperf-0.11-format_handmade_conc-sweep_3-trials_profile_export_aiperf_sweep.csv"
LLMP = "llmperf-results-2023-08-31_together-llama-2-70b-chat_550-150_conc5"
LLMP_SUM, LLMP_IND = FIX / f"{LLMP}_summary.json", FIX / f"{LLMP}_individual_responses.json"
MEASURED = [FIX / f"llmcap-measure_decode_llama-3.1-8b_h200_pytorch-{m}.csv" for m in ("eager", "cuda-graphs")]

EXPECTED_FORMAT = {
    **{p.name: "vllm-serve" for p in VLLM},
    NIGHTLY.name: "vllm-nightly-summary",
    COMMANDS.name: "vllm-nightly-commands",
    IMX.name: "vllm-serve",
    IMX_AGG.name: "inferencemax-agg",
    GUIDE.name: "guidellm",
    AIP_JSON.name: "aiperf-json",
    AIP_CSV.name: "aiperf-csv",
    AIP_JSONL.name: "aiperf-jsonl",
    GENAI.name: "genai-perf-analyze-csv",
    AIP_SWEEP.name: "aiperf-sweep-csv",
    LLMP_SUM.name: "llmperf-summary",
    LLMP_IND.name: "llmperf-individual",
    **{p.name: "generic-csv" for p in MEASURED},   # scripts/measure_decode.py on an H200
}


def load(path: Path) -> Profile:
    return detect_and_load(path.name, path.read_bytes())


def approx(x: float, rel: float = 1e-9):
    return pytest.approx(x, rel=rel)


# --- every fixture ---------------------------------------------------------------------------------------------------


def test_every_fixture_is_covered():
    files = {p.name for p in FIX.iterdir() if p.name != "README.md"}
    assert files == set(EXPECTED_FORMAT)


@pytest.mark.parametrize("name", sorted(EXPECTED_FORMAT))
def test_detection_picks_the_format(name):
    assert detect_format(name, (FIX / name).read_bytes()) == EXPECTED_FORMAT[name]


@pytest.mark.parametrize("name", sorted(EXPECTED_FORMAT))
def test_detection_ignores_the_file_name(name):
    assert detect_format("upload.bin", (FIX / name).read_bytes()) == EXPECTED_FORMAT[name]


@pytest.mark.parametrize("name", sorted(n for n, f in EXPECTED_FORMAT.items() if f != "vllm-nightly-commands"))
def test_every_measurement_fixture_imports(name):
    p = detect_and_load(name, (FIX / name).read_bytes())
    assert p.load_points and p.source_files == (name,)
    assert p.source_format == EXPECTED_FORMAT[name]
    with pytest.raises(ValidationError):  # frozen
        p.model = "x"  # type: ignore[misc]


def test_commands_sidecar_alone_is_a_clear_error():
    with pytest.raises(InvalidInputError, match="sidecar"):
        load(COMMANDS)


# --- vLLM serving --------------------------------------------------------------------------------------------------


def test_vllm_qps01_values_in_seconds():
    p = load(VLLM[0])
    assert p.model == "meta-llama/Llama-3.3-70B-Instruct" and p.engine == "vllm"
    (lp,) = p.load_points
    assert lp.request_rate_per_s == 1.0 and lp.concurrency is None
    assert lp.duration_s == approx(205.21942114800004)
    assert lp.completed_requests == 200 and lp.failed_requests == 0
    assert lp.request_throughput_per_s == approx(0.9745666315653629)
    assert lp.output_tokens_per_s == approx(208.17717816867716)
    assert lp.total_tokens_per_s == approx(416.0473678484113)
    assert lp.ttft_s.mean == approx(0.06525777634499718)  # mean_ttft_ms 65.2577...
    assert lp.ttft_s.median == approx(0.05637217849994158)
    assert lp.ttft_s.p99 == approx(0.14380068917976584)
    assert lp.tpot_s.mean == approx(0.024564414268982127)
    assert lp.tpot_s.p99 == approx(0.028033566246584865)
    assert lp.itl_s.p99 == approx(0.04295781370012719)
    assert lp.mean_input_tokens == approx(42659 / 200) and lp.mean_output_tokens == approx(42722 / 200)


def test_vllm_missing_percentiles_come_from_per_request_arrays():
    raw = json.loads(VLLM[0].read_bytes())
    lp = load(VLLM[0]).load_points[0]
    import numpy as np

    assert lp.ttft_s.p90 == approx(float(np.percentile(raw["ttfts"], 90)))
    # recomputed TPOT statistics agree with the reported ones (vLLM's definition)
    olen = np.array(raw["output_lens"])
    dec = np.array([sum(g) for g in raw["itls"]])
    tpot = dec[olen > 1] / (olen[olen > 1] - 1)
    assert float(np.percentile(tpot, 99)) == pytest.approx(raw["p99_tpot_ms"] / 1000, rel=1e-5)
    assert lp.tpot_s.p90 == approx(float(np.percentile(tpot, 90)))
    assert lp.ttft_s.median <= lp.ttft_s.p90 <= lp.ttft_s.p95 <= lp.ttft_s.p99
    assert any("per-request arrays" in n for n in load(VLLM[0]).notes)


def test_vllm_qps_inf_and_legacy_goodput_key():
    lp = load(VLLM[3]).load_points[0]
    assert math.isinf(lp.request_rate_per_s)
    assert lp.ttft_s.mean == approx(0.36036056903502185)
    imx = load(IMX).load_points[0]  # "request_goodput:": null, best_of, max_concurrency 64
    assert imx.concurrency == 64 and math.isinf(imx.request_rate_per_s)
    assert imx.request_goodput_per_s is None
    assert imx.e2e_latency_s.p99 == approx(8.2)
    assert imx.tpot_s.median == approx(0.0074)


def test_current_goodput_spelling_and_jsonl(tmp_path):
    rec = json.loads(IMX.read_bytes())
    rec.pop("request_goodput:")
    rec["request_goodput"] = 8.5
    lines = [dict(rec, max_concurrency=c) for c in (128, 64)]
    data = "\n".join(json.dumps(r) for r in lines).encode()
    p = detect_and_load("appended.jsonl", data)
    assert p.source_format == "vllm-serve"
    assert [lp.concurrency for lp in p.load_points] == [64, 128]
    assert p.load_points[0].request_goodput_per_s == 8.5


def test_combine_the_four_vllm_sweep_files():
    p = combine(load(f) for f in reversed(VLLM))
    assert len(p.load_points) == 4
    assert [lp.request_rate_per_s for lp in p.load_points] == [1.0, 4.0, 16.0, math.inf]
    assert [lp.output_tokens_per_s for lp in p.load_points] == [
        approx(208.17717816867716), approx(673.9184869835061), approx(1354.3654962178466), approx(1780.3566341089636)]
    assert p.model == "meta-llama/Llama-3.3-70B-Instruct"
    assert set(p.source_files) == {f.name for f in VLLM}


def test_combine_refuses_different_models():
    with pytest.raises(InvalidInputError, match="model"):
        combine([load(VLLM[0]), load(IMX)])
    with pytest.raises(InvalidInputError, match="source_files"):
        combine([load(VLLM[0]), load(VLLM[0])])
    with pytest.raises(InvalidInputError, match="empty sweep"):
        combine([])


def test_nightly_summary_with_commands_sidecar():
    p = load(NIGHTLY)
    assert p.tensor_parallel_size == 8 and p.gpu == "1xStandard_ND96asr_v4 x 1" and p.model is None
    assert [lp.request_rate_per_s for lp in p.load_points] == [1.0, 4.0, 16.0, math.inf]
    lp = p.load_points[1]
    assert lp.label == "tp8_pp1_qps_04" and lp.completed_requests == 200
    assert lp.request_throughput_per_s == approx(3.1751913448302957)
    assert lp.ttft_s.p99 == approx(0.06756385031015722)  # P99 TTFT (ms) 67.5638...
    assert lp.itl_s.median == approx(0.02719267299994499)
    both = load_many({NIGHTLY.name: NIGHTLY.read_bytes(), COMMANDS.name: COMMANDS.read_bytes()})
    assert both.model == "meta-llama/Llama-3.3-70B-Instruct" and len(both.load_points) == 4


def test_inferencemax_aggregate_seconds_and_per_gpu():
    p = load(IMX_AGG)
    assert (p.model, p.gpu, p.tensor_parallel_size, p.engine, p.engine_version) == (
        "openai/gpt-oss-120b", "h200", 8, "vllm", "0.13.0")
    lp = p.load_points[0]
    assert lp.concurrency == 64
    assert lp.output_tokens_per_s == approx(1024.0 * 8)  # = the serving file's 8,192
    assert lp.output_tokens_per_s == pytest.approx(load(IMX).load_points[0].output_tokens_per_s, rel=1e-12)
    assert lp.ttft_s.mean == approx(0.3)  # already seconds
    assert lp.mean_input_tokens == 1024 and lp.mean_output_tokens == 1024


def test_vllm_throughput_counts_input_plus_output():
    data = json.dumps({"elapsed_time": 100.0, "num_requests": 1000, "total_num_tokens": 1_200_000,
                       "requests_per_second": 10.0, "tokens_per_second": 12000.0}).encode()
    p = detect_and_load("tput.json", data)
    assert p.source_format == "vllm-throughput"
    lp = p.load_points[0]
    assert lp.total_tokens_per_s == 12000.0 and lp.output_tokens_per_s is None
    assert lp.request_throughput_per_s == 10.0 and lp.duration_s == 100.0


def test_vllm_latency():
    data = json.dumps({"avg_latency": 2.0, "latencies": [1.9, 2.0, 2.1],
                       "percentiles": {"10": 1.9, "50": 2.0, "90": 2.08, "99": 2.1}}).encode()
    lp = detect_and_load("lat.json", data).load_points[0]
    assert lp.e2e_latency_s.median == 2.0 and lp.e2e_latency_s.p99 == 2.1


# --- GuideLLM ------------------------------------------------------------------------------------------------------


def test_guidellm_v03_itl_is_tpot():
    p = load(GUIDE)
    assert p.model == "example_model"
    (lp,) = p.load_points
    assert lp.label == "synchronous" and lp.concurrency == 1
    assert lp.measured_concurrency == approx(0.9977627456483604)
    assert lp.request_throughput_per_s == approx(1.5481806532737452)
    assert lp.output_tokens_per_s == approx(198.13346751788123)
    # inter_token_latency_ms mean 4.9416 → TPOT; GuideLLM's own "TPOT" (4.903) is not used
    assert lp.tpot_s.mean == approx(0.004941609043733832)
    assert lp.tpot_s.median == approx(0.0049241227427805505)
    assert lp.tpot_s.p99 == approx(0.005258346167136365)
    assert lp.itl_s.empty
    assert lp.ttft_s.p95 == approx(0.01900935173034668)
    assert lp.e2e_latency_s.p90 == approx(0.6488735675811768)  # request_latency is already seconds
    assert lp.completed_requests == 46 and lp.failed_requests == 0
    assert lp.mean_input_tokens == approx(257.1086956521739)


def test_guidellm_v04_layout_rates_sorted(tmp_path):
    bench = json.loads(GUIDE.read_bytes())["benchmarks"][0]
    b1 = {k: v for k, v in bench.items() if k not in ("args", "request_totals", "worker")}
    b1["config"] = {"strategy": {"type_": "constant", "rate": 5.0}}
    b2 = dict(b1, config={"strategy": {"type_": "constant", "rate": 2.0}})
    data = json.dumps({"metadata": {"version": 1, "guidellm_version": "0.5.0"}, "args": {"model": "m"},
                       "benchmarks": [b1, b2]}).encode()
    p = detect_and_load("g.json", data)
    assert p.model == "m" and [lp.request_rate_per_s for lp in p.load_points] == [2.0, 5.0]


# --- AIPerf / GenAI-Perf -------------------------------------------------------------------------------------------


def test_aiperf_legacy_json_ms_to_s():
    p = load(AIP_JSON)
    assert p.model == "openai/gpt-oss-20b"
    lp = p.load_points[0]
    assert lp.concurrency == 100
    assert lp.ttft_s.mean == approx(2.343219436988764)  # ttft avg 2343.219 ms
    assert lp.ttft_s.median == approx(2.369317693)
    assert lp.tpot_s.p99 == approx(0.03373224787406911)  # inter_token_latency → TPOT
    assert lp.itl_s.p99 == approx(0.14053429476)  # inter_chunk_latency → ITL
    assert lp.e2e_latency_s.p95 == approx(9.288605606)
    assert lp.completed_requests == 89 and lp.failed_requests == 11
    assert lp.request_throughput_per_s == approx(9.551622221540914)
    assert lp.output_tokens_per_s == approx(2320.7222350404572)
    assert lp.mean_output_tokens == approx(242.96629213483146)
    assert lp.duration_s == approx(9.317788951)


def test_aiperf_csv():
    lp = load(AIP_CSV).load_points[0]
    assert lp.ttft_s.mean == approx(2.34322) and lp.ttft_s.p99 == approx(3.83339)
    assert lp.tpot_s.median == approx(0.02762) and lp.itl_s.p95 == approx(0.03166)
    assert lp.e2e_latency_s.mean == approx(9.05965)
    assert lp.completed_requests == 89 and lp.failed_requests == 11
    assert lp.request_throughput_per_s == approx(9.55) and lp.output_tokens_per_s == approx(2320.72)
    assert lp.duration_s == approx(9.32) and lp.mean_input_tokens == 550


def test_genai_perf_csv_thousands_separators(tmp_path):
    text = (b'Metric,avg,min,max,p99,p95,p90,p75,p50,p25,p10,p5,p1\n'
            b'Time To First Token (ms),"1,234.50",1.00,"2,000.00","1,900.00","1,800.00","1,700.00",'
            b'1.0,"1,200.00",1.0,1.0,1.0,1.0\n\nMetric,Value\n'
            b'Output Token Throughput (tokens/sec),"1,500.25"\nRequest Throughput (per sec),3.50\n')
    p = detect_and_load("profile_export_genai_perf.csv", text)
    assert p.source_format == "genai-perf-csv"
    lp = p.load_points[0]
    assert lp.ttft_s.mean == approx(1.2345) and lp.ttft_s.p99 == approx(1.9)
    assert lp.output_tokens_per_s == approx(1500.25) and lp.request_throughput_per_s == 3.5


def test_aiperf_jsonl_aggregated_with_numpy():
    import numpy as np

    lp = load(AIP_JSONL).load_points[0]
    recs = [json.loads(ln) for ln in AIP_JSONL.read_text().splitlines()]
    ok = [r for r in recs if r["error"] is None]
    assert lp.completed_requests == 89 and lp.failed_requests == 11
    ttft = [r["metrics"]["ttft"]["value"] / 1000 for r in ok]
    assert lp.ttft_s.p95 == approx(float(np.percentile(ttft, 95)))
    # agrees with AIPerf's own summary of the same run
    assert lp.ttft_s.p99 == approx(3.83338940004, rel=1e-9)
    assert lp.itl_s.p99 == approx(0.14053429476, rel=1e-6)
    assert lp.request_throughput_per_s == approx(9.5516, rel=1e-4)
    assert lp.output_tokens_per_s == approx(2320.72, rel=1e-5)


def test_genai_perf_analyze_sweep():
    p = load(GENAI)
    assert len(p.load_points) == 5
    by_label = {lp.label: lp for lp in p.load_points}
    lp = by_label["gpt2_run_config_3"]
    assert lp.concurrency == 32 and lp.mean_input_tokens == 200
    assert lp.ttft_s.p99 == approx(0.18443) and lp.tpot_s.p99 == approx(0.0309)
    assert lp.e2e_latency_s.p99 == approx(3.40624)
    assert lp.output_tokens_per_s == approx(1134.92) and lp.request_throughput_per_s == approx(10.12)


# --- LLMPerf -------------------------------------------------------------------------------------------------------


def test_llmperf_summary_tpot_excludes_ttft():
    p = load(LLMP_SUM)
    assert p.model == "together_ai/togethercomputer/llama-2-70b-chat"
    lp = p.load_points[0]
    assert lp.concurrency == 5 and lp.completed_requests == 150 and lp.failed_requests == 0
    assert lp.ttft_s.mean == approx(0.622329721273333) and lp.ttft_s.p99 == approx(0.8708675934700044)
    assert lp.e2e_latency_s.median == approx(2.4384245429999964)
    assert lp.request_throughput_per_s == approx(81.89078137274691 / 60)
    assert lp.output_tokens_per_s == approx(216.45553311958628)
    assert lp.tpot_s.mean == approx((2.4906428459 - 0.622329721273333) / (158.59333333333333 - 1))
    assert lp.tpot_s.mean < 0.01578128072700586  # LLMPerf's ITL (includes TTFT) is larger
    assert lp.tpot_s.p99 is None and lp.itl_s.empty
    assert lp.mean_input_tokens == 550  # "550" strings in min/max are tolerated


def test_llmperf_individual():
    import numpy as np

    recs = json.loads(LLMP_IND.read_bytes())
    lp = load(LLMP_IND).load_points[0]
    assert lp.completed_requests == 150
    r0 = recs[0]
    tpots = [(r["end_to_end_latency_s"] - r["ttft_s"]) / (r["number_output_tokens"] - 1) for r in recs]
    assert tpots[0] == approx((2.5297277810000196 - 0.7781751429999986) / 156)
    assert lp.tpot_s.median == approx(float(np.median(tpots)))
    assert lp.ttft_s.mean == approx(np.mean([r["ttft_s"] for r in recs]))
    assert lp.ttft_s.p99 == approx(0.8708675934700044, rel=1e-9)  # same as the summary's quantile
    assert r0["number_input_tokens"] == 550 and lp.mean_input_tokens == 550


def test_llmperf_nan_is_missing():
    d = json.loads(LLMP_SUM.read_bytes())
    text = json.dumps(d).replace('"results_ttft_s_mean": 0.622329721273333', '"results_ttft_s_mean": NaN')
    lp = detect_and_load("s.json", text.encode()).load_points[0]
    assert lp.ttft_s.mean is None and lp.tpot_s.mean is None


# --- generic format ------------------------------------------------------------------------------------------------

GENERIC = ("model,gpu,tensor_parallel_size,concurrency,request_throughput_per_s,output_tokens_per_s,"
           "ttft_ms_p50,ttft_s_p99,tpot_s_p50,tpot_s_p99,label\n"
           "m,H100,2,16,5.9,1510,40.2,0.1207,0.0104,0.013,high\n"
           "m,H100,2,1,0.45,115.2,21.0,0.0355,0.0081,0.0089,=HYPERLINK(\"x\")\n")


def test_generic_csv():
    p = detect_and_load("mine.csv", GENERIC.encode())
    assert p.source_format == "generic-csv" and (p.model, p.gpu, p.tensor_parallel_size) == ("m", "H100", 2)
    assert [lp.concurrency for lp in p.load_points] == [1, 16]
    lo = p.load_points[0]
    assert lo.ttft_s.median == approx(0.021) and lo.tpot_s.p99 == 0.0089
    assert lo.label == '=HYPERLINK("x")'  # formula text kept as text, never evaluated


def test_generic_json_and_utf8_bom():
    doc = {"format": "llmcap-profile", "version": 1, "model": "m",
           "load_points": [{"request_rate_per_s": "inf", "output_tokens_per_s": 100, "e2e_s_p50": 1.5}]}
    p = detect_and_load("mine.json", b"\xef\xbb\xbf" + json.dumps(doc).encode())
    assert math.isinf(p.load_points[0].request_rate_per_s) and p.load_points[0].e2e_latency_s.median == 1.5


# --- bad files -----------------------------------------------------------------------------------------------------


def _bad(tmp_path, name: str, data: bytes, match: str):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(InvalidInputError, match=match) as info:
        detect_and_load(path.name, path.read_bytes())
    assert name in str(info.value)
    return info.value


def test_wrong_format(tmp_path):
    _bad(tmp_path, "x.json", b'{"hello": 1}', "format")
    _bad(tmp_path, "x.csv", b"a,b\n1,2\n", "format")


def test_truncated_json(tmp_path):
    data = IMX.read_bytes()[:500]
    _bad(tmp_path, "trunc.json", data, "JSON")


def test_empty_sweep(tmp_path):
    _bad(tmp_path, "g.json", b'{"benchmarks": []}', "empty sweep")
    _bad(tmp_path, "e.csv", b"concurrency,output_tokens_per_s\n", "empty sweep")
    _bad(tmp_path, "n.json", json.dumps({"format": "llmcap-profile", "load_points": []}).encode(), "empty sweep")


def test_nan_constant_rejected_in_vllm(tmp_path):
    text = IMX.read_text().replace('"mean_ttft_ms": 300.0', '"mean_ttft_ms": NaN')
    err = _bad(tmp_path, "nan.json", text.encode(), "mean_ttft_ms")
    assert err.field.endswith("mean_ttft_ms")
    text = IMX.read_text().replace('"duration": 80.0', '"duration": Infinity')
    _bad(tmp_path, "inf.json", text.encode(), "duration")


def test_negative_and_nonmonotone_rejected(tmp_path):
    text = IMX.read_text().replace('"output_throughput": 8192.0', '"output_throughput": -1')
    _bad(tmp_path, "neg.json", text.encode(), "output_tokens_per_s")
    d = json.loads(IMX.read_bytes())
    d["p99_ttft_ms"] = 100.0  # below the median
    _bad(tmp_path, "mono.json", json.dumps(d).encode(), "ttft_s")
    _bad(tmp_path, "neg.csv", b"concurrency,output_tokens_per_s\n-4,100\n", "concurrency")
    _bad(tmp_path, "nan.csv", b"concurrency,output_tokens_per_s\n4,nan\n", "output_tokens_per_s")


def test_formula_in_numeric_cell_rejected(tmp_path):
    _bad(tmp_path, "f.csv", b"concurrency,output_tokens_per_s\n4,=1+2\n", "output_tokens_per_s")
    _bad(tmp_path, "g.csv", b"concurrency,output_tokens_per_s\n@SUM(A1),5\n", "concurrency")


def test_too_large(tmp_path):
    _bad(tmp_path, "big.json", b" " * (MAX_PROFILE_BYTES + 1), "size")


def test_binary_garbage_and_encodings(tmp_path):
    _bad(tmp_path, "bin.json", bytes(range(256)) * 4, "binary|encoding|file")
    _bad(tmp_path, "latin1.csv", "model,concurrency\nCafé,1\n".encode("latin-1"), "encoding")
    _bad(tmp_path, "utf16.json", '{"a": 1}'.encode("utf-16"), "encoding")
    _bad(tmp_path, "empty.json", b"", "empty file")


def test_unknown_generic_column_named(tmp_path):
    _bad(tmp_path, "typo.csv", b"concurrency,output_tokens_per_s,ttft_p99\n1,2,3\n", "ttft_p99")
