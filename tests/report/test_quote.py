"""The quote: escaped HTML, PDF, JSON and CSV of the ranked table."""
import csv
import io
import json

import pytest

from calculators.planning.fleet import Workload, plan_fleet
from calculators.report.quote import (
    neutralise_cell,
    pdf_text,
    quote_document,
    quote_html,
    quote_pdf,
    ranked_csv,
    ranked_json,
)
from calculators.specs.catalog import get_gpu, get_model

L70 = "meta-llama/Llama-3.1-70B-Instruct"
W = Workload(request_rate_per_s=40, input_len=2000, output_len=300, ttft_p99_s=1.0, tpot_p99_s=0.05)
EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def setup():
    m, gpus = get_model(L70), [get_gpu("H100")]
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


def test_html_has_chain_serve_line_and_permalink(setup):
    m, gpus, plans = setup
    link = "http://host/fleet?v=1&model=meta-llama%2FLlama-3.1-70B-Instruct&gpu=H100-SXM"
    doc = quote_document(m, gpus, W, plans, permalink=link, served_name=L70)
    text = quote_html(doc)
    best = plans[0]
    assert f"vllm serve {L70} --tensor-parallel-size {best.tensor_parallel_size}" in text
    assert "http://host/fleet?v=1&amp;model=" in text
    # the $/hour step with numbers substituted: GPUs × $/GPU-hour
    assert f"{best.total_gpus} × ${best.usd_per_gpu_hour:.2f} = ${best.usd_per_hour:,.2f}/hour" in text
    assert doc["date"] and any("datasheet" in s for s in doc["sources"])
    assert any("price" in s and "http" in s or "github.com" in s for s in doc["sources"])


def test_pdf(setup):
    m, gpus, plans = setup
    pdf = quote_pdf(quote_document(m, gpus, W, plans, customer="Ünïcode → ≤ 漢字 " + EVIL))
    assert pdf.startswith(b"%PDF")
    assert len(pdf) > 2000
    assert pdf_text("a → b ≤ c 漢") == "a -> b <= c ?"


def test_csv_neutralises_formulas(setup):
    _, _, plans = setup
    plans[0].message = "=HYPERLINK(\"http://evil\")"
    plans[1].message = "+1"
    plans[2].gpu = "@SUM(A1)"
    rows = list(csv.DictReader(io.StringIO(ranked_csv(plans))))
    assert rows[0]["message"].startswith("'=") and rows[1]["message"] == "'+1"
    assert rows[2]["gpu"] == "'@SUM(A1)"
    assert neutralise_cell("-2") == "'-2" and neutralise_cell(-2.0) == -2.0 and neutralise_cell("ok") == "ok"
    assert rows[0]["rank"] == "1" and len(rows) == len(plans)


def test_json_matches_plans(setup):
    m, _, plans = setup
    doc = json.loads(ranked_json(plans, model_id=L70, workload=W))
    assert doc["model"] == L70 and len(doc["layouts"]) == len(plans)
    first = doc["layouts"][0]
    assert (first["gpu"], first["total_gpus"], first["usd_per_hour"]) == (plans[0].gpu, plans[0].total_gpus,
                                                                          plans[0].usd_per_hour)
