"""App speed: median AppTest rerun time per view, and the cold start of ``streamlit run`` to the
first rendered page in Debian's chromium. Prints a table; not a pass/fail test.

    .venv/bin/python benchmarks/app_speed.py [--reruns 15] [--cold-starts 3]

Targets: rerun ≤ 150 ms, cold start ≤ 5 s.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ENTRY = str(ROOT / "app" / "streamlit_app.py")
VIEWS = {"Overview": "views/overview.py", "KV cache & concurrency": "views/kv_cache.py", "Catalog": "views/catalog.py"}
QUERY = {"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "H100", "tp": "4"}


def rerun_times(view: str, reruns: int) -> list[float]:
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(ENTRY, default_timeout=60)
    for k, v in QUERY.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(view).run()
    assert not at.exception, at.exception
    out = []
    for i in range(reruns):
        # a real interaction each time: toggle gpu_memory_utilization so the scenario is recomputed
        at.number_input(key="util").set_value(0.9 if i % 2 else 0.89)
        t = time.perf_counter()
        at.run()
        out.append(time.perf_counter() - t)
    assert not at.exception, at.exception
    return out


MINIMAL_APP = """import streamlit as st
st.sidebar.number_input("tp", 1, 10, 1, key="tp")
st.title("Overview")
st.metric("x", "1")
"""


def cold_start_s(script: str | None = None) -> float | None:
    """Seconds from launching ``streamlit run`` to the first page fully rendered in chromium.

    ``script``: another app file (the baseline: a minimal app, to show this machine's floor).
    """
    import subprocess

    from tests.e2e.helpers import ARGS, CHROMIUM, free_port, start_server, wait_for_app
    if not Path(CHROMIUM).exists():
        return None
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page()
        port = free_port()
        t = time.perf_counter()
        if script is None:
            proc = start_server(port)
        else:
            proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port),
                                     "--server.address", "127.0.0.1", "--server.headless", "true",
                                     "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}/?model=meta-llama/Llama-3.1-70B-Instruct&gpu=H100&tp=4"
            while True:
                try:
                    page.goto(url, timeout=2000)
                    break
                except Exception:
                    if time.perf_counter() - t > 60:
                        raise
                    time.sleep(0.1)
            wait_for_app(page, 60_000)
            page.locator("[data-testid=stMetricValue]").first.wait_for(timeout=60_000)
            return time.perf_counter() - t
        finally:
            proc.terminate()
            proc.wait(10)
            browser.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reruns", type=int, default=15)
    ap.add_argument("--cold-starts", type=int, default=3)
    a = ap.parse_args()
    rows = []
    for name, view in VIEWS.items():
        times = rerun_times(view, a.reruns)
        rows.append((f"AppTest rerun: {name}", statistics.median(times) * 1000, "ms", 150))
    colds = [c for c in (cold_start_s() for _ in range(a.cold_starts)) if c is not None]
    if colds:
        rows.append((f"cold start to first page (median of {len(colds)})", statistics.median(colds), "s", 5))
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            base = Path(d) / "minimal_app.py"
            base.write_text(MINIMAL_APP)
            floor = [cold_start_s(str(base)) for _ in range(a.cold_starts)]
        rows.append(("  baseline: a 4-line Streamlit app, same machine", statistics.median(floor), "s", 5))
    else:
        rows.append(("cold start to first page", float("nan"), "s (chromium missing)", 5))
    print(f"{'measure':48s} {'median':>10s}  unit   target")
    for name, value, unit, target in rows:
        ok = "ok" if value <= target else "OVER"
        print(f"{name:48s} {value:10.1f}  {unit:5s}  ≤{target} {ok}")


if __name__ == "__main__":
    main()
