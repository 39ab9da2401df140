"""The three users' journeys end to end in Chromium, on a laptop (1280×800) and a phone (390×844) screen:
size a fleet, quote a configuration, check vLLM flags against a start-up log. Each step leaves a screenshot
in test-artifacts/screenshots/; no step may scroll the page sideways or show an error box."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.helpers import LOG_70B_TP4
from tests.e2e.helpers import shot, wait_for_app

pytestmark = pytest.mark.e2e
VIEWPORTS = {"laptop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(params=list(VIEWPORTS))
def screen(request, browser):
    """A page of the given size, and its name for the screenshots."""
    ctx = browser.new_context(viewport=VIEWPORTS[request.param], accept_downloads=True)
    pg = ctx.new_page()
    yield pg, request.param
    ctx.close()


def _step(pg, name: str) -> None:
    """After each step: the app has settled, nothing overflows sideways, no error box; a screenshot."""
    wait_for_app(pg, timeout_ms=120_000)
    width = pg.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert width <= 1, f"{name}: the page scrolls sideways by {width} px"
    assert pg.locator("[data-testid=stException]").count() == 0, name
    assert pg.locator("[data-testid=stAlertContentError]").count() == 0, name
    shot(pg, name)


def _start(pg, server_url: str, size: str, button: str) -> None:
    pg.goto(server_url + "/")
    _step(pg, f"{size}-0-start")
    assert pg.get_by_role("heading", name="LLM serving capacity planner").count() == 1
    pg.get_by_role("button", name=button).click()


def test_fleet_planner_journey(screen, server_url):
    pg, size = screen
    _start(pg, server_url, size, "Plan a fleet")
    pg.get_by_text("Ranked layouts").first.wait_for(timeout=120_000)
    _step(pg, f"{size}-fleet-1-plan")
    assert "/fleet" in pg.url and "rate=40" in pg.url  # the example's scenario, in the link
    assert pg.get_by_text("$/month (730 h)").count() >= 1 and pg.get_by_text("$/1M output tokens").count() >= 1


def test_sales_engineer_journey(screen, server_url):
    pg, size = screen
    _start(pg, server_url, size, "Build a quote")
    pg.get_by_text("Ranked layouts").first.wait_for(timeout=120_000)
    _step(pg, f"{size}-quote-1-plan")
    with pg.expect_download(timeout=60_000) as info:
        pg.get_by_role("button", name="Download quote (HTML)").click()
    html = Path(info.value.path()).read_text()
    assert "Qwen/Qwen2.5-32B" in html and "Alternatives considered" not in html
    assert "shared/" not in html and "calculators/" not in html and "v=1&amp;" in html
    quote = pg.context.new_page()  # the quote as the customer opens it: A4 width, nothing sideways
    quote.set_viewport_size(VIEWPORTS[size])
    quote.set_content(html)
    assert quote.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1
    shot(quote, f"{size}-quote-2-document")
    quote.close()
    with pg.expect_download(timeout=60_000) as info:
        pg.get_by_role("button", name="Download quote (PDF)").click()
    pdf = Path(info.value.path()).read_bytes()
    assert pdf.startswith(b"%PDF") and b"DejaVu" in pdf  # an embedded Unicode font: λ, ≤ and × print


def test_vllm_flags_journey(screen, server_url):
    pg, size = screen
    _start(pg, server_url, size, "Check vLLM flags")
    pg.locator(".st-key-log_text textarea").wait_for(timeout=60_000)
    _step(pg, f"{size}-flags-1-kv-cache")
    area = pg.locator(".st-key-log_text textarea")
    area.fill(LOG_70B_TP4.replace("INFO 09-10 12:00:01", "INFO 09-10 12:00:00 [core.py:1] Initializing a V1 LLM "
                                  "engine (v0.10.2) with config: model='meta-llama/Llama-3.1-70B-Instruct', "
                                  "tensor_parallel_size=4\nINFO 09-10 12:00:01", 1))
    area.press("Control+Enter")
    pg.get_by_text("This log looks like another setup").first.wait_for(timeout=60_000)
    _step(pg, f"{size}-flags-2-warning")
    pg.get_by_role("button", name="Switch the scenario to").click()
    pg.get_by_role("button", name="Use these numbers").wait_for(timeout=60_000)
    _step(pg, f"{size}-flags-3-switched")
    assert pg.get_by_text("This log looks like another setup").count() == 0
    pg.get_by_role("button", name="Use these numbers").click()
    wait_for_app(pg)
    pg.wait_for_function("window.location.search.includes('kv_mem=32.06')", timeout=30_000)
    pg.goto(server_url + "/overview?" + pg.url.split("?", 1)[1])
    _step(pg, f"{size}-flags-4-overview")
    # 32.06 GiB → floor(32.06 × 2^30 / (16 × 81,920 B)) × 16 = 420,208 tokens, as vLLM printed
    assert pg.get_by_text("420,208").count() >= 1
    assert pg.get_by_text("Recommended max_num_seqs", exact=True).count() == 1
