"""The spec catalog: GPUs and models from ``calculators/data/*.toml``, validated on load, looked up by name.

GPUs are found by id, alias or the name the driver prints, ignoring case, spaces, ``-`` and ``_``;
models by Hugging Face repo id or alias, ignoring case. Unknown names get "did you mean …".
"""
from __future__ import annotations

import difflib
import re
import tomllib
from functools import lru_cache
from importlib.resources import files

from pydantic import ValidationError

from calculators.errors import InvalidInputError
from calculators.specs.hf_config import model_from_config
from calculators.specs.schema import GPUSpec, ModelSpec

DATA_DIR = files("calculators.data")
"""Where the catalog files live: inside the package, so a wheel ships them."""


class CatalogError(RuntimeError):
    """A data file is missing or invalid: the product cannot start without it."""


def _read(name: str) -> dict:
    path = DATA_DIR / name
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise CatalogError(f"data file {path} is missing") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CatalogError(f"data file {path} is not valid TOML: {exc}") from None


def _gpu_key(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name.lower())


def _model_key(name: str) -> str:
    return name.strip().lower()


@lru_cache(maxsize=1)
def load_gpus() -> dict[str, GPUSpec]:
    """Every GPU in ``calculators/data/gpus.toml`` by id (raises :class:`CatalogError` naming the file)."""
    rows = _read("gpus.toml").get("gpu", [])
    out: dict[str, GPUSpec] = {}
    for i, row in enumerate(rows):
        try:
            gpu = GPUSpec.from_datasheet(row)
        except (ValidationError, KeyError, TypeError) as exc:
            raise CatalogError(f"calculators/data/gpus.toml entry {i} ({row.get('id', '?')}): {exc}") from None
        out[gpu.id] = gpu
    return out


@lru_cache(maxsize=1)
def load_models() -> dict[str, ModelSpec]:
    """Every model in ``calculators/data/models.toml`` by id, each built by the ``config.json`` importer."""
    rows = _read("models.toml").get("model", [])
    out: dict[str, ModelSpec] = {}
    for i, row in enumerate(rows):
        row = dict(row)
        config = row.pop("config", None)
        try:
            model = model_from_config(config or {}, id=row.pop("id"), aliases=tuple(row.pop("aliases", ())), **row)
        except (InvalidInputError, KeyError, TypeError) as exc:
            raise CatalogError(f"calculators/data/models.toml entry {i} ({row.get('id', '?')}): {exc}") from None
        out[model.id] = model
    return out


@lru_cache(maxsize=1)
def _gpu_index() -> dict[str, str]:
    return {_gpu_key(n): g.id for g in load_gpus().values() for n in (g.id, g.name, *g.aliases)}


@lru_cache(maxsize=1)
def _model_index() -> dict[str, str]:
    return {_model_key(n): m.id for m in load_models().values() for n in (m.id, *m.aliases)}


def _did_you_mean(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.5)
    return f"did you mean {', '.join(close)}?" if close else "see `llmcap gpus` / `llmcap models` for the list"


def get_gpu(name: str) -> GPUSpec:
    """The catalog GPU called ``name`` (id, alias or driver name)."""
    gid = _gpu_index().get(_gpu_key(str(name)))
    if gid is None:
        names = [n for g in load_gpus().values() for n in (g.id, *g.aliases)]
        raise InvalidInputError("gpu", name, f"a known GPU; {_did_you_mean(str(name), names)}")
    return load_gpus()[gid]


def get_model(name: str) -> ModelSpec:
    """The catalog model called ``name`` (Hugging Face repo id or alias, any case)."""
    mid = _model_index().get(_model_key(str(name)))
    if mid is None:
        names = [n for m in load_models().values() for n in (m.id, *m.aliases)]
        raise InvalidInputError("model", name, f"a catalog model or a config.json; {_did_you_mean(str(name), names)}")
    return load_models()[mid]
