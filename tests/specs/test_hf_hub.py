"""Models by Hugging Face repo id, fetched with huggingface_hub from a local stand-in for the Hub.

The server below answers ``/<org>/<name>/resolve/<revision>/<file>`` the way the Hub does for a small
(non-LFS) file: HEAD and GET with ``X-Repo-Commit``, ``ETag`` (the git blob sha1) and ``Content-Length``;
404 with ``X-Error-Code: RepoNotFound`` for an unknown repository and ``EntryNotFound`` for a missing
file; 401 with ``X-Error-Code: GatedRepo`` for a gated one without the right token. Nothing is mocked
inside huggingface_hub or llmcap: the library does its real HEAD/GET and writes its real cache.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import huggingface_hub.constants
import pytest

from calculators.cli.flags import resolve_model
from calculators.errors import InvalidInputError
from calculators.memory.kv_cache import kv_bytes_per_token
from calculators.specs.hf_hub import is_repo_id, model_from_hub

ROOT = Path(__file__).resolve().parents[2]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
TOKEN = "hf_test_token_for_the_gated_repo"

# 4 layers, 8 query heads, 2 KV heads, hidden 256 and no head_dim (so 256 / 8 = 32), bf16.
TINY = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256, "intermediate_size": 512,
        "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000,
        "max_position_embeddings": 2048, "torch_dtype": "bfloat16", "tie_word_embeddings": False,
        "attention_bias": False}
# K and V × 4 layers × 2 KV heads × head_dim 32 × 2 bytes (bf16) = 1,024 bytes per token.
TINY_KV_BYTES_PER_TOKEN = 2 * 4 * 2 * 32 * 2
REPOS: dict[str, dict[str, bytes]] = {
    "acme/tiny-llama": {"config.json": json.dumps(TINY, indent=2).encode()},
    "acme/tiny-llama-fp8": {"config.json": json.dumps(TINY).encode(),
                            "hf_quant_config.json": json.dumps({"producer": {"name": "modelopt"},
                                                                "quantization": {"quant_algo": "FP8"}}).encode()},
    "acme/gated": {"config.json": json.dumps(TINY).encode()},
    "acme/weights-only": {"model.safetensors": b"\0" * 8},
}
GATED = {"acme/gated"}


class HubHandler(BaseHTTPRequestHandler):
    """``/<org>/<name>/resolve/<revision>/<filename>``, HEAD and GET, as the Hub answers for a small file."""

    requests: list[str] = []

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
        self._answer(body=False)

    def do_GET(self) -> None:  # noqa: N802
        self._answer(body=True)

    def _answer(self, *, body: bool) -> None:
        HubHandler.requests.append(f"{self.command} {self.path}")
        parts = self.path.split("?")[0].strip("/").split("/")
        if len(parts) < 5 or parts[2] != "resolve":
            return self._error(404, "RepoNotFound", "Repository not found")
        repo, filename = f"{parts[0]}/{parts[1]}", "/".join(parts[4:])
        if repo not in REPOS:
            return self._error(404, "RepoNotFound", "Repository not found")
        if repo in GATED and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._error(401, "GatedRepo", f"Access to model {repo} is restricted. You must have access "
                                                 "to it and be authenticated to access it. Please log in.")
        if filename not in REPOS[repo]:
            return self._error(404, "EntryNotFound", f"{filename} does not exist on \"main\"")
        data = REPOS[repo][filename]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", '"' + hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() + '"')
        self.send_header("X-Repo-Commit", COMMIT)
        self.end_headers()
        if body:
            self.wfile.write(data)

    def _error(self, status: int, code: str, message: str) -> None:
        payload = json.dumps({"error": message}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        if code == "EntryNotFound":
            self.send_header("X-Repo-Commit", COMMIT)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - keep the test output quiet
        pass


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A local Hub on 127.0.0.1 (a thread, shut down after the test) and an empty HF_HOME under tmp_path."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), HubHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    HubHandler.requests = []
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE",
                 "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    # huggingface_hub reads HF_HUB_OFFLINE once, at import: where an earlier test in this process imported it
    # under conftest's HF_HUB_OFFLINE=1, its HTTP session would refuse to reach the local Hub
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_a_good_id_imports_into_the_hugging_face_cache(hub, tmp_path):
    m = model_from_hub("acme/tiny-llama")
    assert m.id == "acme/tiny-llama" and (m.num_hidden_layers, m.num_key_value_heads, m.head_dim) == (4, 2, 32)
    assert int(kv_bytes_per_token(m)) == TINY_KV_BYTES_PER_TOKEN == 1024
    assert "head_dim=32 (hidden_size / num_attention_heads)" in m.defaults_assumed
    assert m.quantization is None and COMMIT in m.source and m.source.startswith(hub)
    cached = tmp_path / "hf-home" / "hub" / "models--acme--tiny-llama" / "snapshots" / COMMIT / "config.json"
    assert json.loads(cached.read_text()) == TINY
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf-home"]  # nothing written anywhere else
    assert "HEAD /acme/tiny-llama/resolve/main/config.json" in HubHandler.requests


def test_resolve_model_uses_the_hub_only_for_ids_outside_the_catalog(hub):
    assert resolve_model("meta-llama/Llama-3.1-8B").num_hidden_layers == 32
    assert HubHandler.requests == []  # a catalog id never reaches the network
    assert resolve_model("acme/tiny-llama").id == "acme/tiny-llama"
    with pytest.raises(InvalidInputError, match="catalog model"):
        resolve_model("not an id")  # neither catalog, file nor org/name: the catalog's own message


def test_modelopt_hf_quant_config_is_read_when_present(hub):
    assert model_from_hub("acme/tiny-llama-fp8").quantization == "fp8"
    assert any("hf_quant_config.json" in r for r in HubHandler.requests)


def test_unknown_repo_says_so(hub):
    with pytest.raises(InvalidInputError) as e:
        model_from_hub("acme/no-such-model")
    assert e.value.field == "model"
    assert "no such model on the Hub; check the id or pass a config.json path" in str(e.value)


def test_repo_without_config_json(hub):
    with pytest.raises(InvalidInputError, match="has no config.json"):
        model_from_hub("acme/weights-only")


def test_gated_repo_without_token_says_set_hf_token(hub, monkeypatch):
    with pytest.raises(InvalidInputError) as e:
        model_from_hub("acme/gated")
    assert "gated model" in str(e.value) and "HF_TOKEN" in str(e.value)
    monkeypatch.setenv("HF_TOKEN", TOKEN)  # the library sends it as a Bearer token
    assert model_from_hub("acme/gated").num_hidden_layers == 4


def test_offline_with_an_empty_cache(hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InvalidInputError) as e:
        model_from_hub("acme/tiny-llama")
    assert "the Hub cannot be reached (offline?): pass a path to its config.json" in str(e.value)
    assert HubHandler.requests == []


def test_a_cached_id_works_offline_and_with_the_hub_gone(hub, monkeypatch):
    first = model_from_hub("acme/tiny-llama")
    seen = len(HubHandler.requests)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert model_from_hub("acme/tiny-llama") == first
    assert len(HubHandler.requests) == seen  # served from the cache, no request
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    assert model_from_hub("acme/tiny-llama").num_hidden_layers == 4
    with pytest.raises(InvalidInputError, match=r"cannot be reached \(offline\?\)"):
        model_from_hub("acme/tiny-llama-fp8")


def test_cli_capacity_json_by_hub_id(hub):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "calculators.cli", "capacity", "--model", "acme/tiny-llama",
                        "--gpu-memory-gib", "80", "--json"], capture_output=True, text=True, cwd=ROOT, env=env,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["model"] == "acme/tiny-llama" and doc["kv_cache_bytes_per_token"] == 1024
    assert "head_dim=32 (hidden_size / num_attention_heads)" in doc["defaults_assumed"]


@pytest.mark.parametrize("name, ok", [("google/gemma-3-27b-it", True), ("Qwen/Qwen3-8B", True), ("a/b", True),
                                      ("nope", False), ("a/b/c", False), ("org/-x", False), ("org/x--y", False),
                                      ("org/x..y", False), ("../etc", False), ("org/na me", False), ("/abs", False)])
def test_repo_id_shape(name, ok):
    assert is_repo_id(name) is ok


def test_a_local_model_folder_shaped_like_an_id_is_read_not_fetched(hub, tmp_path, monkeypatch):
    (tmp_path / "acme" / "tiny-llama").mkdir(parents=True)
    (tmp_path / "acme" / "tiny-llama" / "config.json").write_text(json.dumps({**TINY, "num_hidden_layers": 6}))
    monkeypatch.chdir(tmp_path)
    assert resolve_model("acme/tiny-llama").num_hidden_layers == 6
    assert HubHandler.requests == []
