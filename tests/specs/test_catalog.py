"""The data files validate, carry sources, hold plausible values and the published golden figures."""
from __future__ import annotations

import datetime as dt

import pytest

from calculators.errors import InvalidInputError
from calculators.specs import catalog
from calculators.specs.catalog import get_gpu, get_model, load_gpus, load_models
from calculators.units import GB, GiB
from tests.words import INTERNAL

REQUIRED_GPUS = ["T4", "A10G", "L4", "L40S", "A100-40GB", "A100-80GB", "A100-80GB-PCIe", "H100", "H100-PCIe",
                 "H100-NVL", "H200", "GH200", "B200", "GB200", "B300", "RTX 4090", "RTX 5090", "RTX 6000 Ada",
                 "RTX PRO 6000", "MI300X", "MI325X", "MI355X", "Gaudi 3", "TPU v5e", "TPU v6e"]


def test_sizes():
    assert len(load_gpus()) >= 25 and len(load_models()) >= 30


@pytest.mark.parametrize("name", REQUIRED_GPUS)
def test_required_gpus_resolve(name):
    assert get_gpu(name).memory_bytes > 0


def test_every_entry_has_source_and_date():
    for item in [*load_gpus().values(), *load_models().values()]:
        assert item.source.strip(), item.id
        dt.date.fromisoformat(item.as_of[:10])
    for g in load_gpus().values():
        for p in g.prices:
            assert p.source and dt.date.fromisoformat(p.as_of[:10])


def _strings(value: object) -> list[str]:
    """Every string inside a dumped catalog entry (nested prices, configs, lists)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def test_catalog_texts_hold_no_internal_words():
    # The Catalog page and the quote show these notes and sources to users.
    texts = [s for item in [*load_gpus().values(), *load_models().values()] for s in _strings(item.model_dump())]
    bad = [s for s in texts if INTERNAL.search(s)]
    assert not bad, bad[:3]


def test_ids_and_aliases_name_one_entry_each():
    owners: dict[str, set[str]] = {}
    for g in load_gpus().values():
        for n in (g.id, g.name, *g.aliases):
            owners.setdefault(catalog._gpu_key(n), set()).add(g.id)
    assert all(len(v) == 1 for v in owners.values())
    model_names = [n.lower() for m in load_models().values() for n in (m.id, *m.aliases)]
    assert len(model_names) == len(set(model_names))


def test_plausible_gpu_values():
    for g in load_gpus().values():
        assert 8 * GiB < g.memory_bytes < 300 * GiB, g.id
        assert g.memory_bytes <= g.memory_gb_marketed * GB * 1.08, g.id  # reported never exceeds marketed
        assert 200e9 < g.memory_bandwidth_bytes_per_s < 10e12, g.id
        assert all(1e12 < f < 25e15 for f in g.peak_flop_per_s.values()), g.id


def test_golden_datasheet_values():
    # NVIDIA A100 datasheet: 312 TFLOP/s dense bf16, 2,039 GB/s → ridge ≈ 153 FLOP/byte.
    a100 = get_gpu("A100-80GB")
    assert a100.peak_flop_per_s["bf16"] == 312e12 and a100.memory_bandwidth_bytes_per_s == 2039e9
    assert a100.peak_flop_per_s["bf16"] / a100.memory_bandwidth_bytes_per_s == pytest.approx(153, abs=0.5)
    # H100 SXM: 989.4 TFLOP/s dense bf16 (1,979 with sparsity), 3.35 TB/s → ridge ≈ 295.
    h100 = get_gpu("NVIDIA H100 80GB HBM3")
    assert h100.peak_flop_per_s["bf16"] / 1e12 == pytest.approx(989.4, abs=0.2)
    assert h100.peak_flop_per_s["bf16"] / h100.memory_bandwidth_bytes_per_s == pytest.approx(295, abs=1)
    # NVLink datasheets give bidirectional totals; per direction is half.
    assert a100.scale_up_bytes_per_s_per_direction == 300e9
    assert h100.scale_up_bytes_per_s_per_direction == 450e9
    assert get_gpu("B200").scale_up_bytes_per_s_per_direction == 900e9
    # Memory as the framework reports it (docs/data-policy.md §5): an "80 GB" H100 shows about 79.2 GiB.
    assert h100.memory_gib == pytest.approx(79.2, abs=0.15)
    assert get_gpu("L40S").memory_gib == pytest.approx(44.42, abs=0.01)  # a public vLLM start-up log on 8 × L40S


@pytest.mark.parametrize("alias, gid", [("h100", "H100-SXM"), ("H100 SXM", "H100-SXM"),
                                        ("nvidia h100 80gb hbm3", "H100-SXM"), ("a100_80gb", "A100-80GB-SXM")])
def test_gpu_aliases(alias, gid):
    assert get_gpu(alias).id == gid


def test_model_lookup_is_case_insensitive_and_knows_instruct_names():
    assert get_model("META-LLAMA/llama-3.1-70b-instruct").id == "meta-llama/Llama-3.1-70B"
    assert get_model("meta-llama/Meta-Llama-3.1-8B-Instruct").id == "meta-llama/Llama-3.1-8B"


def test_unknown_names_suggest():
    with pytest.raises(InvalidInputError, match="did you mean.*H100"):
        get_gpu("H10O")
    with pytest.raises(InvalidInputError, match="did you mean"):
        get_model("meta-llama/Llama-3.1-70B-Instrukt")


def test_path_is_not_a_model_name():
    with pytest.raises(InvalidInputError):
        get_model("../../etc/passwd")


def test_corrupt_data_file_names_the_file(tmp_path, monkeypatch):
    (tmp_path / "gpus.toml").write_text("[[gpu]]\nid = 'x'\n")
    (tmp_path / "models.toml").write_text("this is = = not toml")
    monkeypatch.setattr(catalog, "DATA_DIR", tmp_path)
    for loader, name in ((catalog.load_gpus, "gpus.toml"), (catalog.load_models, "models.toml")):
        loader.cache_clear()
        with pytest.raises(catalog.CatalogError, match=name):
            loader()
        loader.cache_clear()
