"""What the public measurement corpus holds: rows per source, GPU family, GPU, engine and load mode, and how
often each metric is published.

    .venv/bin/python benchmarks/corpus_summary.py

Reads ``calculators/data/measurements/*.json`` through :mod:`calculators.perf.measurements` (validated on
load). See the README in that folder for the fields, units and caveats.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from calculators.perf.measurements import Measurement, load_measurements, load_sources

FAMILIES = ("NVIDIA Hopper", "NVIDIA Blackwell", "NVIDIA Ampere", "NVIDIA Ada", "AMD CDNA3", "AMD CDNA4", "other")


def table(title: str, counts: Iterable[tuple[str, int]], total: int) -> str:
    """One titled block: name, count and share of ``total``."""
    lines = [f"\n{title}"]
    lines += [f"  {name:<40} {n:6d}  {100 * n / total:5.1f} %" for name, n in counts]
    return "\n".join(lines)


def by(rows: list[Measurement], key: str) -> list[tuple[str, int]]:
    """Rows per value of an attribute, most first."""
    return Counter(str(getattr(m, key)) for m in rows).most_common()


def families(rows: list[Measurement]) -> list[tuple[str, int]]:
    """Rows per GPU family, in a fixed order (families without rows show 0)."""
    counts = Counter(m.gpu_family for m in rows)
    return [(f, counts[f]) for f in FAMILIES]


def flags(rows: list[Measurement]) -> list[tuple[str, int]]:
    """Rows that need care when fitting."""
    return [
        ("disaggregated prefill/decode", sum(bool(m.extra.get("disaggregated")) for m in rows)),
        ("speculative decoding", sum(m.extra.get("spec_decoding") is not None for m in rows)),
        ("without input_len or output_len", sum(m.input_len is None or m.output_len is None for m in rows)),
        ("with derived metrics", sum(bool(m.extra.get("derived_metrics")) for m in rows)),
        ("published date approximate", sum(bool(m.extra.get("published_approximate")) for m in rows)),
    ]


def main() -> None:
    rows, sources = load_measurements(), load_sources()
    total = len(rows)
    print(f"{total} measurements from {len(sources)} sources")
    print(table("Rows per source", by(rows, "source_id"), total))
    print(table("Rows per GPU family", families(rows), total))
    print(table("Rows per GPU", by(rows, "gpu"), total))
    print(table("Rows per engine", by(rows, "engine"), total))
    print(table("Rows per load mode", by(rows, "load_mode"), total))
    print(table("Flags", flags(rows), total))
    metrics = Counter(k for m in rows for k in m.metrics).most_common()
    print(table("Rows carrying each metric", metrics, total))


if __name__ == "__main__":
    main()
