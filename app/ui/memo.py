"""One memo for every heavy result the pages show: shared between sessions when that is safe, per
session otherwise.

Shared (one bounded, process-wide LRU per result name) when the key holds nothing a user brought:
catalog GPUs and models exactly as the catalog has them, the default efficiencies, and plain numbers
and strings from the inputs. Any custom GPU or model, calibration, or an object of a type not listed
here keeps the result in ``st.session_state`` (the last few keys, compared with ``==``), so one
user's custom spec or measured profile can never be handed to another session.
"""
from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import streamlit as st
from pydantic import BaseModel

from app.ui import keys
from calculators.perf.roofline import Efficiencies
from calculators.scenario import Scenario
from calculators.specs.catalog import load_gpus, load_models
from calculators.specs.schema import GPUSpec, ModelSpec

SHARED_ENTRIES = 64    # per result name; measured: a 70B fleet plan list ~20 kB pickled, a capacity entry < 5 kB
SESSION_ENTRIES = 8


class _NotShareableError(Exception):
    pass


def _spec_key(x: Any) -> Hashable | None:
    """The key of a catalog spec, the efficiencies or a scenario; ``None`` when ``x`` is none of those.
    Raises ``_NotShareableError`` when it is one of them but user-provided."""
    if isinstance(x, GPUSpec):
        if load_gpus().get(x.id) != x:
            raise _NotShareableError
        return ("gpu", x.id)
    if isinstance(x, ModelSpec):
        if load_models().get(x.id) != x:
            raise _NotShareableError
        return ("model", x.id)
    if isinstance(x, Efficiencies):
        if not x.is_shipped():
            raise _NotShareableError
        return "default-efficiencies"
    if isinstance(x, Scenario):
        if x.calibration is not None:
            raise _NotShareableError
        return ("scenario", shared_key(x.model_dump()))
    return None


def shared_key(x: Any) -> Hashable:
    """A hashable form of ``x`` in which catalog specs are their ids; raises ``_NotShareableError`` when
    ``x`` holds anything user-provided (or of a type this function does not know)."""
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    spec = _spec_key(x)  # before the generic cases: specs are pydantic models, efficiencies a dataclass
    if spec is not None:
        return spec
    if isinstance(x, (list, tuple)):
        return tuple(shared_key(v) for v in x)
    if isinstance(x, dict):
        return tuple(sorted((str(k), shared_key(v)) for k, v in x.items()))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__,) + tuple(shared_key(getattr(x, f.name)) for f in dataclasses.fields(x))
    if isinstance(x, BaseModel):
        return (type(x).__name__, shared_key(x.model_dump()))
    raise _NotShareableError


class _LRU:
    """A small thread-safe LRU (Streamlit runs each session's script in its own thread)."""

    def __init__(self, size: int) -> None:
        self._size, self._items, self._lock = size, OrderedDict(), threading.Lock()

    def get(self, key: Hashable) -> tuple[bool, Any]:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return True, self._items[key]
        return False, None

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def keys(self) -> list[Hashable]:
        with self._lock:
            return list(self._items)


_SHARED: dict[str, _LRU] = {}
_SHARED_LOCK = threading.Lock()


def _shared(name: str) -> _LRU:
    with _SHARED_LOCK:
        return _SHARED.setdefault(name, _LRU(SHARED_ENTRIES))


def clear_shared() -> None:
    """Empty every shared memo (tests; a deploy restarts the process instead)."""
    with _SHARED_LOCK:
        _SHARED.clear()


def shared_keys(name: str | None = None) -> list[Hashable]:
    """The keys the shared memo ``name`` (every memo when ``None``) holds now: what the isolation
    tests inspect."""
    with _SHARED_LOCK:
        caches = list(_SHARED.values()) if name is None else [_SHARED[name]] if name in _SHARED else []
    return [k for c in caches for k in c.keys()]


def memoised(name: str, key: Any, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per distinct ``key``: across sessions when the key is shareable (see the
    module docstring), otherwise within this session. Results must be treated as read-only."""
    try:
        hkey = shared_key(key)
    except _NotShareableError:
        return _session_memo(name, key, compute)
    cache = _shared(name)
    hit, value = cache.get(hkey)
    if not hit:
        value = compute()
        cache.put(hkey, value)
    return value


def _session_memo(name: str, key: Any, compute: Callable[[], Any]) -> Any:
    memo: list = st.session_state.setdefault(keys.MEMO_PREFIX + name, [])
    for k, v in memo:
        if k == key:
            return v
    value = compute()
    memo.insert(0, (key, value))
    del memo[SESSION_ENTRIES:]
    return value
