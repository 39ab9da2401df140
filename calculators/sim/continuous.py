"""Continuous batching as vLLM V1 schedules it, one engine step at a time (docs/queueing.md §10).

Each step runs these named phases, in vLLM's order:

1. :meth:`ContinuousRun.admit_arrivals` — requests that arrived by now join the waiting queue (a request
   that could never fit in the KV cache is turned away) when the scheduler polls (:meth:`ContinuousRun.polls`:
   every step in vLLM; every ``k`` decode steps under SGLang's ``--scheduler-recv-interval k``);
2. :meth:`ContinuousRun.grow_decoders` — a decoding request crossing into a new KV block takes one,
   preempting the newest running request while none is free;
3. :meth:`ContinuousRun.continue_prefills` — running requests still in prefill get their next chunk of
   the ``max_num_batched_tokens`` budget (blocks first, preempting if needed);
4. :meth:`ContinuousRun.admit_waiting` — waiting requests start FCFS while ``max_num_seqs``, the token
   budget and free blocks allow; nothing is admitted in a step that preempted;
5. :meth:`ContinuousRun.take_step` — the step's time from the performance model (decode of the running
   batch plus the prefill chunks) advances the clock;
6. :meth:`ContinuousRun.retire_finished` and :meth:`ContinuousRun.finish_prefill_chunks` — decoders that
   produced their last token leave; prompts whose last chunk ran yield their first token.

Preemption is *by recompute*: the request's blocks are freed and it returns to the head of the queue
to prefill its prompt plus the tokens generated so far.
"""
from __future__ import annotations

import heapq
import math
from collections import deque

import pandas as pd

from calculators.perf.model import PerformanceModel, scheduler_recv_interval
from calculators.sim.policies import ContinuousBatching
from calculators.sim.results import RunRecord, requests_frame
from calculators.sim.step_table import StepTable
from calculators.sim.workload import Workload, initial_arrivals

UNLIMITED_BLOCKS = 1 << 62


class ContinuousRun:
    """The state of one run: per-request lists (indexed by request id), the queues and the clock.

    ``S`` counts engine steps; a decoder started at step ``s0`` has produced ``S − s0`` tokens since, so
    per-token work is never looped over: the step at which each decoder needs its next block or ends is
    kept in a heap (``block_due``, ``finish_due``), tagged with an ``epoch`` that preemption bumps.
    """

    def __init__(self, pm: PerformanceModel, wl: Workload, pol: ContinuousBatching, t_limit: float,
                 max_events: int):
        self.wl = wl
        n = self.n = wl.num_requests
        self.inp, self.out = wl.input_tokens.tolist(), wl.output_tokens.tolist()
        self.closed = wl.closed_loop is not None
        self.overhead = float(pm.request_overhead_s)
        self.recv_interval = self.recv_count = scheduler_recv_interval(pm)  # the first loop polls
        self.block_size, self.budget_max, self.max_seqs = pol.block_size, pol.max_num_batched_tokens, pol.max_num_seqs
        self.num_blocks = pol.num_blocks if pol.num_blocks is not None else UNLIMITED_BLOCKS
        self.limited = pol.num_blocks is not None
        self.free = self.num_blocks
        hit = pol.prefix_cache_hit_rate
        self.cached = [min(int(hit * x), x - 1) for x in self.inp] if hit > 0 else None
        self.table = StepTable(pm, int((wl.input_tokens + wl.output_tokens).max()), self.budget_max,
                               mean_context=float((wl.input_tokens + wl.output_tokens / 2).mean()),
                               mean_prompt=float(wl.input_tokens.mean()))
        self.t_limit, self.max_events = t_limit, max_events
        nan = math.nan
        self.arrival, self.sched, self.first, self.finish = [nan] * n, [nan] * n, [nan] * n, [nan] * n
        self.npre, self.rejected = [0] * n, [False] * n
        self.computed, self.target, self.gen = [0] * n, list(self.inp), [0] * n
        self.s0, self.blocks, self.epoch = [0] * n, [0] * n, [0] * n
        self.arrivals, self.next_id = initial_arrivals(wl)
        self.running: dict[int, bool] = {}     # insertion-ordered: the newest is preempted first
        self.prefilling: dict[int, bool] = {}
        self.waiting: deque[int] = deque()
        self.finish_due: list[tuple[int, int, int]] = []
        self.block_due: list[tuple[int, int, int]] = []
        self.n_dec = self.sum_ctx = 0
        self.area = 0.0  # ∫ (waiting + running) dt, for Little's law
        self.S, self.t, self.events, self.done, self.preemptions = 0, 0.0, 0, 0, 0
        self.steps: list[tuple[float, float, int, int, int, int, int]] = []
        self.stop = "completed"

    # ----------------------------------------------------------------- the loop

    def run(self) -> RunRecord:
        """Step until every request is served, the clock passes ``t_limit`` or ``max_events`` steps ran.

        Each phase is guarded by its cheap "anything due?" test here, so an idle phase costs no call.
        """
        arrivals, block_due, finish_due = self.arrivals, self.block_due, self.finish_due
        while True:
            if self.polls() and arrivals and arrivals[0][0] <= self.t:
                self.admit_arrivals()
            preempted = bool(block_due) and block_due[0][0] <= self.S and self.grow_decoders()
            budget = self.budget_max - self.n_dec
            chunks, budget, stalled = self.continue_prefills(budget) if self.prefilling else ([], budget, False)
            preempted = preempted or stalled
            if not preempted and self.waiting:
                self.admit_waiting(chunks, budget)
            if self.n_dec == 0 and not chunks:
                if preempted:  # everything running was preempted: admit again at once
                    continue
                if not arrivals:
                    if self.done < self.n:
                        raise RuntimeError("simulator stalled with requests left")  # a bug guard
                    break
                if not self.idle_until_next_arrival():
                    break
                continue
            self.take_step(chunks)
            self.recv_count += self.recv_interval if chunks else 1
            if finish_due and finish_due[0][0] <= self.S:
                self.retire_finished()
            if chunks:
                self.finish_prefill_chunks(chunks)
            self.S += 1
            self.events += 1
            if self.stopped():
                break
        return self.record()

    def stopped(self) -> bool:
        """After a step: all served, past the time limit, or out of events (and why)."""
        if self.done >= self.n:
            return True
        if self.t > self.t_limit:
            self.stop = "duration"
            return True
        if self.events >= self.max_events:
            self.stop = "max_events"
            return True
        return False

    # ----------------------------------------------------------------- 1. arrivals

    def polls(self) -> bool:
        """Whether the scheduler takes in new requests before this step: after ``k`` decode steps since its last
        poll, at once after a step with prompt tokens or while idle (SGLang's ``SchedulerRecvSkipper``,
        https://github.com/sgl-project/sglang/blob/70310f051068e3ea8dbaaecd4e408919cd431417/python/sglang/srt/managers/scheduler_recv_skipper.py;
        ``k`` = 1 polls every step, as vLLM does)."""
        if self.recv_count < self.recv_interval:
            return False
        self.recv_count = 0
        return True

    def admit_arrivals(self) -> None:
        """Arrivals up to now join the queue; one whose KV blocks exceed the whole cache is rejected."""
        t, arrivals, bs = self.t, self.arrivals, self.block_size
        while arrivals and arrivals[0][0] <= t:
            ta, i = heapq.heappop(arrivals)
            self.arrival[i] = ta
            if -(-(self.inp[i] + self.out[i]) // bs) > self.num_blocks:  # can never fit: turned away
                self.rejected[i] = True
                self.done += 1
                self.release_next_user(ta, i)
            else:
                self.area += t - ta  # in the system since ta, counted in the steps from t on
                self.waiting.append(i)

    def release_next_user(self, at: float, i: int) -> None:
        """Closed loop: request ``i``'s user sends the next request, which reaches the engine
        :meth:`~calculators.sim.workload.Workload.reissue_s` later."""
        if self.closed and self.next_id < self.n:
            heapq.heappush(self.arrivals, (at + self.wl.reissue_s(i, self.next_id, self.overhead), self.next_id))
            self.next_id += 1

    # ----------------------------------------------------------------- 2.–4. scheduling

    def grow_decoders(self) -> bool:
        """Decoders crossing into a new block take one; returns whether anything was preempted for it."""
        preempted = False
        due, S, running = self.block_due, self.S, self.running
        while due and due[0][0] <= S:
            _, i, ep = heapq.heappop(due)
            if ep != self.epoch[i]:
                continue
            while self.free < 1 and i in running:
                self.preempt(next(reversed(running)))
                preempted = True
            if i in running:
                self.free -= 1
                self.blocks[i] += 1
                heapq.heappush(due, (S + self.block_size, i, ep))
        return preempted

    def continue_prefills(self, budget: int) -> tuple[list[tuple[int, int]], int, bool]:
        """Next prompt chunk of each running prefill, within the token budget: ``(chunks, budget, preempted)``."""
        chunks: list[tuple[int, int]] = []
        preempted = False
        bs, running, computed, blocks = self.block_size, self.running, self.computed, self.blocks
        for i in list(self.prefilling):
            if budget <= 0:
                break
            if i not in running:
                continue
            c = min(self.target[i] - computed[i], budget)
            need = -(-(computed[i] + c) // bs) - blocks[i]
            while self.free < need and i in running:
                self.preempt(next(reversed(running)))
                preempted = True
            if i in running:
                self.free -= need
                blocks[i] += need
                chunks.append((i, c))
                budget -= c
        return chunks, budget, preempted

    def admit_waiting(self, chunks: list[tuple[int, int]], budget: int) -> None:
        """Start waiting requests FCFS while the sequence cap, the token budget and free blocks allow."""
        waiting, bs, cached = self.waiting, self.block_size, self.cached
        while waiting and budget > 0 and len(self.running) < self.max_seqs:
            i = waiting[0]
            c0 = cached[i] if (cached is not None and self.npre[i] == 0) else 0
            c = min(self.target[i] - c0, budget)
            need = -(-(c0 + c) // bs)
            if need > self.free:
                break
            waiting.popleft()
            self.computed[i] = c0
            self.running[i] = True
            self.prefilling[i] = True
            self.free -= need
            self.blocks[i] = need
            if math.isnan(self.sched[i]):
                self.sched[i] = self.t
            chunks.append((i, c))
            budget -= c

    def preempt(self, v: int) -> None:
        """Preempt request ``v`` by recompute: free its blocks, back to the head of the queue."""
        if v in self.prefilling:
            del self.prefilling[v]
        else:
            k = self.S - self.s0[v]
            self.gen[v] += k
            self.n_dec -= 1
            self.sum_ctx -= self.computed[v] + k
        self.target[v] = self.inp[v] + self.gen[v]
        self.computed[v] = 0
        self.release_blocks(v)
        del self.running[v]
        self.waiting.appendleft(v)
        self.npre[v] += 1
        self.preemptions += 1

    def release_blocks(self, i: int) -> None:
        self.free += self.blocks[i]
        self.blocks[i] = 0
        self.epoch[i] += 1  # its pending block_due / finish_due entries are stale now

    # ----------------------------------------------------------------- 5. the step

    def idle_until_next_arrival(self) -> bool:
        """Nothing to run: jump the clock to the next arrival; ``False`` when that passes the time limit."""
        t_next = max(self.t, self.arrivals[0][0])
        self.record_step(t_next - self.t, 0, 0)
        self.t = t_next
        self.recv_count = self.recv_interval  # an idle scheduler polls at once
        if self.t > self.t_limit:
            self.stop = "duration"
            return False
        return True

    def take_step(self, chunks: list[tuple[int, int]]) -> None:
        """One engine step: decode of the running batch at its mean context, plus the prompt chunks."""
        dt = 0.0
        if self.n_dec:
            dt = self.table.decode(self.n_dec, self.sum_ctx / self.n_dec + 1.0)
        prompt_tokens = 0
        for _, c in chunks:
            prompt_tokens += c
        if prompt_tokens:
            dt += self.table.added(self.n_dec, prompt_tokens)
        self.record_step(dt, len(self.running), prompt_tokens)
        self.t += dt
        self.sum_ctx += self.n_dec

    def record_step(self, dt: float, batch: int, prompt_tokens: int) -> None:
        queued = len(self.waiting)
        self.steps.append((self.t, dt, queued, batch, self.n_dec if batch else 0, prompt_tokens,
                           self.num_blocks - self.free))
        self.area += (queued + len(self.running)) * dt

    # ----------------------------------------------------------------- 6. after the step

    def retire_finished(self) -> None:
        """Decoders whose last token came out of this step leave the batch."""
        due, S = self.finish_due, self.S
        while due and due[0][0] <= S:
            _, i, ep = heapq.heappop(due)
            if ep != self.epoch[i]:
                continue
            self.n_dec -= 1
            self.sum_ctx -= self.computed[i] + S + 1 - self.s0[i]
            self.gen[i] = self.out[i]
            self.retire(i)

    def finish_prefill_chunks(self, chunks: list[tuple[int, int]]) -> None:
        """Chunks done; a prompt whose last chunk ran yields its first token and starts decoding."""
        S, computed = self.S, self.computed
        for i, c in chunks:
            computed[i] += c
            if computed[i] != self.target[i]:
                continue
            del self.prefilling[i]
            self.gen[i] += 1
            if math.isnan(self.first[i]):
                self.first[i] = self.t
            if self.gen[i] >= self.out[i]:
                self.retire(i)
                continue
            self.s0[i] = S + 1
            self.n_dec += 1
            self.sum_ctx += computed[i]
            ep = self.epoch[i]
            heapq.heappush(self.finish_due, (S + self.out[i] - self.gen[i], i, ep))
            heapq.heappush(self.block_due, (S + 1 + self.blocks[i] * self.block_size - computed[i], i, ep))

    def retire(self, i: int) -> None:
        """Request ``i`` is done: its blocks go back and, in a closed loop, its user thinks and sends again."""
        self.finish[i] = self.t
        self.release_blocks(i)
        del self.running[i]
        self.done += 1
        self.release_next_user(self.t, i)

    # ----------------------------------------------------------------- the record

    def record(self) -> RunRecord:
        ts = pd.DataFrame(self.steps, columns=["time_s", "dt_s", "queue_depth", "batch_size", "decoding",
                                               "prefill_tokens", "kv_blocks_used"])
        ts["kv_usage"] = ts["kv_blocks_used"] / self.num_blocks if self.limited else 0.0
        ts["in_system"] = ts["queue_depth"] + ts["batch_size"]
        ts.attrs["in_system_area"] = self.area
        itl = (ts["dt_s"].to_numpy(dtype=float), ts["decoding"].to_numpy(dtype=float))
        reqs = requests_frame(self.wl, self.arrival, self.sched, self.first, self.finish, self.npre, self.rejected,
                              self.overhead)
        return RunRecord(reqs, ts, itl, self.t, self.preemptions, self.stop)


def run_continuous(pm: PerformanceModel, wl: Workload, pol: ContinuousBatching, t_limit: float,
                   max_events: int) -> RunRecord:
    """Simulate ``wl`` under continuous batching; see :class:`ContinuousRun`."""
    return ContinuousRun(pm, wl, pol, t_limit, max_events).run()
