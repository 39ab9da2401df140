"""Imported by the e2e tests (not a conftest.py, so the top-level `from conftest import` keeps working).

A live ``streamlit run`` per xdist worker (free port) and Debian's chromium via Playwright."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
APP = ROOT / "app" / "streamlit_app.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, launcher: list[str] | None = None, env: dict | None = None,
                 app: Path = APP) -> subprocess.Popen:
    """``streamlit run`` of the app (``launcher``: another command that takes streamlit's arguments)."""
    cmd = [*(launcher or [sys.executable, "-m", "streamlit"]), "run", str(app),
           "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
           "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})


def wait_healthy(port: int, proc: subprocess.Popen, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("streamlit did not answer /_stcore/health in time")


@contextlib.contextmanager
def live_server(launcher: list[str] | None = None, env: dict | None = None, app: Path = APP):
    """``streamlit run`` on a free loopback port: yields (URL, process) and stops it afterwards."""
    port = free_port()
    proc = start_server(port, launcher, env, app)
    try:
        wait_healthy(port, proc)
        yield f"http://127.0.0.1:{port}", proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def server_url():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)")
    with live_server() as (url, _):
        yield url


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    pg = ctx.new_page()
    yield pg
    ctx.close()


def wait_for_app(page, timeout_ms: int = 30_000) -> None:
    """Streamlit's own wait: connected, script not running, no skeletons."""
    page.wait_for_timeout(250)
    page.wait_for_selector("[data-testid=stApp][data-test-connection-state=CONNECTED]", timeout=timeout_ms)
    page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]", timeout=timeout_ms)
    page.wait_for_function("document.querySelectorAll('[data-testid=stSkeleton]').length === 0", timeout=timeout_ms)
    page.wait_for_timeout(150)


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
