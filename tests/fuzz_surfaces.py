"""Hypothesis strategies and checks of every public surface, shared by tests/test_fuzz.py (short CI
profile) and benchmarks/fuzz_long.py (≥ 10,000 examples per surface).

Property of every surface: a valid answer, or the product's own :class:`InvalidInputError` naming a
field — never another exception, never a NaN or a negative count in a returned result or printed JSON.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import re
from collections.abc import Callable
from dataclasses import is_dataclass
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

from calculators.errors import InvalidInputError
from calculators.scenario import EXTRA_KEYS, QUERY_KEYS
from calculators.specs.catalog import load_gpus, load_models

ROOT = Path(__file__).resolve().parent.parent
GPU_IDS = list(load_gpus())
MODEL_IDS = list(load_models())

# ---------------------------------------------------------------------------------------------- values
EXTREME_NUMBERS = [0, -1, 1, 2, 7, 0.5, -0.0, 1e-300, 1e308, -1e308, math.nan, math.inf, -math.inf,
                   2**63, 2**64 + 1, 10**30, -(2**63)]
numbers = st.one_of(st.sampled_from(EXTREME_NUMBERS), st.integers(-10, 10**6),
                    st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**70), 2**70))
ill_typed = st.one_of(st.none(), st.text(max_size=12), st.booleans(), st.lists(st.integers(), max_size=3),
                      st.dictionaries(st.text(max_size=4), st.integers(), max_size=2), st.binary(max_size=8))
anything = st.one_of(numbers, ill_typed)
small_positive = st.one_of(st.integers(1, 64), st.sampled_from([1, 2, 4, 8]))
texts = st.one_of(st.text(max_size=30), st.sampled_from(["", " ", "é", "模型", "\x00", "../../etc/passwd",
                                                          "/etc/passwd", "<script>alert(1)</script>", "nan",
                                                          "inf", "-1", "1e308", "0x10", "None"]))
gpus = st.sampled_from(GPU_IDS)
models = st.sampled_from(MODEL_IDS)


# ---------------------------------------------------------------------------------------------- checks
class FuzzError(AssertionError):
    pass


def bad_numbers(obj, path: str = "$") -> list[str]:
    """Paths of NaN values and negative counts in a returned structure (dicts, lists, arrays, dataclasses)."""
    out: list[str] = []
    if is_dataclass(obj) and not isinstance(obj, type):
        obj = dict(vars(obj))
    if hasattr(obj, "model_dump") and callable(obj.model_dump):
        obj = obj.model_dump()
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, int | np.integer) and not isinstance(v, bool) and v < 0 and _is_count(str(k)):
                out.append(f"{path}.{k}={v}")
            else:
                out += bad_numbers(v, f"{path}.{k}")
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            out += bad_numbers(v, f"{path}[{i}]")
    elif isinstance(obj, np.ndarray):
        if obj.dtype.kind == "f" and np.isnan(obj).any():
            out.append(f"{path}: NaN in array")
        if obj.dtype.kind in "iu" and (obj < 0).any():
            out.append(f"{path}: negative count in array")
    elif isinstance(obj, float | np.floating) and math.isnan(obj):
        out.append(f"{path}=nan")
    return out


_COUNT_WORDS = ("num", "tokens", "blocks", "count", "replicas", "gpus", "batch", "seqs", "size", "points",
                "requests", "len", "limit", "concurrency")


def _is_count(key: str) -> bool:
    return any(w in key.lower() for w in _COUNT_WORDS)


def expect_valid_or_input_error(fn: Callable[[], object]) -> object:
    """Run ``fn``; pass on a clean result or InvalidInputError naming a field; raise FuzzError otherwise."""
    try:
        result = fn()
    except InvalidInputError as exc:
        if not (isinstance(exc.field, str) and exc.field):
            raise FuzzError(f"InvalidInputError without a field: {exc!r}") from exc
        return exc
    except Exception as exc:  # the property under test: nothing else escapes
        raise FuzzError(f"{type(exc).__name__}: {exc}") from exc
    bad = bad_numbers(result)
    if bad:
        raise FuzzError(f"bad numbers in result: {bad[:5]}")
    return result


def _json_bad(text: str) -> list[str]:
    def no_const(name: str):
        raise FuzzError(f"printed JSON contains {name}")
    return bad_numbers(json.loads(text, parse_constant=no_const))


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``llmcap argv`` in-process: (exit status, stdout, stderr). Raises FuzzError on a broken property."""
    from calculators.cli.main import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse usage errors
            rc = exc.code if isinstance(exc.code, int) else 2
        except Exception as exc:
            raise FuzzError(f"llmcap {argv!r}: {type(exc).__name__}: {exc}") from exc
    o, e = out.getvalue(), err.getvalue()
    if rc not in (0, 2):
        raise FuzzError(f"llmcap {argv!r}: exit {rc}: {e[-300:]}")
    if rc == 2:
        lines = [x for x in e.splitlines() if x.strip()]
        if not lines or "Traceback" in e:
            raise FuzzError(f"llmcap {argv!r}: exit 2 without a one-line message: {e[-300:]!r}")
    elif "--json" in argv:
        bad = _json_bad(o)
        if bad:
            raise FuzzError(f"llmcap {argv!r}: bad numbers in JSON: {bad[:5]}")
    return rc, o, e


# ---------------------------------------------------------------------------------------------- API surfaces
def _model(mid: str):
    return load_models()[mid]


def _gpu(gid: str):
    return load_gpus()[gid]


@st.composite
def kv_case(draw):
    return dict(model=draw(models), tp=draw(st.one_of(small_positive, anything)), pp=draw(st.one_of(small_positive,
                anything)), kv=draw(st.one_of(st.sampled_from(["auto", "fp8", "bfloat16", "float32"]), texts)),
                dtype=draw(st.one_of(st.sampled_from(["auto", "float16"]), texts)),
                seq=draw(st.one_of(st.integers(1, 10**6), anything)),
                block=draw(st.one_of(st.none(), st.sampled_from([16, 32]), anything)),
                avail=draw(st.one_of(numbers, st.lists(st.floats(-1e12, 1e12), min_size=1, max_size=4))))


def check_kv(c: dict) -> None:
    from calculators.memory.kv_cache import kv_bytes_per_sequence, kv_bytes_per_token, sequences_that_fit
    m = _model(c["model"])
    kw = dict(tensor_parallel_size=c["tp"], pipeline_parallel_size=c["pp"], kv_cache_dtype=c["kv"], dtype=c["dtype"])
    expect_valid_or_input_error(lambda: kv_bytes_per_token(m, **kw))
    expect_valid_or_input_error(lambda: kv_bytes_per_sequence(m, c["seq"], block_size=c["block"], **kw))
    r = expect_valid_or_input_error(lambda: sequences_that_fit(m, c["avail"], c["seq"], block_size=c["block"], **kw))
    if isinstance(r, np.ndarray) and (r < 0).any():
        raise FuzzError("sequences_that_fit < 0")


@st.composite
def weights_case(draw):
    return dict(model=draw(models), tp=draw(st.one_of(small_positive, anything)),
                pp=draw(st.one_of(small_positive, anything)),
                q=draw(st.one_of(st.none(), st.sampled_from(["fp8", "awq", "nvfp4", "none"]), texts)),
                dtype=draw(st.one_of(st.just("auto"), texts)), ep=draw(st.one_of(st.none(), small_positive, anything)))


def check_weights(c: dict) -> None:
    from calculators.memory.weights import weight_bytes_per_gpu
    expect_valid_or_input_error(lambda: weight_bytes_per_gpu(
        _model(c["model"]), tensor_parallel_size=c["tp"], pipeline_parallel_size=c["pp"], quantization=c["q"],
        dtype=c["dtype"], expert_parallel_size=c["ep"]))


CAPACITY_FLAGS = {
    "tensor_parallel_size": st.one_of(small_positive, anything),
    "pipeline_parallel_size": st.one_of(st.integers(1, 8), anything),
    "dtype": st.one_of(st.sampled_from(["auto", "bfloat16", "float16", "float32"]), texts),
    "quantization": st.one_of(st.none(), st.sampled_from(["fp8", "awq", "gptq", "mxfp4", "nvfp4"]), texts),
    "kv_cache_dtype": st.one_of(st.sampled_from(["auto", "fp8", "fp8_e5m2"]), texts),
    "gpu_memory_utilization": st.one_of(st.floats(0.01, 1.0), numbers),
    "max_model_len": st.one_of(st.none(), st.integers(1, 2**20), anything),
    "max_num_batched_tokens": st.one_of(st.none(), st.integers(1, 2**20), anything),
    "max_num_seqs": st.one_of(st.none(), st.integers(1, 4096), anything),
    "block_size": st.one_of(st.none(), st.sampled_from([8, 16, 32, 64, 128]), anything),
    "enforce_eager": st.one_of(st.booleans(), anything),
    "kv_cache_memory_bytes": st.one_of(st.none(), st.integers(1, 2**40), anything),
    "vllm_version": st.one_of(st.sampled_from(["0.6.3", "0.8.5", "0.10.2", "0.11.0", "latest"]), texts),
    "engine": st.one_of(st.sampled_from(["auto", "v0", "v1"]), texts),
    "expert_parallel_size": st.one_of(st.none(), small_positive, anything),
}


@st.composite
def capacity_case(draw):
    flags = {k: draw(s) for k, s in CAPACITY_FLAGS.items() if draw(st.booleans())}
    mem = draw(st.one_of(st.none(), st.floats(1e9, 1e12), numbers)) if draw(st.booleans()) else None
    return dict(model=draw(models), gpu=None if mem is not None and draw(st.booleans()) else draw(gpus), mem=mem,
                flags=flags)


def check_capacity(c: dict) -> None:
    from calculators.report.capacity import capacity_document
    from calculators.vllm.capacity import vllm_capacity
    m = _model(c["model"])
    r = expect_valid_or_input_error(lambda: vllm_capacity(
        m, gpu=None if c["gpu"] is None else _gpu(c["gpu"]), gpu_memory_bytes=c["mem"], **c["flags"]))
    if not isinstance(r, InvalidInputError):
        expect_valid_or_input_error(lambda: json.loads(json.dumps(capacity_document(m, r))))


@st.composite
def roofline_case(draw):
    return dict(model=draw(models), gpu=draw(gpus), tp=draw(st.one_of(small_positive, anything)),
                pp=draw(st.one_of(st.integers(1, 4), anything)),
                q=draw(st.one_of(st.none(), st.sampled_from(["fp8", "awq"]), texts)),
                eff=(draw(st.one_of(st.floats(0.01, 1), numbers)), draw(st.one_of(st.floats(0.01, 1), numbers)),
                     draw(st.one_of(st.floats(0, 0.1), numbers))),
                b=draw(st.one_of(st.integers(1, 4096), numbers, st.lists(st.integers(1, 512), min_size=1, max_size=3))),
                i=draw(st.one_of(st.integers(1, 10**6), numbers)), o=draw(st.one_of(st.integers(1, 10**5), numbers)))


def check_roofline(c: dict) -> None:
    from calculators.perf.roofline import Efficiencies, Roofline
    from calculators.perf.serving import serving_metrics

    def build():
        e = Efficiencies(compute=c["eff"][0], memory=c["eff"][1], step_overhead_s=c["eff"][2])
        return Roofline(_model(c["model"]), _gpu(c["gpu"]), tensor_parallel_size=c["tp"],
                        pipeline_parallel_size=c["pp"], quantization=c["q"], efficiencies=e)
    r = expect_valid_or_input_error(build)
    if not isinstance(r, InvalidInputError):
        expect_valid_or_input_error(lambda: serving_metrics(r, c["b"], c["i"], c["o"]))


@st.composite
def fleet_case(draw):
    def opt():
        return draw(st.one_of(st.none(), st.floats(1e-3, 1e5), numbers))
    return dict(model=draw(models), gpu=draw(gpus), tp=draw(st.sampled_from([1, 2, 4, 8])),
                pp=draw(st.sampled_from([1, 2])), ep=draw(st.booleans()),
                rate=draw(st.one_of(st.floats(1e-3, 1e4), numbers)), i=draw(st.one_of(st.floats(1, 1e5), numbers)),
                o=draw(st.one_of(st.floats(1, 1e4), numbers)), ttft=opt(), tpot=opt(), ip95=opt(), op95=opt(),
                cap=draw(st.one_of(st.floats(0.05, 1), numbers)), price=draw(st.one_of(st.none(), numbers)),
                n1=draw(st.booleans()), mml=draw(st.one_of(st.none(), st.integers(1, 10**6), numbers)))


def check_fleet(c: dict) -> None:
    from calculators.planning.fleet import Layout, Workload, plan_layout
    w = expect_valid_or_input_error(lambda: Workload(
        request_rate_per_s=c["rate"], input_len=c["i"], output_len=c["o"], ttft_p99_s=c["ttft"], tpot_p99_s=c["tpot"],
        input_len_p95=c["ip95"], output_len_p95=c["op95"]))
    if isinstance(w, InvalidInputError):
        return
    layout = Layout(_gpu(c["gpu"]), c["tp"], c["pp"], c["ep"])
    p = expect_valid_or_input_error(lambda: plan_layout(
        _model(c["model"]), layout, w, usd_per_gpu_hour=c["price"], utilisation_cap=c["cap"], n_plus_one=c["n1"],
        max_model_len=c["mml"]))
    if not isinstance(p, InvalidInputError):
        expect_valid_or_input_error(lambda: json.loads(json.dumps(p.as_dict())))


CONFIG_KEYS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
               "intermediate_size", "vocab_size", "max_position_embeddings", "torch_dtype", "model_type",
               "architectures", "sliding_window", "layer_types", "num_local_experts", "num_experts_per_tok",
               "n_routed_experts", "kv_lora_rank", "qk_rope_head_dim", "quantization_config", "text_config",
               "rope_scaling", "tie_word_embeddings", "moe_intermediate_size", "first_k_dense_replace",
               "q_lora_rank", "v_head_dim", "qk_nope_head_dim", "_name_or_path", "rope_theta", "n_shared_experts"]
json_leaf = st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=10))
json_values = st.recursive(json_leaf, lambda ch: st.one_of(st.lists(ch, max_size=4),
                                                           st.dictionaries(st.text(max_size=6), ch, max_size=4)),
                           max_leaves=12)


@st.composite
def config_case(draw):
    base = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192,
            "torch_dtype": "bfloat16", "architectures": ["LlamaForCausalLM"], "model_type": "llama"}
    cfg = dict(base) if draw(st.booleans()) else {}
    for k in draw(st.lists(st.sampled_from(CONFIG_KEYS), max_size=6)):
        cfg[k] = draw(json_values)
    if draw(st.booleans()):
        cfg.update(draw(st.dictionaries(st.text(max_size=8), json_values, max_size=3)))
    return cfg


def check_config(cfg: dict) -> None:
    from calculators.specs.hf_config import model_from_config, model_from_json_text
    m = expect_valid_or_input_error(lambda: model_from_config(cfg, id="fuzz/model"))
    if not isinstance(m, InvalidInputError):  # an accepted config must be usable
        from calculators.memory.kv_cache import kv_bytes_per_token
        from calculators.memory.weights import weight_bytes_per_gpu
        expect_valid_or_input_error(lambda: kv_bytes_per_token(m))
        expect_valid_or_input_error(lambda: weight_bytes_per_gpu(m))
    try:
        text = json.dumps(cfg, allow_nan=True)
    except (ValueError, TypeError):
        return
    expect_valid_or_input_error(lambda: model_from_json_text(text))


def _json_bytes(obj) -> bytes:
    return json.dumps(obj, allow_nan=True).encode()


profile_keys = st.sampled_from(["date", "backend", "model_id", "request_rate", "max_concurrency", "completed",
                                "total_input_tokens", "total_output_tokens", "request_throughput",
                                "output_throughput", "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms",
                                "median_tpot_ms", "mean_itl_ms", "input_lens", "output_lens", "ttfts", "itls",
                                "benchmarks", "records", "metadata", "time_to_first_token", "inter_token_latency",
                                "results", "elapsed_time", "num_requests", "avg_latency", "tokens_per_second",
                                "requests_per_second", "input_config", "mean_e2el_ms", "duration"])
profile_bytes = st.one_of(
    st.binary(max_size=200),
    st.builds(_json_bytes, json_values),
    st.builds(_json_bytes, st.dictionaries(profile_keys, json_values, max_size=12)),
    st.builds(lambda rows: "\n".join(",".join(r) for r in rows).encode(),
              st.lists(st.lists(st.text(max_size=6), min_size=1, max_size=5), max_size=5)),
)
profile_names = st.one_of(st.sampled_from(["a.json", "b.jsonl", "c.csv", "run.commands", "x", "é.json",
                                           "../../etc/passwd"]), st.text(max_size=12))


def check_profile(case: tuple[str, bytes]) -> None:
    from calculators.profiles import detect_and_load, load_many
    name, data = case
    expect_valid_or_input_error(lambda: detect_and_load(name, data))
    expect_valid_or_input_error(lambda: load_many([(name, data), ("second.json", data)]))


LOG_LINES = [
    "INFO 09-10 12:00:01 [gpu_model_runner.py:2007] Model loading took {x} GiB and 30.1 seconds",
    "INFO 09-10 12:00:40 [gpu_worker.py:298] Available KV cache memory: {x} GiB",
    "INFO 09-10 12:00:41 [kv_cache_utils.py:864] GPU KV cache size: {x} tokens",
    "INFO 09-10 12:00:41 [kv_cache_utils.py:868] Maximum concurrency for {x} tokens per request: {x}x",
    "INFO 05-01 10:00:00 worker.py:240] Memory profiling takes 5.2 seconds",
    "INFO 05-01 10:00:00 executor_base.py:110] # CUDA blocks: {x}, # CPU blocks: {x}",
    "INFO 05-01 10:00:00 llm_engine.py:200] Initializing a V0 LLM engine (v0.6.3) with config: model='{x}', "
    "tensor_parallel_size={x}, max_seq_len={x}, dtype=torch.bfloat16",
    "INFO non-default args: {{'model': '{x}', 'tensor_parallel_size': {x}, 'max_model_len': {x}}}",
    "INFO vLLM API server version {x}",
]
log_numbers = st.one_of(st.sampled_from(["0", "-1", "1,000", "3.21", "nan", "1e308", "99999999999999999999999",
                                         ",", "-,", ".5", "", "inf", "1,2,3"]), st.text(max_size=8))


@st.composite
def log_case(draw):
    if draw(st.integers(0, 4)) == 0:
        return draw(st.text(max_size=300))
    lines = draw(st.lists(st.sampled_from(LOG_LINES), min_size=1, max_size=10))
    return "\n".join(line.replace("{x}", draw(log_numbers)) for line in lines)


def check_log(text: str) -> None:
    from calculators.vllm.startup_log import parse_vllm_log, scenario_updates
    log = expect_valid_or_input_error(lambda: parse_vllm_log(text))
    if not isinstance(log, InvalidInputError):
        expect_valid_or_input_error(lambda: scenario_updates(log))


QUERY_KEYS_ALL = [*QUERY_KEYS, *EXTRA_KEYS]  # every key a link may carry
query_values = st.one_of(texts, st.sampled_from(["0", "-1", "1", "4", "1e308", "nan", "inf", "-inf", "0.5", "1.0",
                                                 "true", "2.5", "99999999999999999999999", "0x1f", "1_000", " 8 ",
                                                 "H100", "meta-llama/Llama-3.1-8B", "c0.6_m0.8_o0.002",
                                                 "x~80~3350~989", "x~nan~1~1", "x~-1~inf~0", "eJw"]),
                         st.builds(str, numbers))
query_dicts = st.dictionaries(st.one_of(st.sampled_from(QUERY_KEYS_ALL), st.text(max_size=5)),
                              st.one_of(query_values, st.lists(query_values, max_size=3)), max_size=8)


def check_query(params: dict) -> None:
    from calculators.perf.calibration import Calibration
    from calculators.scenario import decode_config, decode_custom_gpu, scenario_from_query
    r = expect_valid_or_input_error(lambda: scenario_from_query(params))
    if isinstance(r, InvalidInputError):
        raise FuzzError(f"scenario_from_query raised {r}: it should only produce messages")
    for key, fn in (("cgpu", decode_custom_gpu), ("cmodel", decode_config),
                    ("cal", Calibration.efficiencies_from_param)):
        if key in params:
            value = params[key] if isinstance(params[key], str) else str(params[key])
            expect_valid_or_input_error(lambda fn=fn, value=value: fn(value))


API_SURFACES: dict[str, tuple[st.SearchStrategy, Callable]] = {
    "kv_cache": (kv_case(), check_kv),
    "weights": (weights_case(), check_weights),
    "vllm_capacity": (capacity_case(), check_capacity),
    "roofline_serving": (roofline_case(), check_roofline),
    "fleet_plan_layout": (fleet_case(), check_fleet),
    "model_from_config": (config_case(), check_config),
    "profile_import": (st.tuples(profile_names, profile_bytes), check_profile),
    "vllm_log": (log_case(), check_log),
    "scenario_from_query": (query_dicts, check_query),
}

# ---------------------------------------------------------------------------------------------- CLI surfaces
cli_num = st.one_of(st.sampled_from(["0", "-1", "1", "2", "4", "8", "0.5", "1e308", "-1e308", "nan", "inf", "-inf",
                                     "99999999999999999999999", "", "é", "abc", "1e-300", "0.9", "128", "2048"]),
                    st.builds(str, numbers))
cli_model = st.one_of(models, st.sampled_from(["unknown/model", "", "/etc/passwd", "../../etc/passwd", "x.json",
                                               "/nonexistent/config.json", "模型", "llama"]))
cli_gpu = st.one_of(gpus, st.sampled_from(["", "H100", "a100", "unknown-gpu", "é", "/etc/passwd"]))

CLI_FLAGS = {
    "capacity": ["--gpu-memory-gib", "--num-gpus", "--tensor-parallel-size", "--pipeline-parallel-size",
                 "--gpu-memory-utilization", "--max-model-len", "--max-num-batched-tokens", "--max-num-seqs",
                 "--block-size", "--kv-cache-memory", "--seq-len-mean", "--seq-len-p95"],
    "perf": ["--tensor-parallel-size", "--pipeline-parallel-size", "--compute-efficiency", "--memory-efficiency",
             "--step-overhead-ms", "--batch-size", "--input-len", "--output-len"],
    "knee": ["--tensor-parallel-size", "--compute-efficiency", "--memory-efficiency", "--step-overhead-ms",
             "--ttft-ms", "--tpot-ms", "--threshold", "--max-batch", "--input-len", "--output-len"],
    "plan": ["--request-rate", "--input-len", "--output-len", "--input-len-p95", "--output-len-p95", "--ttft-p99-ms",
             "--tpot-p99-ms", "--headroom", "--usd-per-gpu-hour", "--max-pipeline-parallel-size"],
    "simulate": ["--tensor-parallel-size", "--request-rate", "--arrival-cv", "--input-len", "--output-len",
                 "--input-len-p95", "--output-len-p95", "--max-num-seqs", "--max-num-batched-tokens", "--max-wait-ms",
                 "--max-model-len", "--gpu-memory-utilization", "--prefix-cache-hit-rate", "--ttft-slo-ms",
                 "--tpot-slo-ms", "--seed"],
}
CLI_DEFAULTS = {
    "capacity": {"--gpu": None},
    "perf": {"--gpu": None, "--batch-size": "8", "--input-len": "1000", "--output-len": "100"},
    "knee": {"--gpu": None, "--input-len": "1000", "--output-len": "100"},
    "plan": {"--gpu": None, "--request-rate": "2", "--input-len": "1000", "--output-len": "200"},
    "simulate": {"--gpu": None, "--request-rate": "2", "--input-len": "500", "--output-len": "50",
                 "--duration-s": "5"},
}
CLI_STRINGS = {"capacity": {"--dtype": ["auto", "bfloat16", "x"], "--quantization": ["fp8", "awq", "bogus", ""],
                            "--kv-cache-dtype": ["auto", "fp8", "x"], "--vllm-version": ["0.6.3", "0.10.2", "x", ""],
                            "--engine": ["auto", "v0", "V1", "v9"], "--calibration": ["/nonexistent", "/etc/passwd"]},
               "perf": {"--quantization": ["fp8", "bogus"], "--kv-cache-dtype": ["fp8", "x"],
                        "--calibration": ["/nonexistent", "/etc/hostname"]},
               "knee": {"--quantization": ["fp8", "bogus"]},
               "plan": {"--quantization": ["fp8", "bogus"], "--kv-cache-dtype": ["fp8", "x"]},
               "simulate": {"--length-dist": ["lognormal", "fixed", "trace", "x"], "--policy": ["continuous", "static"],
                            "--trace": ["/nonexistent.csv", "/etc/passwd"]}}
CLI_SWITCHES = {"capacity": ["--enable-expert-parallel", "--enforce-eager"], "plan": ["--n-plus-one"],
                "perf": ["--enable-dp-attention"], "knee": ["--enable-dp-attention"],
                "simulate": ["--enable-dp-attention"]}


@st.composite
def cli_argv(draw):
    cmd = draw(st.sampled_from([*CLI_FLAGS, "gpus", "models", "profile import", "profile calibrate", "bogus", ""]))
    if cmd in ("gpus", "models"):
        return [cmd] + (["--json"] if draw(st.booleans()) else []) + draw(st.lists(texts, max_size=1))
    if cmd in ("bogus", ""):
        return [cmd] if cmd else []
    if cmd.startswith("profile"):
        files = draw(st.lists(st.sampled_from(["/nonexistent.json", "/etc/passwd", "/", "/dev/null",
                                               str(ROOT / "tests" / "fixtures" / "hostile" / "nan.json")]),
                              min_size=1, max_size=2))
        argv = cmd.split() + files + ["--json"]
        if cmd.endswith("calibrate"):
            argv += ["--model", draw(cli_model), "--gpu", draw(cli_gpu)]
        return argv
    argv = [cmd, "--model", draw(cli_model)]
    flags = dict(CLI_DEFAULTS[cmd])
    flags["--gpu"] = draw(cli_gpu)
    for f in draw(st.lists(st.sampled_from(CLI_FLAGS[cmd]), max_size=5, unique=True)):
        flags[f] = draw(cli_num)
    for f, choices in CLI_STRINGS.get(cmd, {}).items():
        if draw(st.integers(0, 3)) == 0:
            flags[f] = draw(st.sampled_from(choices))
    for f, v in flags.items():
        if v is not None:
            argv += [f, v] if not v.startswith("-") else [f"{f}={v}"]
    argv += [s for s in CLI_SWITCHES.get(cmd, []) if draw(st.booleans())]
    if cmd == "plan" and draw(st.booleans()):
        argv += ["--gpu", draw(cli_gpu)]
    if draw(st.integers(0, 4)) > 0:
        argv.append("--json")
    return argv


def check_cli(argv: list[str]) -> None:
    run_cli(argv)


# ---------------------------------------------------------------------------------------------- AppTest surface
app_params = st.dictionaries(st.sampled_from(QUERY_KEYS_ALL), query_values, max_size=6)
APP_PAGES = [""] + sorted(set(re.findall(r'"views" / "(\w+)\.py"', (ROOT / "app" / "streamlit_app.py").read_text()))
                        - {"overview"})


def check_app(page: str, params: dict) -> None:
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "app" / "streamlit_app.py"), default_timeout=60)
    for k, v in params.items():
        at.query_params[k] = v
    if page:
        at.switch_page(f"views/{page}.py")
    try:
        at.run()
    except Exception as exc:
        raise FuzzError(f"AppTest run {params!r}: {type(exc).__name__}: {exc}") from exc
    if at.exception:
        raise FuzzError(f"exception element on {page or 'overview'} with {params!r}: "
                          f"{[e.message for e in at.exception][:2]}")
