"""Load test: N concurrent sessions against a live ``streamlit run``, timed in Chromium.

    python benchmarks/load.py [--sessions 50] [--browsers K] [--duration-s 60] [--think-s 10]

Starts the app on 127.0.0.1 (a free port, headless, through ``timed_server.py``), opens one Chromium
with K contexts, each on a deep link, and N − K websocket sessions (``server_load.py``'s clients,
which ask the server for the same work without rendering). After ``--idle-s`` with every session
open and idle, each session changes ``tensor_parallel_size`` again and again for ``--duration-s``,
pausing a random think time between changes; Chromium times each change until the page has settled
(script not running, no skeletons, URL updated). Prints p50/p95 settle time, errors, the idle CPU,
the server's share of each change (request received to script finished), the CPU seconds the server
and the browsers spent per change, and the server's resident memory (VmRSS) per session.

Every session being Chromium (the default) puts the load generator on the server's machine: a
Streamlit page costs its browser about ten times the server's CPU per change, so on two cores the
settle time then mostly measures the other browsers. A few Chromium probes among websocket sessions
(``--browsers 5``) measure what one person sees while the server carries all N; ``--url`` drives a
server on another machine instead (start it there with ``timed_server.py`` to time its share), and
``--app benchmarks/floor_app.py`` serves a one-input page: the cost of Streamlit itself. It
stops by itself (a hard deadline) and always terminates the server it started.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.e2e.helpers import APP, live_server  # noqa: E402 (one server launcher)

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-renderer-backgrounding", "--disable-background-timer-throttling"]
POLL_MS = 50  # Playwright polls every animation frame by default: 50 such pollers would load the cores themselves
DEEP = "/?model=meta-llama/Llama-3.1-70B-Instruct&gpu=H100&tp=4&mean_len=2048"
SETTLED_JS = ("() => { const a = document.querySelector('[data-testid=stApp]'); return a && "
              "a.dataset.testConnectionState === 'CONNECTED' && a.dataset.testScriptState === 'notRunning' && "
              "document.querySelectorAll('[data-testid=stSkeleton]').length === 0 }")


def cpu_s(pid: int | None) -> float:
    """User + system CPU seconds of one process (from /proc/PID/stat; 0 when it is gone or not here)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def browser_cpu_s() -> float:
    """CPU seconds of every live Chromium process on the machine (the load generator's cost)."""
    total = 0.0
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                comm = (d / "comm").read_text().strip()
            except OSError:
                continue
            if comm.startswith(("chromium", "chrome")):
                total += cpu_s(int(d.name))
    return total


def rss_kib(pid: int | None) -> int:
    """Resident memory of one process [KiB] (0 when it is not on this machine)."""
    if pid is None:
        return 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def settle(page, timeout_ms: int) -> None:
    await page.wait_for_timeout(50)
    await page.wait_for_function(SETTLED_JS, timeout=timeout_ms, polling=POLL_MS)


async def open_session(browser, url: str, timeout_ms: int, stats: dict):
    ctx = await browser.new_context(viewport={"width": 1200, "height": 900})
    page = await ctx.new_page()
    t = time.perf_counter()
    try:
        await page.goto(url + DEEP, timeout=timeout_ms)
        await page.wait_for_selector(".st-key-tp input", timeout=timeout_ms)
        await settle(page, timeout_ms)
        stats["open_s"].append(time.perf_counter() - t)
    except Exception as exc:  # counted, not fatal: the figure we want is how many fail
        stats["errors"].append(f"open: {type(exc).__name__}: {str(exc)[:100]}")
    return ctx, page


async def drive(i: int, page, deadline: float, timeout_ms: int, think_s: float, stats: dict) -> None:
    """Change ``tensor_parallel_size`` until the deadline, pausing a random think time (exponential,
    mean ``think_s``, seeded per session) between changes, as a person reading the result would."""
    values = ["2", "8", "4"]
    k = i % 3
    rng = random.Random(i)
    await asyncio.sleep(think(rng, think_s, deadline))  # not in lockstep
    while time.monotonic() < deadline:
        value = values[k % 3]
        k += 1
        try:
            box = page.locator(".st-key-tp input")
            t = time.perf_counter()
            await box.fill(value)
            await box.press("Enter")
            await page.wait_for_function(f"window.location.search.includes('tp={value}') || "
                                         f"('{value}' === '1' && !window.location.search.includes('tp='))",
                                         timeout=timeout_ms, polling=POLL_MS)
            await settle(page, timeout_ms)
            stats["change_s"].append(time.perf_counter() - t)
            if await page.locator("[data-testid=stException]").count():
                stats["errors"].append("exception element on the page")
        except Exception as exc:
            stats["errors"].append(f"change: {type(exc).__name__}: {str(exc)[:100]}")
        await asyncio.sleep(think(rng, think_s, deadline))


def think(rng: random.Random, mean_s: float, deadline: float) -> float:
    """A think time: exponential with mean ``mean_s``, cut at the deadline (so the run ends on time).
    Also each session's first pause: the wait to a Poisson stream's next event is the same
    exponential, so the sessions start out of step as if they had been running already."""
    return max(0.0, min(rng.expovariate(1 / mean_s), deadline - time.monotonic()))


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


async def run(a: argparse.Namespace, url: str, pid: int, stats: dict) -> None:
    from playwright.async_api import async_playwright

    from benchmarks.server_load import Gate, run_session
    timeout_ms = int(a.timeout_s * 1000)
    n_ws = a.sessions - a.browsers
    gate = Gate(n_ws + 1, a.duration_s, pid, {})  # the wire sessions, and the browsers as one party
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=a.chromium, args=ARGS, headless=True)
        rss_before = stats["rss_before"] = rss_kib(pid)
        wire = asyncio.gather(*[run_session(a.browsers + i, url, gate, a, stats["wire"]) for i in range(n_ws)])
        sessions = []
        for start in range(0, a.browsers, a.open_batch):  # open in batches: 50 cold page loads at once time out
            n = min(a.open_batch, a.browsers - start)
            sessions += await asyncio.gather(*[open_session(browser, url, timeout_ms, stats) for _ in range(n)])
        while gate.left > 1:  # every wire session arrives at the gate once it has opened (or failed to)
            await asyncio.sleep(0.1)
        rss_open = stats["rss_open"] = rss_kib(pid)
        cpu0 = cpu_s(pid), browser_cpu_s()
        await asyncio.sleep(a.idle_s)
        stats["idle_cpu"] = (cpu_s(pid) - cpu0[0]) / a.idle_s, (browser_cpu_s() - cpu0[1]) / a.idle_s
        stats["drive_start_unix"] = time.time()
        cpu0 = cpu_s(pid), browser_cpu_s()
        deadline = await gate.arrive()
        await asyncio.gather(wire, *[drive(i, pg, deadline, timeout_ms, a.think_s, stats)
                                     for i, (_, pg) in enumerate(sessions)])
        rss_end = rss_kib(pid)
        stats["server_cpu_s"], stats["browser_cpu_s"] = cpu_s(pid) - cpu0[0], browser_cpu_s() - cpu0[1]
        for ctx, _ in sessions:
            await ctx.close()
        await browser.close()
    stats.update(rss_before=rss_before, rss_open=rss_open, rss_end=rss_end)


async def run_bounded(a: argparse.Namespace, url: str, pid: int, stats: dict) -> None:
    """The whole run under a hard deadline; on expiry the figures gathered so far are reported."""
    try:
        budget_s = a.duration_s + a.idle_s + a.open_budget_s + a.timeout_s + 30
        await asyncio.wait_for(run(a, url, pid, stats), timeout=budget_s)
    except TimeoutError:
        stats["errors"].append("hard deadline reached: figures are partial")
        stats["rss_end"] = rss_kib(pid)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--duration-s", type=float, default=60.0)
    ap.add_argument("--think-s", type=float, default=10.0,
                    help="mean pause between one session's changes (0.2 makes it a saturation test)")
    ap.add_argument("--idle-s", type=float, default=10.0,
                    help="time all sessions sit open and idle before driving, to measure their idle CPU")
    ap.add_argument("--open-batch", type=int, default=10, help="sessions opened at once")
    ap.add_argument("--timeout-s", type=float, default=60.0, help="per page load / per change")
    ap.add_argument("--open-budget-s", type=float, default=300.0, help="time allowed to open all sessions")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--url", help="drive a server already running elsewhere (e.g. http://host:8501) instead of "
                                  "starting one here; its CPU, memory and share are then not measured")
    ap.add_argument("--app", type=Path, default=APP, help="the Streamlit script to serve (benchmarks/floor_app.py: "
                    "the cost of Streamlit itself)")
    ap.add_argument("--browsers", type=int, help="how many of the sessions are Chromium (default: all); the "
                    "others speak Streamlit's websocket protocol (server_load.py), loading the server alike "
                    "without rendering, so that a few browsers measure the settle time a person would see")
    a = ap.parse_args()
    a.browsers = a.sessions if a.browsers is None else min(a.browsers, a.sessions)
    timing = Path(tempfile.mkstemp(prefix="llmcap-server-timing-")[1])
    launcher = [sys.executable, str(ROOT / "benchmarks" / "timed_server.py")]
    server = contextlib.nullcontext((a.url.rstrip("/"), None)) if a.url else \
        live_server(launcher, {"LLMCAP_SERVER_TIMING": str(timing)}, a.app)
    with server as (url, proc):
        t0 = time.monotonic()
        stats: dict = {"open_s": [], "change_s": [], "errors": [], "rss_before": 0, "rss_open": 0, "rss_end": 0}
        stats["wire"] = {"open_s": [], "change_s": [], "errors": stats["errors"]}
        asyncio.run(run_bounded(a, url, proc.pid if proc else None, stats))
        wall = time.monotonic() - t0
    server_s = [float(d) for t, d in (line.split() for line in timing.read_text().splitlines())
                if float(t) >= stats.get("drive_start_unix", float("inf"))]
    timing.unlink()
    report(a, stats, server_s, wall)
    return 0


def report(a: argparse.Namespace, stats: dict, server_s: list[float], wall: float) -> None:
    """Print the figures (see the module docstring)."""
    ch, op, wire = stats["change_s"], stats["open_s"], stats["wire"]
    opened = len(op) + len(wire["open_s"])
    where = f"server at {a.url}" if a.url else f"{os.cpu_count()} CPUs shared by the server and the browsers"
    print(f"app {a.app.name}, sessions {a.sessions}: {a.browsers} Chromium (opened {len(op)}), "
          f"{a.sessions - a.browsers} websocket (opened {len(wire['open_s'])}); duration {a.duration_s:.0f} s, "
          f"think time {a.think_s:g} s (mean), wall {wall:.0f} s, {where}")
    print(f"page open   : p50 {pct(op, .5):6.2f} s   p95 {pct(op, .95):6.2f} s")
    print(f"input change: {len(ch)} changes in Chromium, change -> settled page p50 {pct(ch, .5):6.2f} s   p95 "
          f"{pct(ch, .95):6.2f} s   mean {statistics.mean(ch) if ch else float('nan'):.2f} s")
    if wire["change_s"]:
        print(f"              {len(wire['change_s'])} changes on the wire, change -> script finished p50 "
              f"{pct(wire['change_s'], .5):6.2f} s   p95 {pct(wire['change_s'], .95):6.2f} s")
    if "idle_cpu" in stats:
        print(f"idle        : {opened} open sessions cost the browsers {stats['idle_cpu'][1]:.2f} cores and the "
              f"server {stats['idle_cpu'][0]:.2f} cores with no input changing")
    print(f"errors      : {len(stats['errors'])}" + "".join(f"\n    {e}" for e in stats["errors"][:8]))
    if a.url:
        print(f"browsers CPU: {stats.get('browser_cpu_s', float('nan')):.1f} s while driving; server share, CPU "
              "and memory not measured (the server runs elsewhere)")
        return
    print(f"server share: {len(server_s)} reruns, request received -> script finished p50 "
          f"{pct(server_s, .5):6.3f} s   p95 {pct(server_s, .95):6.3f} s (queueing included, browser rendering not)")
    n_all = len(ch) + len(wire["change_s"])
    if stats.get("server_cpu_s") is not None and n_all:
        server, browsers = stats["server_cpu_s"], stats["browser_cpu_s"]
        print(f"CPU while driving: server {server:.1f} s ({1e3 * server / n_all:.0f} ms per change)" +
              (f", browsers {browsers:.1f} s ({1e3 * browsers / len(ch):.0f} ms per browser change)" if ch else ""))
    stats["rss_open"] = stats["rss_open"] or stats["rss_end"]  # a run cut short before every session opened
    per = (stats["rss_open"] - stats["rss_before"]) / max(1, opened)
    print(f"server RSS  : {stats['rss_before'] / 1024:.0f} MiB before, {stats['rss_open'] / 1024:.0f} MiB with "
          f"sessions open ({per / 1024:.1f} MiB per session), {stats['rss_end'] / 1024:.0f} MiB at the end")

if __name__ == "__main__":
    sys.exit(main())
