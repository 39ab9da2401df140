"""A model by its Hugging Face repo id: its ``config.json`` fetched from the Hub and imported.

:func:`model_from_hub` downloads ``config.json`` (and ModelOpt's ``hf_quant_config.json`` where the
repository has one) with ``huggingface_hub.hf_hub_download``, into huggingface_hub's own cache and
nowhere else, and imports it with :mod:`calculators.specs.hf_config`. It follows the library's
settings, read when it is called: ``HF_ENDPOINT`` (a mirror), ``HF_HOME`` / ``HF_HUB_CACHE`` (the
cache), ``HF_TOKEN`` (gated and private repositories) and ``HF_HUB_OFFLINE=1`` (cache only). A file
already in the cache is used without the network when the Hub cannot be reached.

Every failure is one :class:`~calculators.errors.InvalidInputError` on the field ``model`` that says
what to do: an unknown repository, a gated one without access, no network and nothing cached.
Reaching the Hub is checked with one HEAD request without retries first, so a machine with no
network gets its answer at once rather than after the library's back-off (about 25 s).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from calculators.errors import InvalidInputError
from calculators.specs.hf_config import MAX_CONFIG_BYTES, model_from_config, parse_config_json, with_hf_quant_config
from calculators.specs.schema import ModelSpec

#: ``org/name`` as the Hub spells repo ids (huggingface_hub ``validate_repo_id``): letters, digits,
#: ``-``, ``_`` and ``.``, at most 96 characters a part, no ``--`` or ``..``, not starting or ending in ``-``/``.``.
_REPO_PART = r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
REPO_ID = re.compile(rf"{_REPO_PART}/{_REPO_PART}")
DEFAULT_ENDPOINT = "https://huggingface.co"
TIMEOUT_S = 10.0
OFFLINE = ("the Hub cannot be reached (offline?): pass a path to its config.json "
           "({file} of {repo} is not in the Hugging Face cache either)")
UNKNOWN = "no such model on the Hub; check the id or pass a config.json path (a private repository also needs HF_TOKEN)"
GATED_NO_TOKEN = ("gated model: set HF_TOKEN to a token of an account that has accepted its licence on "
                  "{endpoint}/{repo}, or pass a path to its config.json")
GATED_NO_ACCESS = ("gated model: the token in HF_TOKEN has no access; accept its licence on {endpoint}/{repo} "
                   "with that account, or pass a path to its config.json")


def is_repo_id(name: str) -> bool:
    """True for a string shaped like a Hugging Face repo id (``org/name``)."""
    return bool(REPO_ID.fullmatch(name)) and "--" not in name and ".." not in name


def hub_endpoint() -> str:
    """The Hub's address: ``HF_ENDPOINT`` when set (read now, as the library reads it at import)."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def hub_cache_dir() -> str:
    """huggingface_hub's cache folder, by the library's rule, read now: ``HF_HUB_CACHE``, else
    ``HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub`` (``HF_HOME`` defaults to ``$XDG_CACHE_HOME/huggingface``,
    that to ``~/.cache/huggingface``)."""
    env = os.environ
    xdg = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    home = os.path.expanduser(os.path.expandvars(env.get("HF_HOME") or os.path.join(xdg, "huggingface")))
    cache = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE") or os.path.join(home, "hub")
    return os.path.expanduser(os.path.expandvars(cache))


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` (or the older ``TRANSFORMERS_OFFLINE``) set to 1/ON/YES/TRUE."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return value.upper() in {"1", "ON", "YES", "TRUE"}


def config_from_hub(repo_id: str, *, revision: str = "main") -> tuple[dict[str, Any], str]:
    """``(config, source URL)`` of ``repo_id``: its ``config.json`` on the Hub (or in the local cache), with
    ``hf_quant_config.json`` folded in where that file holds the real weight format."""
    if not is_repo_id(repo_id):
        raise InvalidInputError("model", repo_id, "a Hugging Face repo id such as google/gemma-3-27b-it")
    path = Path(fetch_file(repo_id, "config.json", revision=revision))
    cfg = parse_config_json(_read(path, repo_id))
    if not (cfg.get("quantization_config") or _text_quantization(cfg)):
        quant = fetch_optional_file(repo_id, "hf_quant_config.json", revision=revision)
        if quant is not None:
            cfg = with_hf_quant_config(cfg, parse_config_json(_read(Path(quant), repo_id), name="hf_quant_config.json"))
    return cfg, f"{hub_endpoint()}/{repo_id}/blob/{path.parent.name}/config.json"


def model_from_hub(repo_id: str, *, revision: str = "main", **metadata: Any) -> ModelSpec:
    """Import the model ``repo_id`` from its ``config.json`` on the Hub (or in the local cache)."""
    cfg, source = config_from_hub(repo_id, revision=revision)
    metadata.setdefault("source", source)
    return model_from_config(cfg, id=repo_id, **metadata)


def _text_quantization(cfg: dict[str, Any]) -> bool:
    text = cfg.get("text_config")
    return isinstance(text, dict) and bool(text.get("quantization_config"))


def _read(path: Path, repo_id: str) -> bytes:
    size = path.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise InvalidInputError("model", repo_id, f"a {path.name} of at most 2 MB (it has {size} bytes)")
    return path.read_bytes()


def fetch_file(repo_id: str, filename: str, *, revision: str = "main") -> str:
    """Local path of ``filename`` of the model repository ``repo_id``, downloaded into the cache if needed."""
    path = _fetch(repo_id, filename, revision, optional=False)
    assert path is not None  # _fetch raises rather than give None for a required file
    return path


def fetch_optional_file(repo_id: str, filename: str, *, revision: str = "main") -> str | None:
    """Like :func:`fetch_file`; ``None`` when the repository has no such file (or it is not cached while offline)."""
    return _fetch(repo_id, filename, revision, optional=True)


def _fetch(repo_id: str, filename: str, revision: str, *, optional: bool) -> str | None:
    from huggingface_hub import errors, get_hf_file_metadata, hf_hub_url

    endpoint = hub_endpoint()
    reachable = not hub_offline()
    if reachable:
        try:
            get_hf_file_metadata(hf_hub_url(repo_id, filename, revision=revision, endpoint=endpoint),
                                 timeout=TIMEOUT_S)
        except errors.EntryNotFoundError:
            if optional:
                return None
            raise _explain(errors.EntryNotFoundError, repo_id, filename, endpoint) from None
        except errors.HfHubHTTPError as exc:
            if _status(exc) < 500:
                raise _explain(exc, repo_id, filename, endpoint) from None
            reachable = False  # the Hub is down: the cache may still have it
        except Exception:  # no HTTP answer at all (DNS, connection, TLS, proxy, timeout, offline mode)
            reachable = False
    try:
        return _download(repo_id, filename, revision, endpoint, local_only=not reachable)
    except errors.LocalEntryNotFoundError:
        if optional:
            return None
        raise InvalidInputError("model", repo_id, OFFLINE.format(file=filename, repo=repo_id)) from None
    except errors.EntryNotFoundError:
        if optional:
            return None
        raise _explain(errors.EntryNotFoundError, repo_id, filename, endpoint) from None
    except (errors.HfHubHTTPError, errors.OfflineModeIsEnabled) as exc:
        raise _explain(exc, repo_id, filename, endpoint) from None


def _download(repo_id: str, filename: str, revision: str, endpoint: str, *, local_only: bool) -> str:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    was_disabled = are_progress_bars_disabled()
    disable_progress_bars()  # no progress bar on stderr for a file of a few kilobytes
    try:
        return hf_hub_download(repo_id, filename, revision=revision, cache_dir=hub_cache_dir(), endpoint=endpoint,
                               local_files_only=local_only, etag_timeout=TIMEOUT_S)
    finally:
        if not was_disabled:
            enable_progress_bars()


def _status(exc: Any) -> int:
    response = getattr(exc, "response", None)
    return int(getattr(response, "status_code", 0) or 0)


def _explain(exc: Any, repo_id: str, filename: str, endpoint: str) -> InvalidInputError:
    """One message per way the Hub says no, naming what to do."""
    from huggingface_hub import errors, get_token

    kind = exc if isinstance(exc, type) else type(exc)
    status = 0 if isinstance(exc, type) else _status(exc)
    if issubclass(kind, errors.GatedRepoError) or (
            status in (401, 403) and not issubclass(kind, errors.RepositoryNotFoundError)):
        text = GATED_NO_ACCESS if get_token() else GATED_NO_TOKEN
        return InvalidInputError("model", repo_id, text.format(endpoint=endpoint, repo=repo_id))
    if issubclass(kind, errors.RepositoryNotFoundError):
        return InvalidInputError("model", repo_id, UNKNOWN)
    if issubclass(kind, errors.RevisionNotFoundError):
        return InvalidInputError("model", repo_id, "no such revision of this repository on the Hub")
    if issubclass(kind, errors.EntryNotFoundError):
        return InvalidInputError("model", repo_id, f"the repository has no {filename}: pass a path to its config.json")
    if issubclass(kind, errors.OfflineModeIsEnabled):
        return InvalidInputError("model", repo_id, OFFLINE.format(file=filename, repo=repo_id))
    return InvalidInputError("model", repo_id, f"the Hub answered HTTP {status or '?'} for {filename}; "
                                               "try again later or pass a path to its config.json")
