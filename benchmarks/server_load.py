"""Server capacity: N concurrent sessions that speak Streamlit's websocket protocol, no browser.

    python benchmarks/server_load.py [--sessions 50] [--duration-s 60] [--think-s 0.2]

``load.py`` drives real Chromium sessions, but on a small machine those browsers use most of the CPU
themselves. Here each session is a websocket client doing what the browser does on the wire: it asks
for the deep link's first run, reads the widgets the server sends, then changes
``tensor_parallel_size`` (sending the number inputs' states with it; the other widgets keep the
values the server holds for the session) and waits for the script-finished message, with a random
think time (exponential, mean ``--think-s``) between changes.
The server does the same work as for a browser (script run, every delta serialised and sent); only
the rendering is missing. Prints p50/p95 time from sending a change to the server's script-finished
message, changes per second, errors, the server's CPU per change and its resident memory.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.load import cpu_s, pct, rss_kib, think  # noqa: E402
from tests.e2e.helpers import live_server  # noqa: E402

QUERY = "model=meta-llama/Llama-3.1-70B-Instruct&gpu=H100&tp=4&mean_len=2048"


class Session:
    """One browser tab on the wire: the query string and the number inputs' states it sends back."""

    def __init__(self, ws) -> None:
        self.ws, self.query, self.widgets, self.tp_id = ws, dict(parse_qsl(QUERY)), {}, None

    async def rerun(self, timeout_s: float) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        msg = BackMsg()
        msg.rerun_script.query_string = urlencode(self.query)
        for wid, (field, value) in self.widgets.items():
            state = msg.rerun_script.widget_states.widgets.add()
            state.id = wid
            setattr(state, field, value)
        await self.ws.send(msg.SerializeToString())
        await asyncio.wait_for(self._until_finished(), timeout_s)

    async def _until_finished(self) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        while True:
            fm = ForwardMsg.FromString(await self.ws.recv())
            kind = fm.WhichOneof("type")
            # a run cut short by a rerun (the start page's deep-link redirect) is followed by the real one
            if kind == "script_finished" and fm.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                return
            if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                self._read_widget(fm.delta.new_element)

    def _read_widget(self, element) -> None:
        kind = element.WhichOneof("type")
        if kind == "exception":
            raise RuntimeError(f"exception element: {element.exception.message[:100]}")
        w = getattr(element, kind)
        if not getattr(w, "id", ""):
            return
        if kind == "number_input":
            is_int = w.data_type == w.INT
            self.widgets[w.id] = ("int_value", int(w.default)) if is_int else ("double_value", w.default)
            if w.id.endswith("-tp"):
                self.tp_id = w.id
                if w.HasField("value"):
                    self.widgets[w.id] = ("int_value", int(w.value))


async def run_session(i: int, url: str, gate: Gate, a: argparse.Namespace, stats: dict) -> None:
    from websockets.asyncio.client import connect
    rng = random.Random(i)
    ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
    arrived = False
    try:
        async with connect(ws_url, subprotocols=["streamlit"], max_size=None, open_timeout=a.timeout_s) as ws:
            s = Session(ws)
            t = time.perf_counter()
            await s.rerun(a.timeout_s)
            stats["open_s"].append(time.perf_counter() - t)
            arrived, deadline = True, await gate.arrive()
            if s.tp_id is None:
                raise RuntimeError("no tensor_parallel_size widget in the first run")
            await asyncio.sleep(think(rng, a.think_s, deadline))
            k = i
            while time.monotonic() < deadline:
                value = (2, 8, 4)[k % 3]
                k += 1
                s.widgets[s.tp_id] = ("int_value", value)
                s.query["tp"] = str(value)
                t = time.perf_counter()
                try:
                    await s.rerun(a.timeout_s)
                    stats["change_s"].append(time.perf_counter() - t)
                except (TimeoutError, RuntimeError) as exc:
                    stats["errors"].append(f"change: {type(exc).__name__}: {exc}"[:120])
                await asyncio.sleep(think(rng, a.think_s, deadline))
    except Exception as exc:  # counted, not fatal: the figure we want is how many fail
        stats["errors"].append(f"session {i}: {type(exc).__name__}: {exc}"[:120])
        if not arrived:  # a session that failed to open must not hold the others at the gate
            await gate.arrive()


class Gate:
    """Every session opens first; the timed phase (and the CPU count) starts when the last has."""

    def __init__(self, n: int, duration_s: float, pid: int, stats: dict) -> None:
        self.left, self.duration_s, self.pid, self.stats, self.open = n, duration_s, pid, stats, asyncio.Event()

    async def arrive(self) -> float:
        self.left -= 1
        if self.left == 0:
            self.stats["cpu0"], self.stats["rss_open"] = cpu_s(self.pid), rss_kib(self.pid)
            self.deadline = time.monotonic() + self.duration_s
            self.open.set()
        await self.open.wait()
        return self.deadline


async def drive(a: argparse.Namespace, url: str, pid: int, stats: dict) -> None:
    stats["rss_before"] = rss_kib(pid)
    gate = Gate(a.sessions, a.duration_s, pid, stats)
    await asyncio.gather(*[run_session(i, url, gate, a, stats) for i in range(a.sessions)])
    stats["server_cpu_s"], stats["rss_end"] = cpu_s(pid) - stats["cpu0"], rss_kib(pid)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--duration-s", type=float, default=60.0)
    ap.add_argument("--think-s", type=float, default=0.2, help="mean pause between one session's changes")
    ap.add_argument("--timeout-s", type=float, default=30.0, help="per run")
    a = ap.parse_args()
    stats: dict = {"open_s": [], "change_s": [], "errors": [], "cpu0": 0.0, "rss_open": 0, "rss_end": 0}
    with live_server() as (url, proc):
        t0 = time.monotonic()
        asyncio.run(asyncio.wait_for(drive(a, url, proc.pid, stats), a.duration_s + 2 * a.timeout_s + 30))
        wall = time.monotonic() - t0
    ch = stats["change_s"]
    print(f"sessions {a.sessions} (websocket clients, no browser), duration {a.duration_s:.0f} s, think time "
          f"{a.think_s:g} s (mean), wall {wall:.0f} s, {os.cpu_count()} CPUs")
    print(f"first run   : p50 {pct(stats['open_s'], .5):6.3f} s   p95 {pct(stats['open_s'], .95):6.3f} s")
    print(f"input change: {len(ch)} changes ({len(ch) / a.duration_s:.1f}/s), change -> script finished p50 "
          f"{pct(ch, .5):6.3f} s   p95 {pct(ch, .95):6.3f} s")
    if ch:
        cpu = stats["server_cpu_s"]
        print(f"server CPU  : {cpu:.1f} s ({1e3 * cpu / len(ch):.0f} ms per change)")
    print(f"errors      : {len(stats['errors'])}" + "".join(f"\n    {e}" for e in stats["errors"][:8]))
    per = (stats["rss_open"] - stats["rss_before"]) / 1024 / a.sessions
    print(f"server RSS  : {stats['rss_before'] / 1024:.0f} MiB before, {stats['rss_open'] / 1024:.0f} MiB with "
          f"{a.sessions} sessions open ({per:.1f} MiB per session), {stats['rss_end'] / 1024:.0f} MiB at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
