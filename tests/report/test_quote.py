"""The quote: the chosen layout first and alone, public sources, A4 width, a Unicode PDF, JSON and CSV."""
import csv
import io
import json
import re

import pytest

from calculators.errors import InvalidInputError
from calculators.perf.coefficients import load_fit
from calculators.perf.roofline import Efficiencies
from calculators.planning.costs import COST_LABELS
from calculators.planning.fleet import Workload, plan_fleet
from calculators.report.explain_fleet import efficiency_sources
from calculators.report.quote import (
    FONT_FILES,
    linkify,
    neutralise_cell,
    quote_document,
    quote_html,
    quote_pdf,
    ranked_csv,
    ranked_json,
    write_quote,
)
from calculators.specs.catalog import get_gpu, get_model

L70 = "meta-llama/Llama-3.1-70B-Instruct"
W = Workload(request_rate_per_s=40, input_len=2000, output_len=300, ttft_p99_s=1.0, tpot_p99_s=0.05)
EVIL = "<script>alert(1)</script>"
REPO_PATH = re.compile(r"(calculators|app|tests|shared|docs|benchmarks)/[\w./-]+\.(py|md|toml|json)")


@pytest.fixture(scope="module")
def setup():
    m, gpus = get_model(L70), [get_gpu("H100"), get_gpu("H200")]
    return m, gpus, plan_fleet(m, gpus, W, max_pp=1)


def test_html_escapes_every_free_text_field(setup):
    m, gpus, plans = setup
    doc = quote_document(m, gpus, W, plans, permalink="/?v=1&x=" + EVIL, served_name=EVIL, customer=EVIL,
                         prepared_by=EVIL, notes=EVIL, efficiency_source=EVIL)
    text = quote_html(doc)
    assert "<script" not in text.lower()
    assert "&lt;script&gt;" in text
    assert "<link" not in text and "http-equiv" not in text  # self-contained: inline CSS only
    assert "<style>" in text
    assert linkify('see https://x.org/a?b=1&c=2. "<b>"') == (
        'see <a href="https://x.org/a?b=1&amp;c=2">https://x.org/a?b=1&amp;c=2</a>. &quot;&lt;b&gt;&quot;')


def test_html_has_costs_chain_serve_line_and_permalink(setup):
    m, gpus, plans = setup
    link = "http://host/fleet?v=1&model=meta-llama%2FLlama-3.1-70B-Instruct&gpu=H100-SXM"
    doc = quote_document(m, gpus, W, plans, permalink=link, served_name=L70)
    text = quote_html(doc)
    best = plans[0]
    assert f"vllm serve {L70} --tensor-parallel-size {best.tensor_parallel_size}" in text
    assert f"--max-model-len {best.max_model_len}" in text
    assert "http://host/fleet?v=1&amp;model=" in text
    assert f"{best.total_gpus} × ${best.usd_per_gpu_hour:.2f} = ${best.usd_per_hour:,.2f}/hour" in text
    for label in COST_LABELS.values():  # every cost, each naming its tokens
        assert f"<th>{label}</th>" in text.replace("&#x27;", "'")
    assert f"${best.usd_per_month:,.2f}" in text
    assert "Sized on the model&#x27;s estimate" in text and "80 % band" in text
    # the headline gives the p99s the SLO was checked against
    assert f"p99 TTFT {best.ttft_p99_s * 1e3:,.1f} ms, p99 TPOT {best.tpot_p99_s * 1e3:,.1f} ms" in text


def test_html_chosen_first_alone_and_alternatives_only_when_asked(setup):
    m, gpus, plans = setup
    chosen = next(p for p in plans if p.fits and p is not plans[0])
    plain = quote_html(quote_document(m, gpus, W, plans, chosen=chosen))
    assert "Alternatives" not in plain and plans[0].message not in plain
    assert chosen.message in plain
    full = quote_html(quote_document(m, gpus, W, plans, chosen=chosen, include_alternatives=True))
    assert full.index(chosen.message) < full.index("Alternatives considered") < full.index("Sources")
    assert "<th>p99 TPOT</th>" in full and f"<td>{plans[0].tpot_p99_s * 1e3:,.1f} ms</td>" in full


def test_html_cites_public_sources_and_no_repository_paths(setup):
    m, gpus, plans = setup
    text = quote_html(quote_document(m, gpus, W, plans, include_alternatives=True, vllm_version="0.10.2"))
    own = re.sub(r"https?://[^\s\"<]+", "", text)  # public URLs may hold other projects' paths
    assert not REPO_PATH.search(own), REPO_PATH.search(own)
    for word in ("shared/", "seed", "issue"):
        assert word not in own.lower()
    assert 'href="https://github.com/vllm-project/vllm/releases/tag/v0.10.2"' in text
    assert 'href="https://www.nvidia.com/' in text  # a datasheet, clickable
    assert "method page “The performance model”" in text


def test_html_fits_a4_and_wraps_links(setup):
    m, gpus, plans = setup
    text = quote_html(quote_document(m, gpus, W, plans, permalink="/?" + "x=1&" * 300))
    assert "max-width:720px" in text and "overflow-wrap:anywhere" in text and "max-width:190mm" in text


def test_conservative_quote_says_so(setup):
    m, gpus, _ = setup
    plans = plan_fleet(m, gpus, W, max_pp=1, sizing="conservative")
    doc = quote_document(m, gpus, W, plans, sizing="conservative")
    assert doc["inputs"]["sizing"].startswith("conservative")
    assert doc["timing"][0].startswith("Conservative sizing") and "%" in doc["timing"][0]


def _pdf_text(pdf: bytes) -> str:
    pypdf = pytest.importorskip("pypdf")
    return "".join(p.extract_text() for p in pypdf.PdfReader(io.BytesIO(pdf)).pages)


def test_pdf_embeds_a_unicode_font_and_links(setup):
    m, gpus, plans = setup
    pdf = quote_pdf(quote_document(m, gpus, W, plans, customer="Ünïcode → ≤ × µ ≈ " + EVIL,
                                   permalink="https://host/fleet?v=1"))
    assert pdf.startswith(b"%PDF") and len(pdf) > 2000
    assert b"DejaVuSans" in pdf and b"FontFile2" in pdf  # the TrueType font is embedded
    assert b"/URI (https://www.nvidia.com/" in pdf and b"/URI (https://host/fleet?v=1)" in pdf  # clickable
    assert set(FONT_FILES.values()) == {"DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSansMono.ttf"}
    try:
        text = _pdf_text(pdf)
    except pytest.skip.Exception:
        return
    assert "λ" in text and "≤" in text and "×" in text


def test_write_quote_by_extension(setup, tmp_path):
    m, gpus, plans = setup
    doc = quote_document(m, gpus, W, plans)
    assert write_quote(doc, str(tmp_path / "q.html")) == "HTML"
    assert write_quote(doc, str(tmp_path / "Q.PDF")) == "PDF"
    assert (tmp_path / "Q.PDF").read_bytes().startswith(b"%PDF")
    with pytest.raises(InvalidInputError, match=r"\.html or \.pdf"):
        write_quote(doc, str(tmp_path / "q.docx"))


def test_csv_neutralises_formulas(setup):
    _, _, plans = setup
    plans = [p for p in plans]
    saved = [(p.message, p.gpu) for p in plans[:3]]
    plans[0].message = "=HYPERLINK(\"http://evil\")"
    plans[1].message = "+1"
    plans[2].gpu = "@SUM(A1)"
    rows = list(csv.DictReader(io.StringIO(ranked_csv(plans))))
    for p, (msg, gpu) in zip(plans, saved, strict=False):
        p.message, p.gpu = msg, gpu
    assert rows[0]["message"].startswith("'=") and rows[1]["message"] == "'+1"
    assert rows[2]["gpu"] == "'@SUM(A1)"
    assert neutralise_cell("-2") == "'-2" and neutralise_cell(-2.0) == -2.0 and neutralise_cell("ok") == "ok"
    assert rows[0]["rank"] == "1" and len(rows) == len(plans)
    assert set(COST_LABELS) | {"sizing", "tpot_band_high_s", "max_model_len"} <= set(rows[0])


def test_json_matches_plans(setup):
    m, _, plans = setup
    doc = json.loads(ranked_json(plans, model_id=L70, workload=W))
    assert doc["model"] == L70 and len(doc["layouts"]) == len(plans)
    first = doc["layouts"][0]
    assert (first["gpu"], first["total_gpus"], first["usd_per_hour"]) == (plans[0].gpu, plans[0].total_gpus,
                                                                          plans[0].usd_per_hour)
    assert set(COST_LABELS) <= set(first) and first["usd_per_month"] == pytest.approx(first["usd_per_hour"] * 730)


def test_sources_are_those_of_the_figures_shown(setup):
    m, gpus, plans = setup
    doc = quote_document(m, gpus, W, plans)
    chosen = doc["chosen"]["gpu"]
    cited = {g.id for g in gpus if any(s.startswith(f"{g.id} datasheet") for s in doc["sources"])}
    assert cited == {chosen}  # alternatives left out: their datasheets and prices too
    with_alternatives = quote_document(m, gpus, W, plans, include_alternatives=True)
    assert {g.id for g in gpus if any(s.startswith(f"{g.id} datasheet") for s in with_alternatives["sources"])} \
        == {g.id for g in gpus}


def test_quote_states_the_fitted_coefficients_of_the_chosen_gpu(setup):
    m, gpus, plans = setup
    doc = quote_document(m, gpus, W, plans)
    used = Efficiencies.fitted(get_gpu(doc["chosen"]["gpu"]), compute_dtype="bf16")     # a bf16 checkpoint
    line = next(s for s in doc["sources"] if "compute efficiency" in s)
    assert (f"compute efficiency {used.compute:.2f} (× {used.attention_compute_share:.2f} for attention's), "
            f"memory efficiency {used.memory:.2f}") in line
    # H100 or H200: both Hopper, a family with runs of its own
    assert "fitted on NVIDIA Hopper runs of the public measurement corpus" in line and "§11" in line


def test_a_gpu_without_runs_of_its_own_says_whose_efficiencies_it_takes():
    # No corpus run is on a T4 (NVIDIA Turing): it takes the reference set, and its source line says so.
    line = efficiency_sources(Efficiencies(), "fit", get_gpu("T4"))[1]
    assert "fitted on every GPU family's runs (none on NVIDIA Turing: the reference set)" in line
    assert Efficiencies.fitted(get_gpu("T4")).compute == pytest.approx(load_fit().shipped.reference.compute)


def test_a_quote_on_a_gpu_without_runs_states_the_family_bands():
    # A T4 quote: its bands are those measured with each GPU family left out of the fit, and it says so
    from calculators.perf.bands import load_bands
    m, t4 = get_model("meta-llama/Llama-3.2-1B"), get_gpu("T4")
    w = Workload(request_rate_per_s=1, input_len=256, output_len=64)
    plans = plan_fleet(m, [t4], w, max_pp=1)
    timing = quote_document(m, [t4], w, plans)["timing"]
    unseen = load_bands().unseen_family.tpot
    assert "For the T4, whose family has no runs" in timing[0]
    assert f"held on average {unseen.coverage:.0%} of the measurements of each GPU family left out" in timing[1]


def test_a_quote_on_own_efficiencies_states_no_band(setup):
    m, gpus, _ = setup
    own = Efficiencies(compute=0.5)
    plans = plan_fleet(m, gpus, W, max_pp=1, efficiencies=own)
    timing = quote_document(m, gpus, W, plans, efficiencies=own, efficiency_source="calibrated")["timing"]
    assert "no 80 % band" in timing[0] and timing[1].endswith("ms as sized")


def test_quote_states_the_coefficients_of_the_dtype_the_plan_ran_in(setup):
    # Planned with FP8 weights on H100s: the quote cites the family's 16-bit compute efficiency (attention's) and
    # the fitted FP8 share the linear layers' matmuls take of it; both read from the fit file as shipped.
    m, _, _ = setup
    h100 = get_gpu("H100")
    plans = plan_fleet(m, [h100], W, max_pp=1, quantization="fp8")
    assert {p.compute_dtype for p in plans if p.fits} == {"fp8"}
    line = next(s for s in quote_document(m, [h100], W, plans)["sources"] if "compute efficiency" in s)
    fit = load_fit().shipped
    hopper, share = fit.family["NVIDIA Hopper"].compute, fit.reference.fp8_compute_share
    attention = fit.reference.attention_compute_share
    assert (f"fp8 matmuls): compute efficiency {hopper:.2f} (× {share:.2f} for the fp8 matmuls, × {attention:.2f} "
            "for attention's)," in line)


def test_a_data_parallel_attention_quote_names_the_layout_and_its_assumption():
    """A DeepSeek-R1 quote whose chosen layout runs attention data-parallel says so in its table, its serve line
    (vLLM's data-parallel ranks) and its assumptions; a tensor-parallel quote does not carry that assumption."""
    from calculators.planning.fleet import Layout, plan_layout
    from calculators.report.quote import DP_ATTENTION_ASSUMPTION
    m, g = get_model("deepseek-ai/DeepSeek-R1"), get_gpu("H200-SXM")
    w = Workload(request_rate_per_s=20, input_len=2000, output_len=1000, tpot_p99_s=0.08)
    plans = [plan_layout(m, Layout(g, 8, 1, expert_parallel=True, dp_attention=dp), w, max_model_len=16_384)
             for dp in (True, False)]
    doc = quote_document(m, [g], w, plans, chosen=plans[0], include_alternatives=True)
    assert DP_ATTENTION_ASSUMPTION in doc["assumptions"] and "--data-parallel-size 8" in doc["vllm_serve"]
    page = quote_html(doc)
    assert "TP8×PP1 · DP attention" in page
    assert DP_ATTENTION_ASSUMPTION not in quote_document(m, [g], w, plans, chosen=plans[1])["assumptions"]
    assert "dp_attention" in ranked_csv(plans).splitlines()[0]


def test_a_quote_without_a_tpot_target_says_how_slowly_the_chosen_layout_streams(setup):
    m, gpus, _ = setup
    w = Workload(request_rate_per_s=40, input_len=2000, output_len=300, ttft_p99_s=1.0)
    plans = plan_fleet(m, gpus, w, max_pp=1)
    doc = quote_document(m, gpus, w, plans)
    chosen = doc["chosen"]
    assert doc["inputs"]["p99 TPOT target [ms]"] == "none"
    note = next(t for t in doc["timing"] if t.startswith("No TPOT target:"))
    assert f"p99 TPOT {chosen['tpot_p99_s'] * 1e3:,.1f} ms at batch {chosen['batch_size']:,}" in note
    assert "No TPOT target:" in quote_html(doc)
    assert not any(t.startswith("No TPOT target") for t in quote_document(m, gpus, W, plan_fleet(
        m, gpus, W, max_pp=1))["timing"])


def test_a_quote_states_what_the_public_runs_of_its_setup_measured():
    """DeepSeek-R1 on eight B200s at 7,000-token prompts: the public corpus ran that setup, so the quote lists, under
    the bands, its runs' held-out ratio per metric with their publishers; a calibration's quote lists none."""
    from calculators.perf.published_runs import published_runs
    from calculators.report.perf import published_run_text
    m, g = get_model("deepseek-ai/DeepSeek-R1"), get_gpu("B200")
    w = Workload(request_rate_per_s=2, input_len=7000, output_len=900)
    plans = plan_fleet(m, [g], w, max_pp=1)
    chosen = next(p for p in plans if p.fits and (p.tensor_parallel_size, p.dp_attention) == (8, False))
    doc = quote_document(m, [g], w, plans, chosen=chosen)
    entries = published_runs(m, "B200", 8, None, 7000)
    assert [e.metric for e in entries] == ["ttft", "tpot", "throughput"]
    heading = next(t for t in doc["timing"] if t.startswith("public runs of this setup"))
    assert "SemiAnalysis" in heading and "method page “The performance model”" in heading
    assert all(published_run_text(e.model_dump()) in doc["timing"] for e in entries)
    assert any(s.startswith("public serving runs: SemiAnalysis") and "https://" in s for s in doc["sources"])
    assert quote_pdf(doc)[:4] == b"%PDF"
    own = quote_document(m, [g], w, plans, chosen=chosen, efficiencies=Efficiencies(compute=0.3),
                         efficiency_source="my calibration")
    assert not any(t.startswith("public runs") for t in own["timing"])


def test_a_quote_without_public_runs_of_its_setup_states_those_of_its_gpu_family():
    """Qwen2.5-7B on L40S at 2,000 / 300 tokens: the corpus ran no such setup, so the quote states what every public
    run on Ada GPUs measured against the model, with their publishers among the sources."""
    from calculators.perf.published_runs import family_runs
    from calculators.report.perf import published_run_text
    m, g = get_model("Qwen/Qwen2.5-7B-Instruct"), get_gpu("L40S")
    w = Workload(request_rate_per_s=2, input_len=2000, output_len=300)
    plans = plan_fleet(m, [g], w, max_pp=1)
    doc = quote_document(m, [g], w, plans)
    heading = next(t for t in doc["timing"] if t.startswith("no public run of this setup"))
    assert "public runs on NVIDIA Ada GPUs" in heading and "(3 sources" in heading
    assert all(published_run_text(e.model_dump()) in doc["timing"] for e in family_runs(g))
    assert any(s.startswith("public serving runs: TechBroMoho") for s in doc["sources"])
