#!/usr/bin/env python3
"""Measure decode-step and prefill times of a model built from its config.json with random weights.

    python scripts/measure_decode.py CONFIG.json --batch 1 8 32 --context 512 4096 --prompt 512 2048 \\
        --out data/profiles/NAME.csv

Nothing is downloaded: a Llama-style decoder (GQA attention via scaled-dot-product attention, gated
MLP, RMSNorm) with the config's sizes is filled with random bf16 weights, and a KV cache of the
requested context is filled with random values. One decode step = one token for every sequence, its key
and value written in place into the cache's last slot, attending to ``context`` cached tokens (with
``--cuda-graphs`` replayed from a captured CUDA graph, as serving engines run decode steps); prefill = one
causal forward over the prompt. Times are medians of repeated runs after warm-up, synchronised on the GPU.
MoE and MLA layers are not modelled (the script refuses such configs). The output is the generic profile CSV
(docs/profile-formats.md §9) with the device, driver and library versions, so the
product imports it like any benchmark run; decode rows carry ``concurrency`` = batch and
``tpot_s_p50`` = step time, prefill rows ``ttft_s_p50`` = prefill time.

Needs PyTorch (an optional extra: ``pip install torch``).
"""
from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch.nn import functional as F  # noqa: N812 (the PyTorch convention)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from calculators.specs.hf_config import load_config_file  # noqa: E402


class Decoder(torch.nn.Module):
    """The per-layer weights of a dense decoder, random; the forward is written out below."""

    def __init__(self, spec, dtype: torch.dtype, device: str) -> None:
        super().__init__()
        h, d = spec.hidden_size, spec.head_dim
        q, kv, ffn = spec.num_attention_heads * d, spec.num_key_value_heads * d, spec.intermediate_size

        def w(*shape: int) -> torch.nn.Parameter:
            return torch.nn.Parameter(torch.randn(*shape, dtype=dtype, device=device) * 0.02, requires_grad=False)
        self.spec = spec
        self.embed = w(spec.vocab_size, h)
        self.layers = torch.nn.ModuleList()
        for _ in range(spec.num_hidden_layers):
            layer = torch.nn.Module()
            layer.qkv, layer.o = w(q + 2 * kv, h), w(h, q)
            layer.gate_up, layer.down = w(2 * ffn, h), w(h, ffn)
            layer.n1, layer.n2 = w(h), w(h)
            self.layers.append(layer)
        self.norm, self.lm_head = w(h), w(spec.vocab_size, h)

    def forward(self, tokens: torch.Tensor, cache: list[tuple[torch.Tensor, torch.Tensor]] | None) -> torch.Tensor:
        """Prefill (``cache`` None: causal over ``tokens``) or one decode step: each layer writes the new token's
        key and value into the last slot of its preallocated cache in place and attends over the whole cache, as a
        serving engine's paged cache does (no copy of the cache per step, and static shapes a CUDA graph can
        capture)."""
        s = self.spec
        b, t = tokens.shape
        x = F.embedding(tokens, self.embed)
        for i, layer in enumerate(self.layers):
            y = F.rms_norm(x, (s.hidden_size,), layer.n1)
            qkv = y @ layer.qkv.T
            q, k, v = qkv.split([s.num_attention_heads * s.head_dim, s.num_key_value_heads * s.head_dim,
                                 s.num_key_value_heads * s.head_dim], dim=-1)
            q = q.view(b, t, s.num_attention_heads, s.head_dim).transpose(1, 2)
            k = k.view(b, t, s.num_key_value_heads, s.head_dim).transpose(1, 2)
            v = v.view(b, t, s.num_key_value_heads, s.head_dim).transpose(1, 2)
            if cache is not None:
                cache[i][0][:, :, -1:].copy_(k)
                cache[i][1][:, :, -1:].copy_(v)
                k, v = cache[i]
            a = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None, enable_gqa=True)
            x = x + a.transpose(1, 2).reshape(b, t, -1) @ layer.o.T
            y = F.rms_norm(x, (s.hidden_size,), layer.n2)
            gate, up = (y @ layer.gate_up.T).chunk(2, dim=-1)
            x = x + (F.silu(gate) * up) @ layer.down.T
        return F.rms_norm(x[:, -1], (s.hidden_size,), self.norm) @ self.lm_head.T


def captured(step: Callable[[], object]) -> Callable[[], None]:
    """``step`` captured once in a CUDA graph (after two warm-up runs on a side stream, as PyTorch asks): the
    graph's replay, which launches the whole step at once as serving engines run their decode steps."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph.replay


def timed(model: Decoder, tokens: torch.Tensor, cache, device: str, repeats: int, graph: bool = False) -> float:
    """Median wall time of one forward [s] after two warm-up calls; with ``graph`` (CUDA only) each timed run
    replays the forward from a CUDA graph (:func:`captured`)."""
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def eager() -> None:
        model(tokens, cache)
    run = captured(eager) if graph else eager
    for _ in range(2):
        run()
    sync()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        sync()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def environment(device: str) -> dict[str, str]:
    """Device name, driver and library versions for the profile's provenance."""
    env = {"torch": torch.__version__, "device": "cpu"}
    if device.startswith("cuda"):
        env["device"] = torch.cuda.get_device_name(0)
        env["cuda"] = torch.version.cuda or ""
        try:
            env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                           capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            env["driver"] = "unknown"
    return env


def measure(spec, batches: list[int], contexts: list[int], prompts: list[int], device: str,
            repeats: int, graphs: bool = False) -> list[dict]:
    """Rows of the generic profile format: one per (batch, context) decode point (``graphs``: replayed from a
    CUDA graph) and per prompt."""
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    model = Decoder(spec, dtype, device)
    rows = []
    with torch.inference_mode():
        for b in batches:
            for ctx in contexts:
                cache = [tuple(torch.randn(b, spec.num_key_value_heads, ctx + 1, spec.head_dim, dtype=dtype,
                                           device=device) for _ in range(2)) for _ in range(spec.num_hidden_layers)]
                tokens = torch.randint(spec.vocab_size, (b, 1), device=device)
                step = timed(model, tokens, cache, device, repeats, graph=graphs)
                rows.append({"label": f"decode batch={b} context={ctx}", "concurrency": b,
                             "mean_input_tokens": ctx, "tpot_s_p50": step, "output_tokens_per_s": b / step})
                del cache
        for p in prompts:
            tokens = torch.randint(spec.vocab_size, (1, p), device=device)
            t = timed(model, tokens, None, device, repeats)
            rows.append({"label": f"prefill prompt={p}", "concurrency": 1, "mean_input_tokens": p, "ttft_s_p50": t})
    return rows


def write_csv(rows: list[dict], path: Path, *, model: str, env: dict[str, str], graphs: bool = False) -> None:
    columns = ["model", "gpu", "engine", "engine_version", "label", "concurrency", "mean_input_tokens",
               "output_tokens_per_s", "tpot_s_p50", "ttft_s_p50"]
    version = ", ".join(f"{k} {v}" for k, v in env.items() if k != "device")
    with path.open("w", newline="") as f:
        out = csv.DictWriter(f, columns)
        out.writeheader()
        for r in rows:
            engine = "pytorch-cuda-graphs" if graphs else "pytorch-eager"
            out.writerow({"model": model, "gpu": env["device"], "engine": f"{engine} (scripts/measure_decode.py)",
                          "engine_version": version, **r})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", help="a Hugging Face config.json")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8, 32, 128])
    ap.add_argument("--context", type=int, nargs="+", default=[512, 2048, 8192])
    ap.add_argument("--prompt", type=int, nargs="+", default=[128, 512, 2048])
    ap.add_argument("--layers", type=int, help="build only this many layers (time scales per layer)")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--cuda-graphs", action="store_true",
                    help="replay each decode step from a captured CUDA graph (CUDA only), as serving engines do")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    spec = load_config_file(a.config)
    if spec.is_moe or spec.is_mla:
        ap.exit(2, "measure_decode: MoE and MLA models are not modelled by this script\n")
    if a.layers:
        spec = spec.model_copy(update={"num_hidden_layers": a.layers, "layer_types": spec.layer_types[:a.layers]})
    if a.cuda_graphs and not a.device.startswith("cuda"):
        ap.exit(2, "measure_decode: --cuda-graphs needs a CUDA device\n")
    env = environment(a.device)
    rows = measure(spec, a.batch, a.context, a.prompt, a.device, a.repeats, graphs=a.cuda_graphs)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(rows, a.out, model=spec.id, env=env, graphs=a.cuda_graphs)
    print(json.dumps({"rows": len(rows), "out": str(a.out), **env}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
