"""`llmcap` end to end, in a subprocess as users run it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import HF_CONFIGS

ROOT = Path(__file__).resolve().parents[2]


def llmcap(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "calculators.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)


def test_capacity_human_output_shows_vllm_lines_and_math():
    p = llmcap("capacity", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100",
               "--tensor-parallel-size", "4")
    assert p.returncode == 0, p.stderr
    for text in ("GPU KV cache size:", "Maximum concurrency for 131,072 tokens per request",
                 "81,920 B/token per GPU", "budget", "vllm serve meta-llama/Llama-3.1-70B-Instruct"):
        assert text in p.stdout


def test_capacity_of_one_data_parallel_rank():
    # --data-parallel-size 8 --enable-expert-parallel: the numbers each of the 8 engines prints (TP 1, the 256
    # experts spread over 8 GPUs), the serve line with both flags, and 8 GPUs in all
    from calculators.specs.catalog import get_gpu, get_model
    from calculators.vllm.capacity import vllm_capacity
    base = ("capacity", "--model", "deepseek-ai/DeepSeek-R1", "--gpu", "H200", "--max-model-len", "8192")
    p = llmcap(*base, "--data-parallel-size", "8", "--enable-expert-parallel", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    rank = vllm_capacity(get_model("deepseek-ai/DeepSeek-R1"), gpu=get_gpu("H200"), tensor_parallel_size=1,
                         expert_parallel_size=8, max_model_len=8192)
    assert doc["kv_cache_tokens"] == rank.kv_cache_tokens and doc["data_parallel_size"] == 8
    assert doc["settings"]["expert_parallel_size"] == 8 and doc["settings"]["tensor_parallel_size"] == 1
    assert "--data-parallel-size 8" in doc["vllm_serve"] and "--enable-expert-parallel" in doc["vllm_serve"]
    assert any("per data-parallel rank: vLLM starts 8 engines" in n for n in doc["notes"])
    # a rank holds attention whole: less KV room per GPU than 8-way tensor parallelism, but its own pool
    tp8 = vllm_capacity(get_model("deepseek-ai/DeepSeek-R1"), gpu=get_gpu("H200"), tensor_parallel_size=8,
                        max_model_len=8192)
    assert rank.binding.weights_bytes > tp8.binding.weights_bytes
    bad = llmcap(*base, "--data-parallel-size", "8", "--num-gpus", "4")
    assert bad.returncode == 2 and "num_gpus" in bad.stderr and "data_parallel_size (8)" in bad.stderr
    zero = llmcap(*base, "--data-parallel-size", "0")
    assert zero.returncode == 2 and "data_parallel_size" in zero.stderr


def test_capacity_json_from_printed_memory():
    p = llmcap("capacity", "--model", str(HF_CONFIGS / "meta-llama__Llama-3.1-70B.json"), "--gpu-memory-gib", "80",
               "--tensor-parallel-size", "4", "--max-model-len", "131072", "--kv-cache-memory",
               str(int(32.06 * 2**30)), "--vllm-version", "0.10.2", "--json")
    doc = json.loads(p.stdout)
    assert doc["kv_cache_bytes_per_token"] == 81_920 and doc["kv_cache_tokens"] == 420_208
    assert doc["num_gpu_blocks"] == 26_263 and doc["fits"] and round(doc["max_concurrency"], 2) == 3.21
    for key in ("weights_bytes", "available_kv_cache_bytes", "message"):
        assert key in doc


def test_capacity_json_does_not_fit_has_estimate():
    p = llmcap("capacity", "--model", "meta-llama/Llama-3.1-70B", "--gpu-memory-gib", "80", "-tp", "4",
               "--max-model-len", "131072", "--kv-cache-memory", str(2 * 2**30), "--json")
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and not doc["fits"] and doc["estimated_max_model_len"] == 26_208


@pytest.mark.parametrize("args, field", [
    (["--model", "nope/nope", "--gpu", "H100"], "model"),
    (["--model", "Qwen/Qwen3-8B", "--gpu", "H1000"], "gpu"),
    (["--model", "Qwen/Qwen3-8B"], "gpu"),
    (["--model", "Qwen/Qwen3-8B", "--gpu", "H100", "-tp", "3"], "tensor_parallel_size"),
    (["--model", "Qwen/Qwen3-8B", "--gpu", "H100", "--gpu-memory-utilization", "1.2"], "gpu_memory_utilization"),
    (["--model", "Qwen/Qwen3-8B", "--gpu", "H100", "--max-model-len", "0"], "max_model_len"),
    (["--model", "Qwen/Qwen3-8B", "--gpu-memory-gib", "-3"], "gpu_memory_gib"),
    (["--model", "/nonexistent/config.json", "--gpu", "H100"], "model"),
])
def test_bad_input_exits_2_with_one_line(args, field):
    p = llmcap("capacity", *args)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and field in p.stderr and "Traceback" not in p.stderr


def test_malformed_config_file(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"hidden_size": 10')
    p = llmcap("capacity", "--model", str(bad), "--gpu", "H100")
    assert p.returncode == 2 and "config.json" in p.stderr


def test_lists():
    gpus = json.loads(llmcap("gpus", "--json").stdout)
    models = json.loads(llmcap("models", "--json").stdout)
    assert len(gpus) >= 25 and len(models) >= 30
    assert "H100-SXM" in llmcap("gpus").stdout


@pytest.mark.parametrize("value", ["1e300", "nan", "-1"])
def test_a_step_overhead_beyond_a_minute_is_refused_by_its_flags_name(value):
    """--step-overhead-ms 1e300 once printed a 300-digit TTFT; it is refused under the name and unit typed."""
    p = llmcap("perf", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100", "--input-len", "100", "--output-len",
               "10", "--concurrency", "4", "--step-overhead-ms", value)
    assert p.returncode == 2 and "step_overhead_ms" in p.stderr and "0 to 60,000 ms" in p.stderr
    assert "Traceback" not in p.stderr


def test_gpus_lists_the_16_bit_peak_a_gpu_has_and_the_price_the_planner_uses():
    """The T4 (Turing) has no BF16: its 16-bit peak is FP16's 65 TFLOP/s (datasheet), never "0.0 TFLOP/s bf16". A
    GPU's price is the median of its listed on-demand prices (the L4's four: $0.44 twice, $0.57, $0.8048, so halfway
    between $0.44 and $0.57); a GPU without one (MI250X) shows "—"."""
    rows = {r["id"]: r for r in json.loads(llmcap("gpus", "--json").stdout)}
    t4, l4 = rows["T4"], rows["L4"]
    assert t4["bf16_tflop_per_s"] is None and t4["dense_tflop_per_s"]["fp16"] == 65
    assert l4["price_basis"].startswith("median of 4 listed prices")
    assert l4["usd_per_gpu_hour"] == pytest.approx((0.44 + 0.57) / 2)
    assert rows["H100-SXM"]["bf16_tflop_per_s"] == pytest.approx(989.4, abs=0.1)
    assert rows["MI250X"]["usd_per_gpu_hour"] is None
    lines = {line.split()[0]: line for line in llmcap("gpus").stdout.splitlines()}
    assert "65.0 TFLOP/s fp16" in lines["T4"] and f"${l4['usd_per_gpu_hour']:.2f}/h" in lines["L4"]
    assert lines["MI250X"].split("TFLOP/s bf16")[1].split()[0] == "—"


LLAMA70 = str(ROOT / "tests" / "fixtures" / "hf_configs" / "meta-llama__Llama-3.1-70B.json")
CONTRACT = [  # the JSON keys users rely on, per command (kept stable across refactors)
    (["capacity", "--model", LLAMA70, "--gpu-memory-gib", "80", "--tensor-parallel-size", "4", "--max-model-len",
      "131072", "--kv-cache-memory", str(int(32.06 * 2**30)), "--vllm-version", "0.10.2"],
     ["kv_cache_bytes_per_token", "weights_bytes", "available_kv_cache_bytes", "num_gpu_blocks", "kv_cache_tokens",
      "max_concurrency", "fits", "message"]),
    (["capacity", "--model", LLAMA70, "--gpu-memory-gib", "80", "--tensor-parallel-size", "4", "--max-model-len",
      "131072", "--kv-cache-memory", str(2 * 2**30)], ["fits", "estimated_max_model_len", "message"]),
    (["capacity", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100"],
     ["weights_bytes", "available_kv_cache_bytes", "kv_cache_tokens", "max_concurrency"]),
    (["perf", "--model", LLAMA70, "--gpu", "H100", "--tensor-parallel-size", "4", "--batch-size", "32",
      "--input-len", "2048", "--output-len", "256"],
     ["prefill_s", "decode_step_s", "ttft_s", "tpot_s", "e2e_latency_s", "output_tokens_per_s",
      "output_tokens_per_s_per_gpu", "bound", "crossover_batch_size"]),
    (["plan", "--model", LLAMA70, "--gpu", "H100", "--gpu", "H200", "--request-rate", "40", "--input-len", "2000",
      "--output-len", "300", "--ttft-p99-ms", "1000", "--tpot-p99-ms", "50"],
     ["gpu", "tensor_parallel_size", "pipeline_parallel_size", "replicas", "total_gpus", "batch_size",
      "output_tokens_per_s_per_gpu", "usd_per_hour", "usd_per_million_output_tokens", "meets_slo"]),
]


def _keys(doc) -> set[str]:
    if isinstance(doc, dict):
        return set(doc).union(*(_keys(v) for v in doc.values()))
    if isinstance(doc, list):
        return set().union(*(_keys(v) for v in doc[:3]))
    return set()


@pytest.mark.parametrize(("args", "keys"), CONTRACT, ids=lambda x: x[0] if isinstance(x[0], str) else None)
def test_json_keys_users_rely_on(args, keys):
    p = llmcap(*args, "--json")
    assert p.returncode == 0, p.stderr
    missing = set(keys) - _keys(json.loads(p.stdout))
    assert not missing, missing


PLAN = ("plan", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100", "--request-rate", "40",
        "--input-len", "2000", "--output-len", "300", "--ttft-p99-ms", "1000", "--tpot-p99-ms", "50",
        "--max-pipeline-parallel-size", "1")


def test_plan_writes_the_quote_in_both_formats(tmp_path):
    for name, start in (("quote.html", b"<!DOCTYPE html>"), ("quote.pdf", b"%PDF")):
        p = llmcap(*PLAN, "--quote", str(tmp_path / name))
        assert p.returncode == 0, p.stderr
        assert (tmp_path / name).read_bytes().startswith(start) and name in p.stderr
    text = (tmp_path / "quote.html").read_text()
    assert "vllm serve meta-llama/Llama-3.1-70B-Instruct" in text and "Alternatives" not in text
    bad = llmcap(*PLAN, "--quote", str(tmp_path / "quote.docx"))
    assert bad.returncode == 2 and ".html or .pdf" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "quote.docx").exists()


def test_perf_and_plan_fall_back_to_the_public_runs_of_the_gpus_family():
    """Llama-3.1-70B on four L40S: no public run of that setup, so ``perf`` prints what the runs on Ada GPUs (any
    model and layout) measured against the model; both commands' JSON carry the family's entries."""
    args = ("perf", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "L40S", "-tp", "4", "--input-len",
            "2000", "--output-len", "300", "--concurrency", "16")
    doc = json.loads(llmcap(*args, "--json").stdout)
    assert doc["published_runs"] == [] and [e["metric"] for e in doc["family_runs"]] == ["ttft", "tpot", "throughput"]
    text = llmcap(*args).stdout
    assert "no public run of this setup; public runs on NVIDIA Ada GPUs, any model and layout" in text
    assert all(f"    {e['text']}" in text for e in doc["family_runs"])
    plan = json.loads(llmcap("plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "L40S", "--request-rate",
                             "2", "--input-len", "2000", "--output-len", "300", "--json").stdout)
    assert {e["gpu_family"] for e in plan["family_runs"]} == {"NVIDIA Ada"}


def test_plan_conservative_costs_and_max_model_len():
    est = json.loads(llmcap(*PLAN, "--max-model-len", "16384", "--json").stdout)
    con = json.loads(llmcap(*PLAN, "--max-model-len", "16384", "--conservative", "--json").stdout)
    assert est["sizing"] == "estimate" and con["sizing"] == "conservative"
    best, safe = est["layouts"][0], con["layouts"][0]
    assert safe["total_gpus"] >= best["total_gpus"]
    assert "--max-model-len 16384" in best["vllm_serve"] and best["max_model_len"] == 16384
    assert best["usd_per_month"] == pytest.approx(best["usd_per_hour"] * 730)
    assert best["usd_per_year"] == pytest.approx(best["usd_per_hour"] * 8760)
    assert {"usd_per_million_input_tokens", "usd_per_million_output_tokens", "usd_per_million_tokens",
            "tpot_band_low_s", "tpot_band_high_s", "ttft_p99_band_low_s", "ttft_p99_band_high_s"} <= set(best)
    assert est["cost_labels"]["usd_per_million_tokens"] == "$/1M tokens (input + output)"


def test_plan_states_what_the_public_runs_of_the_recommended_setup_measured():
    """DeepSeek-R1 on B200 at 1,000 / 1,000 tokens, no pipeline: eight B200s in TP8 are recommended, a setup the
    public corpus ran; ``plan`` lists its runs' held-out ratios as ``perf`` and the quote do."""
    args = ("plan", "--model", "deepseek-ai/DeepSeek-R1", "--gpu", "B200", "--request-rate", "2", "--input-len",
            "1000", "--output-len", "1000", "--max-pipeline-parallel-size", "1")
    doc = json.loads(llmcap(*args, "--json").stdout)
    best = doc["layouts"][0]
    assert (best["gpu"], best["tensor_parallel_size"], best["dp_attention"]) == ("B200", 8, False)
    assert [e["metric"] for e in doc["published_runs"]] == ["ttft", "tpot", "throughput"]
    text = llmcap(*args).stdout
    assert "the recommended layout: public runs of this setup" in text
    assert all(f"  {e['text']}" in text for e in doc["published_runs"])
