"""Fleet planner in a browser: deep link, quote downloads (HTML and PDF), screenshot."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.helpers import shot, wait_for_app

pytestmark = pytest.mark.e2e
DEEP = ("/fleet?model=meta-llama/Llama-3.1-70B-Instruct&gpu=H100&in=2000&out=300&rate=40&ttft_ms=1000"
        "&tpot_ms=50")


def test_fleet_quote_downloads(page, server_url):
    page.goto(server_url + DEEP)
    wait_for_app(page, timeout_ms=120_000)
    page.get_by_text("Ranked layouts").first.wait_for(timeout=60_000)
    shot(page, "fleet")
    with page.expect_download(timeout=60_000) as info:
        page.get_by_role("button", name="Download quote (HTML)").click()
    text = Path(info.value.path()).read_text()
    assert "vllm serve meta-llama/Llama-3.1-70B-Instruct --" in text and "--max-num-seqs" in text
    assert "v=1&amp;model=meta-llama%2FLlama-3.1-70B-Instruct" in text and "rate=40" in text
    assert "fleet_layout=" in text and "Alternatives considered" not in text  # chosen layout alone, restorable
    with page.expect_download(timeout=60_000) as info:
        page.get_by_role("button", name="Download quote (PDF)").click()
    assert Path(info.value.path()).read_bytes().startswith(b"%PDF")
