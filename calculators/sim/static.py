"""Static (request-level) batching: whole batches padded to their longest request (docs/queueing.md §9).

A batch starts when ``max_batch_size`` requests wait or the oldest has waited ``max_wait_ms``
(:meth:`StaticRun.batch_start`); it takes waiting requests FCFS while the padded KV blocks fit
(:meth:`StaticRun.form_batch`), prefills every prompt padded to the longest and decodes, padded, until
its longest output is done (:meth:`StaticRun.serve_batch`). Requests return when the batch ends unless
``return_at_batch_end`` is off. The time series is kept as change events and summed at the end.
"""
from __future__ import annotations

import heapq
import math
from collections import deque

import numpy as np
import pandas as pd

from calculators.perf.model import PerformanceModel
from calculators.sim.continuous import UNLIMITED_BLOCKS
from calculators.sim.policies import StaticBatching
from calculators.sim.results import RunRecord, requests_frame
from calculators.sim.step_table import StepTable
from calculators.sim.workload import Workload, initial_arrivals


class StaticRun:
    """The state of one static-batching run: the queue, the clock and the change events."""

    def __init__(self, pm: PerformanceModel, wl: Workload, pol: StaticBatching, t_limit: float, max_events: int):
        self.pm, self.wl, self.pol = pm, wl, pol
        n = self.n = wl.num_requests
        self.inp, self.out = wl.input_tokens.tolist(), wl.output_tokens.tolist()
        self.closed = wl.closed_loop is not None
        self.overhead = float(pm.request_overhead_s)
        self.block_size, self.bmax, self.wait_s = pol.block_size, pol.max_batch_size, pol.max_wait_ms / 1e3
        self.num_blocks = pol.num_blocks if pol.num_blocks is not None else UNLIMITED_BLOCKS
        self.table = StepTable(pm, int((wl.input_tokens + wl.output_tokens).max()), 1)
        self.prefill_cache: dict[tuple[int, int], float] = {}
        self.t_limit, self.max_events = t_limit, max_events
        nan = math.nan
        self.arrival, self.sched, self.first, self.finish = [nan] * n, [nan] * n, [nan] * n, [nan] * n
        self.rejected = [False] * n
        self.arrivals, self.next_id = initial_arrivals(wl)
        self.waiting: deque[int] = deque()
        self.events_log: list[tuple[float, int, int, int]] = []  # (time, Δqueue, Δbatch, ΔKV blocks)
        self.itl_v: list[np.ndarray] = []
        self.itl_w: list[np.ndarray] = []
        self.t, self.events, self.done, self.stop = 0.0, 0, 0, "completed"

    def run(self) -> RunRecord:
        """Serve batch after batch until every request is served or a limit is reached."""
        while self.done < self.n:
            self.pull_arrivals(self.t)
            if not self.waiting:
                if not self.arrivals:
                    break
                self.t = self.arrivals[0][0]
                continue
            start = self.batch_start()
            if start > self.t_limit:
                self.stop = "duration"
                break
            self.serve_batch(self.form_batch(), start)
            if self.events >= self.max_events:
                self.stop = "max_events"
                break
            if self.t > self.t_limit:
                self.stop = "duration"
                break
        self.pull_arrivals(min(self.t, self.t_limit) if self.stop == "duration" else self.t)  # arrived meanwhile
        return self.record()

    def pull_arrivals(self, until: float, limit: int | None = None) -> None:
        """Arrivals up to ``until`` join the queue (at most ``limit`` waiting); impossible ones are rejected."""
        while self.arrivals and self.arrivals[0][0] <= until and (limit is None or len(self.waiting) < limit):
            ta, i = heapq.heappop(self.arrivals)
            self.arrival[i] = ta
            if -(-(self.inp[i] + self.out[i]) // self.block_size) > self.num_blocks:
                self.rejected[i] = True
                self.done += 1
                self.release_next_user(ta, i)
                continue
            self.waiting.append(i)
            self.events_log.append((ta, 1, 0, 0))

    def release_next_user(self, at: float, i: int) -> None:
        """Closed loop: request ``i``'s user sends the next request, which reaches the engine
        :meth:`~calculators.sim.workload.Workload.reissue_s` later."""
        if self.closed and self.next_id < self.n:
            heapq.heappush(self.arrivals, (at + self.wl.reissue_s(i, self.next_id, self.overhead), self.next_id))
            self.next_id += 1

    def batch_start(self) -> float:
        """When the next batch starts: at once when full, else when full or the oldest has waited enough."""
        if len(self.waiting) >= self.bmax:
            return self.t
        deadline = max(self.t, self.arrival[self.waiting[0]] + self.wait_s)
        self.pull_arrivals(deadline, self.bmax)
        return max(self.t, self.arrival[self.waiting[-1]]) if len(self.waiting) >= self.bmax else deadline

    def form_batch(self) -> list[int]:
        """Waiting requests FCFS while the batch, padded to its longest, fits in the KV cache."""
        batch: list[int] = []
        lin = lout = 0
        for i in self.waiting:
            li, lo = max(lin, self.inp[i]), max(lout, self.out[i])
            if len(batch) >= self.bmax or (len(batch) + 1) * -(-(li + lo) // self.block_size) > self.num_blocks:
                break
            batch.append(i)
            lin, lout = li, lo
        for _ in batch:
            self.waiting.popleft()
        return batch

    def serve_batch(self, batch: list[int], start: float) -> None:
        """Prefill padded to the longest prompt, then padded decode steps to the longest output."""
        k = len(batch)
        lin, lout = max(self.inp[i] for i in batch), max(self.out[i] for i in batch)
        steps = self.table.decode_many(k, lin + np.arange(1, lout, dtype=np.float64))
        cum = np.concatenate([[0.0], np.cumsum(steps)])
        t_first = start + self.prefill_s(lin, k)
        end = t_first + cum[-1]
        outs = np.asarray([self.out[i] for i in batch])
        self.itl_v.append(steps)
        self.itl_w.append(k - np.searchsorted(np.sort(outs), np.arange(2, lout + 1), side="left"))  # still going
        kv = k * -(-(lin + lout) // self.block_size)
        self.events_log += [(start, -k, k, kv), (end, 0, -k, -kv)]
        for i in batch:
            self.sched[i], self.first[i] = start, t_first
            self.finish[i] = end if self.pol.return_at_batch_end else t_first + cum[self.out[i] - 1]
            self.release_next_user(self.finish[i], i)
        self.done += k
        self.t = end
        self.events += 1 + k

    def prefill_s(self, prompt_tokens: int, batch: int) -> float:
        key = (prompt_tokens, batch)
        if key not in self.prefill_cache:
            self.prefill_cache[key] = float(np.ravel(self.pm.prefill_time_s(prompt_tokens, batch))[0])
        return self.prefill_cache[key]

    def record(self) -> RunRecord:
        end_t = min(self.t, self.t_limit) if self.stop == "duration" else self.t
        ts = self.timeseries(end_t)
        reqs = requests_frame(self.wl, self.arrival, self.sched, self.first, self.finish, [0] * self.n,
                              self.rejected, self.overhead)
        reqs.loc[reqs["finish_s"].to_numpy() > end_t, ["finish_s", "e2e_s", "tpot_s"]] = np.nan  # not yet back
        reqs["finished"] = np.isfinite(reqs["finish_s"].to_numpy())
        itl = (np.concatenate(self.itl_v) if self.itl_v else np.empty(0),
               np.concatenate(self.itl_w) if self.itl_w else np.empty(0))
        return RunRecord(reqs, ts, itl, end_t, 0, self.stop)

    def timeseries(self, end_t: float) -> pd.DataFrame:
        """The change events summed into queue depth, batch size and KV blocks over time, cut at ``end_t``."""
        ev = np.asarray(self.events_log, dtype=float).reshape(-1, 4)
        order = np.argsort(ev[:, 0], kind="stable")
        tt = ev[order, 0]
        ts = pd.DataFrame({"time_s": tt, "dt_s": np.diff(np.append(tt, max(self.t, tt[-1] if tt.size else self.t))),
                           "queue_depth": np.cumsum(ev[order, 1].astype(np.int64)),
                           "batch_size": np.cumsum(ev[order, 2].astype(np.int64)),
                           "kv_blocks_used": np.cumsum(ev[order, 3].astype(np.int64))})
        ts["kv_usage"] = ts["kv_blocks_used"] / self.num_blocks if self.pol.num_blocks is not None else 0.0
        ts["in_system"] = ts["queue_depth"] + ts["batch_size"]
        ts = ts[ts["time_s"] <= end_t].reset_index(drop=True)
        if len(ts):
            ts.loc[ts.index[-1], "dt_s"] = end_t - ts["time_s"].iloc[-1]
        return ts


def run_static(pm: PerformanceModel, wl: Workload, pol: StaticBatching, t_limit: float, max_events: int) -> RunRecord:
    """Simulate ``wl`` under static batching; see :class:`StaticRun`."""
    return StaticRun(pm, wl, pol, t_limit, max_events).run()
