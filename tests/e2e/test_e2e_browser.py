"""Browser tests against a live ``streamlit run``: deep links, URL sync, permalink, downloads, log paste."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from tests.e2e.helpers import ROOT, shot, wait_for_app

pytestmark = pytest.mark.e2e
DEEP = "/?model=meta-llama/Llama-3.1-70B-Instruct&gpu=H100&tp=4"
CLI = [sys.executable, "-m", "calculators.cli", "capacity", "--model", "meta-llama/Llama-3.1-70B-Instruct",
       "--gpu", "H100", "--tensor-parallel-size", "4", "--seq-len-mean", "2300", "--json"]  # 2000 in + 300 out


def cli_doc() -> dict:
    out = subprocess.run(CLI, cwd=ROOT, capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout)


def metric(pg, label: str) -> str:
    box = pg.locator("[data-testid=stMetric]", has_text=label).first
    return box.locator("[data-testid=stMetricValue]").inner_text().strip()


def test_deep_link_matches_cli(page, server_url):
    page.goto(server_url + DEEP)
    wait_for_app(page)
    doc = cli_doc()
    assert metric(page, "GPU KV cache size") == f"{doc['kv_cache_tokens']:,}"
    assert metric(page, "Max concurrency at max_model_len") == f"{doc['max_concurrency']:.2f}x"
    assert metric(page, "KV cache per token per GPU") == f"{doc['kv_cache_bytes_per_token']:,}"
    rec = metric(page, "Recommended max_num_seqs")
    assert int(rec.replace(",", "")) <= doc["max_num_seqs_advice"]["recommended_max_num_seqs"]  # capped by the KV cache
    assert page.get_by_text(f"--max-num-seqs {rec.replace(',', '')} ").count() >= 1  # the serve line uses it
    shot(page, "overview")
    # the math's text is sent when its expander opens: 2 × (8 // 4) × 128 × 2 B × 80 layers = 81,920 B
    page.locator("summary", has_text="Show the math: KV cache per token").click()
    page.get_by_text("= 2 × 2 × 128 × 2 × 80 = 81,920 B").wait_for(timeout=15_000)


def test_widget_change_updates_url_and_survives_navigation(page, server_url):
    page.goto(server_url + DEEP)
    wait_for_app(page)
    box = page.locator(".st-key-tp input")
    box.fill("8")
    box.press("Enter")
    wait_for_app(page)
    page.wait_for_function("window.location.search.includes('tp=8')", timeout=15_000)
    assert parse_qs(urlparse(page.url).query)["tp"] == ["8"]
    page.get_by_role("link", name="KV cache & concurrency").click()
    wait_for_app(page)
    assert "tp=8" in page.url and "/kv_cache" in page.url
    assert metric(page, "KV cache per token per GPU") == "40,960"
    shot(page, "kv_cache")


def test_permalink_restores_page(page, server_url):
    page.goto(server_url + DEEP + "&util=0.85&max_len=32768")
    wait_for_app(page)
    tokens = metric(page, "GPU KV cache size")
    link = page.get_by_role("link", name="Permalink").get_attribute("href")
    assert "v=1" in link and "util=0.85" in link and "max_len=32768" in link
    query = link.split("?", 1)[1]
    fresh = page.context.new_page()
    fresh.goto(f"{server_url}/?{query}")
    wait_for_app(fresh)
    assert metric(fresh, "GPU KV cache size") == tokens
    fresh.close()


def test_json_download_equals_cli(page, server_url):
    page.goto(server_url + DEEP)
    wait_for_app(page)
    with page.expect_download() as info:
        page.get_by_role("button", name="Download JSON").click()
    text = Path(info.value.path()).read_text()
    assert json.loads(text) == cli_doc()
    out = subprocess.run(CLI, cwd=ROOT, capture_output=True, text=True, check=True, timeout=120).stdout
    assert text == out  # byte for byte


def test_pasted_log_is_read(page, server_url):
    page.goto(server_url + "/kv_cache?model=meta-llama/Llama-3.1-70B-Instruct&gpu=H100&tp=4")
    wait_for_app(page)
    area = page.locator(".st-key-log_text textarea")
    area.fill("INFO [gpu_worker.py:298] Available KV cache memory: 32.06 GiB\n"
              "INFO [kv_cache_utils.py:864] GPU KV cache size: 420,208 tokens\n"
              "INFO [kv_cache_utils.py:868] Maximum concurrency for 131,072 tokens per request: 3.21x\n")
    area.press("Control+Enter")
    wait_for_app(page)
    page.get_by_text("start-up line(s)").first.wait_for(timeout=15_000)
    assert page.get_by_text("GPU KV cache size: 420,208 tokens").count() >= 1
    shot(page, "kv_cache_log")


def test_catalog_view(page, server_url):
    page.goto(server_url + "/catalog")
    wait_for_app(page)
    assert page.locator("[data-testid=stDataFrame]").count() >= 1
    shot(page, "catalog")
