"""What public runs of the same setup (or, where none ran it, of the GPU's family) measured against the model: the
summary of hand-made held-out rows worked by hand, the lookup of a user's setup and GPU, the shipped file refused
when bad and kept current with the corpus."""
from __future__ import annotations

import pandas as pd
import pytest

from calculators.errors import InvalidInputError
from calculators.perf.coefficients import parse_toml_as
from calculators.perf.published_runs import (
    PUBLISHED_RUNS_FILE,
    FamilyRuns,
    PublishedRun,
    PublishedRunsFile,
    family_run_entries,
    family_runs,
    load_published_runs,
    prompt_bin,
    prompt_bin_label,
    published_run_entries,
    published_runs,
)
from calculators.perf.roofline import Efficiencies, Roofline
from calculators.report.perf import (
    family_published_runs,
    perf_document,
    published_ratios_text,
    published_run_text,
    published_runs_heading,
)
from calculators.specs.catalog import get_gpu, get_model


@pytest.mark.parametrize(("tokens", "bin_"), [(1, 0), (2048, 0), (2049, 1), (8192, 1), (8193, 2), (100_000, 2)])
def test_prompt_bins_hold_their_upper_edge(tokens, bin_):
    assert prompt_bin(tokens) == bin_
    assert prompt_bin_label(bin_) == ("≤ 2,048", "2,049–8,192", "> 8,192")[bin_]


def _loso(errors: list[float], **fields) -> pd.DataFrame:
    base = {"model_id": "meta-llama/Llama-3.1-8B", "catalog_gpu": "H100-SXM", "tp": 1, "pp": 1, "dp_attention": False,
            "quantization": None,
            "input_len": 1000, "metric": "ttft", "source_id": "a", "engine": "vllm"}
    return pd.DataFrame([base | fields | {"loso_error": e, "predicted_batch": float(4 * (i + 1))}
                         for i, e in enumerate(errors)])


def test_entries_summarise_each_setup_by_hand():
    """Five TTFT rows held out at −50 … −10 %: median −30 %, 10th percentile −50 + 0.4 × 10 = −46 %, 90th −14 %
    (linear between order statistics), 4–20 in flight; the same setup at TP 2, with data-parallel attention, over
    two pipeline stages or at 4,096-token prompts is an entry of its own, and with four rows it states no spread."""
    rows = pd.concat([
        _loso([-0.5, -0.4, -0.3, -0.2, -0.1]),
        _loso([0.1, 0.2, 0.3, 0.4], tp=2, source_id="b", engine="sglang"),
        _loso([0.05], input_len=4096), _loso([0.07], pp=2), _loso([0.09], tp=2, dp_attention=True),
    ])
    out = published_run_entries(rows, {"a": "Publisher A", "b": "Publisher B"})
    assert [(e.tensor_parallel_size, e.pipeline_parallel_size, e.dp_attention, e.prompt_bin, e.rows)
            for e in out] == [(1, 1, False, 0, 5), (1, 1, False, 1, 1), (1, 2, False, 0, 1), (2, 1, False, 0, 4),
                              (2, 1, True, 0, 1)]
    first, *_, tp2, _ = out
    assert (first.median_error, first.low_error, first.high_error) == pytest.approx((-0.3, -0.46, -0.14))
    assert (first.in_flight_min, first.in_flight_max, first.sources, first.weights) == (4, 20, ("Publisher A",), "none")
    assert (tp2.median_error, tp2.low_error, tp2.high_error) == (pytest.approx(0.25), None, None)
    assert (tp2.engines, tp2.sources) == (("sglang",), ("Publisher B",))


def test_family_entries_summarise_every_row_on_a_family_by_hand():
    """Six Hopper TTFT rows of two models, layouts, engines and sources are one entry: errors −60 … −10 %, median
    −35 %, 10th percentile −60 + 0.5 × 10 = −55 %, 90th −15 %; four Ada rows state no spread; a metric is an entry
    of its own."""
    rows = pd.concat([
        _loso([-0.6, -0.5, -0.4], gpu_family="NVIDIA Hopper"),
        _loso([-0.3, -0.2, -0.1], gpu_family="NVIDIA Hopper", model_id="Qwen/Qwen3-8B", tp=4, source_id="b",
              engine="sglang"),
        _loso([0.1, 0.2, 0.3, 0.4], gpu_family="NVIDIA Ada", catalog_gpu="L40S"),
        _loso([0.5], gpu_family="NVIDIA Ada", metric="tpot"),
    ])
    ada_tpot, ada_ttft, hopper = family_run_entries(rows, {"a": "Publisher A", "b": "Publisher B"})
    assert (hopper.gpu_family, hopper.metric, hopper.rows, hopper.models) == ("NVIDIA Hopper", "ttft", 6, 2)
    assert (hopper.median_error, hopper.low_error, hopper.high_error) == pytest.approx((-0.35, -0.55, -0.15))
    assert (hopper.sources, hopper.engines) == (("Publisher A", "Publisher B"), ("sglang", "vllm"))
    assert (ada_ttft.median_error, ada_ttft.low_error, ada_ttft.high_error) == (pytest.approx(0.25), None, None)
    assert (ada_tpot.metric, ada_tpot.rows, ada_tpot.median_error) == ("tpot", 1, 0.5)


def test_a_family_entry_reads_as_measured_over_predicted():
    """A model 25 % high on a family (error +0.25) means its runs measured 0.80 × its figure."""
    e = FamilyRuns(gpu_family="NVIDIA Ada", metric="ttft", rows=22, models=3, sources=("S", "T"),
                   engines=("trtllm", "vllm"), median_error=0.25, low_error=-0.2, high_error=0.6)
    assert (e.ratio, e.ratio_low, e.ratio_high) == pytest.approx((0.8, 1 / 1.6, 1.25))
    entry = e.model_dump()
    assert published_run_text(entry) == ("TTFT measured 0.80 × the model's figure at the median (10–90 %: "
                                         "0.62–1.25 ×): 22 rows of 3 models, trtllm, vllm")
    assert published_ratios_text([entry]) == "NVIDIA Ada, any setup: TTFT ×0.80 (22 rows)"
    assert published_runs_heading([entry]).startswith(
        "no public run of this setup; public runs on NVIDIA Ada GPUs, any model and layout (2 sources, listed on the "
        "Model accuracy page and by llmcap accuracy --by source), each predicted by the fit without its source")


def test_a_gpu_finds_its_familys_entries_in_metric_order():
    ada = family_runs(get_gpu("L40S"))
    assert [e.metric for e in ada] == ["ttft", "tpot", "throughput"]
    assert {e.gpu_family for e in ada} == {"NVIDIA Ada"}
    assert [e.metric for e in family_runs(get_gpu("H200"))] == ["ttft", "tpot", "throughput"]
    assert family_runs(get_gpu("T4")) == []          # a family without public runs: nothing to show
    own = Efficiencies(compute=0.3)
    assert family_published_runs(get_gpu("L40S"), own) == []   # the entries describe the shipped model only


def test_a_checkpoints_own_format_and_the_same_format_named_are_one_setup():
    """DeepSeek-R1's checkpoint is FP8: a row run as it is and one that names fp8 are the same weights."""
    rows = pd.concat([_loso([-0.2], model_id="deepseek-ai/DeepSeek-R1"),
                      _loso([-0.4], model_id="deepseek-ai/DeepSeek-R1", quantization="fp8")])
    (entry,) = published_run_entries(rows, {"a": "A"})
    assert (entry.weights, entry.rows, entry.median_error) == ("fp8", 2, pytest.approx(-0.3))


def test_the_text_states_measured_over_predicted():
    """A model 50 % low (predicted / measured − 1 = −0.5) means the runs measured 2 × its figure; the 10–90 %
    spread of the error, −60 … −40 %, is 2.50 … 1.67 × in the ratio (its order turned round)."""
    e = PublishedRun(model="m", gpu="g", tensor_parallel_size=8, pipeline_parallel_size=1, dp_attention=False,
                     weights="fp8", prompt_bin=1, metric="ttft", rows=12, sources=("S",), engines=("sglang", "trtllm"),
                     input_len_min=6553, input_len_max=7372, in_flight_min=1.0, in_flight_max=64.0,
                     median_error=-0.5, low_error=-0.6, high_error=-0.4)
    assert (e.ratio, e.ratio_low, e.ratio_high) == pytest.approx((2.0, 1 / 0.6, 2.5))
    assert published_run_text(e.model_dump()) == (
        "TTFT measured 2.00 × the model's figure at the median (10–90 %: 1.67–2.50 ×): 12 rows, prompts of "
        "6,553–7,372 tokens, 1–64 in flight, sglang, trtllm")


def test_a_table_cell_states_each_metrics_ratio_and_the_rows():
    """Runs that measured 2 × and 0.8 × the model's figures, the larger entry of 12 rows; no entry is "—"."""
    entries = [{"metric": "ttft", "ratio": 2.0, "rows": 12}, {"metric": "tpot", "ratio": 0.8, "rows": 9}]
    assert published_ratios_text(entries) == "TTFT ×2.00, TPOT ×0.80 (12 rows)"
    assert published_ratios_text([]) == "—"


def test_a_setup_finds_its_own_entries_in_metric_order():
    r1 = get_model("deepseek-ai/DeepSeek-R1")
    fp8 = published_runs(r1, "B200", 8, None, 7372)
    assert [e.metric for e in fp8] == ["ttft", "tpot", "throughput"]
    assert all((e.weights, e.prompt_bin, e.tensor_parallel_size) == ("fp8", 1, 8) for e in fp8)
    assert all(e.input_len_min > 2048 and e.input_len_max <= 8192 for e in fp8)
    nvfp4 = published_runs(r1, "B200", 8, "nvfp4", 7372)
    assert nvfp4 and all(e.weights == "nvfp4" for e in nvfp4)
    assert published_runs(r1, "B200", 2, None, 7372) == []                      # no such run: nothing to show
    assert published_runs(r1, "B200", 8, None, 7372, pipeline_parallel_size=2) == []


def test_the_perf_document_carries_them_for_the_shipped_model_only():
    r = Roofline(get_model("deepseek-ai/DeepSeek-R1"), get_gpu("B200"), 8)
    doc = perf_document(r, input_len=7372, output_len=922, concurrency=4)
    assert [e["metric"] for e in doc["published_runs"]] == ["ttft", "tpot", "throughput"]
    assert doc["published_runs"][0]["text"].startswith("TTFT measured ")
    own = Roofline(get_model("deepseek-ai/DeepSeek-R1"), get_gpu("B200"), 8, efficiencies=Efficiencies(compute=0.3))
    assert perf_document(own, input_len=7372, output_len=922, concurrency=4)["published_runs"] == []
    assert [e["gpu_family"] for e in doc["family_runs"]] == ["NVIDIA Blackwell"] * 3
    assert perf_document(own, input_len=7372, output_len=922, concurrency=4)["family_runs"] == []


def test_a_bad_entry_is_refused_with_its_field():
    text = ('written = "2026-12-05"\nfit = "2026-12-05"\ncorpus = "c"\nmethod = "m"\n\n[[run]]\n'
            'model = "m"\ngpu = "g"\ntensor_parallel_size = 1\npipeline_parallel_size = 1\ndp_attention = false\n'
            'weights = "none"\nprompt_bin = 0\nmetric = "ttft"\n'
            'rows = 3\nsources = ["s"]\nengines = ["vllm"]\ninput_len_min = 10\ninput_len_max = 10\n'
            'in_flight_min = 1\nin_flight_max = 1\nmedian_error = -1.2\n')
    with pytest.raises(InvalidInputError) as e:
        parse_toml_as(PublishedRunsFile, text, PUBLISHED_RUNS_FILE)
    assert e.value.field == "published_runs.toml: run.0.median_error"


def test_the_shipped_file_is_current():
    """The file is what benchmarks/published_runs.py writes from today's corpus and the shipped fit's refits: its
    setup entries and its family entries."""
    from calculators.perf.accuracy import loso_rows, predict, shipped_refits
    from calculators.perf.comparable import comparable_rows
    from calculators.perf.measurements import load_sources
    pred = predict(comparable_rows())
    loso = loso_rows(pred, shipped_refits(pred))
    publishers = {s.source_id: s.publisher for s in load_sources().values()}
    shipped = load_published_runs()
    rounded = {"median_error", "low_error", "high_error", "in_flight_min", "in_flight_max",
               *PublishedRun.model_computed_fields}  # stored to 4 significant digits, or derived from those
    for stored, fresh in ((shipped.run, published_run_entries(loso, publishers)),
                          (shipped.family, family_run_entries(loso, publishers))):
        assert len(stored) == len(fresh)
        for a, b in zip(stored, fresh, strict=True):
            assert a.model_dump(exclude=rounded) == b.model_dump(exclude=rounded)
            assert a.median_error == pytest.approx(b.median_error, rel=5e-4)   # the file keeps 4 significant digits
