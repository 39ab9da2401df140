"""The drain of a finite closed-loop benchmark against values worked by hand and the list-scheduling bound."""
from __future__ import annotations

import heapq

import numpy as np
import pytest

from calculators.errors import InvalidInputError
from calculators.perf.benchmark_drain import _last_end, busy_share


def test_one_slot_or_one_length_never_idles():
    assert busy_share(1, 40, 0.0) == 1.0        # the one slot takes the next request as the last one ends
    assert busy_share(64, 640, 1.0) == 1.0      # requests alike finish together, every wave
    assert busy_share(16, 16, 1.0) == 1.0


def test_two_requests_on_two_slots_by_hand():
    """Lengths a, b uniform on (0, 1): the run lasts max(a, b) and the slots are busy a + b, so the share is
    E[(a + b) / (2 max(a, b))] = 1/2 + E[min/max] / 2 = 3/4 (min/max of two uniforms is itself uniform)."""
    assert busy_share(2, 2, 0.0) == pytest.approx(0.75, abs=0.02)


def test_one_wave_of_many_slots_is_busy_its_mean_over_its_longest():
    """256 requests on 256 slots, lengths uniform on (0, 1): Σ/(256·max) → 0.5 / E[max] = 0.5 · 257/256."""
    assert busy_share(256, 256, 0.0) == pytest.approx(0.5 * 257 / 256, abs=0.01)


def test_more_requests_per_slot_drain_a_smaller_share():
    """List scheduling ends at most one request after the work is spread evenly (Graham's bound), so with
    k requests per slot of mean length m the share is at least k·m / (k·m + 1); and it grows with k."""
    for k, low in ((2, 0.8), (10, 0.8), (5, 0.0)):
        m = (1 + low) / 2
        assert k * m / (k * m + 1) <= busy_share(64, 64 * k, low) < 1
    assert busy_share(64, 128, 0.8) < busy_share(64, 640, 0.8) < busy_share(64, 6400, 0.8)


def test_the_same_arguments_give_the_same_share():
    assert busy_share.__wrapped__(16, 160, 0.8) == busy_share.__wrapped__(16, 160, 0.8)


@pytest.mark.parametrize(("args", "field"), [((0, 10, 0.8), "concurrency"), ((4, 0, 0.8), "num_prompts"),
                                             ((4, 10, 1.5), "lengths_from"), ((4, 10, -0.1), "lengths_from")])
def test_bad_arguments_are_refused_by_name(args, field):
    with pytest.raises(InvalidInputError, match=field):
        busy_share(*args)


@pytest.mark.parametrize(("slots", "prompts", "lengths_from"), [(1, 5, 0.0), (2, 9, 0.0), (7, 100, 0.3),
                                                                (64, 640, 0.8), (300, 301, 0.0), (50, 50, 0.5)])
def test_batched_placement_ends_when_one_request_at_a_time_does(slots, prompts, lengths_from):
    """The batches place every request where greedy list scheduling does: checked against a heap that places
    them one at a time (the next request into the slot that frees first)."""
    durations = np.random.default_rng(7).uniform(lengths_from, 1.0, size=(5, prompts))
    expected = []
    for run in durations:
        free = list(run[:slots])
        heapq.heapify(free)
        for d in run[slots:]:
            heapq.heappush(free, heapq.heappop(free) + d)
        expected.append(max(free))
    assert _last_end(durations, min(slots, prompts)).tolist() == pytest.approx(expected, rel=1e-12)
