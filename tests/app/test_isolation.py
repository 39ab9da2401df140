"""Nothing leaks or escapes (issue 8): sessions are isolated, caches hold nothing user-provided, a model
name is never a path, user text is escaped, CSV cells cannot run as formulas, the server config keeps its
defences, and failures at start-up or inside a page show a message instead of a traceback."""
from __future__ import annotations

import ast
import builtins
import io
import logging
import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app import helpers

make_app = helpers.make_app
_clear_caches = helpers._clear_caches
ROOT = Path(__file__).resolve().parents[2]
XSS = "<script>alert(1)</script>"


def _texts(at: AppTest) -> list[str]:
    out = []
    for kind in ("markdown", "caption", "error", "warning", "success", "info", "title", "subheader", "code"):
        out += [str(e.value) for e in getattr(at, kind)]
    out += [str(e.value) for e in at.sidebar.markdown] + [str(e.value) for e in at.sidebar.warning]
    return out


# --------------------------------------------------------------------------------------------- sessions
def test_custom_gpu_of_one_session_is_invisible_in_another(make_app):
    a = make_app()
    a.switch_page("views/catalog.py").run()
    a.text_input(key="cg_name").input("SecretGPU")
    a.number_input(key="cg_mem").set_value(96.0)
    a.button[0].click()
    a.run()
    assert not a.exception and a.success
    a.button(key="use_gpu_SecretGPU").click().run()
    assert a.selectbox(key="gpu").value == "SecretGPU"

    b = make_app()
    assert "SecretGPU" not in b.selectbox(key="gpu").options
    b.switch_page("views/catalog.py").run()
    assert "SecretGPU" not in {r for r in b.dataframe[0].value["Id"]}
    assert not any("SecretGPU" in t for t in _texts(b))


def test_custom_model_from_a_link_stays_in_its_session(make_app):
    from calculators.scenario import config_from_fields, encode_config
    cfg = config_from_fields(id="secret/model", hidden_size=1024, num_hidden_layers=4, num_attention_heads=8,
                             num_key_value_heads=8, intermediate_size=4096, vocab_size=32000,
                             max_position_embeddings=4096)
    a = make_app(model="secret/model", cmodel=encode_config(cfg))
    assert not a.exception and a.selectbox(key="model").value == "secret/model"
    b = make_app()
    assert "secret/model" not in b.selectbox(key="model").options


def test_shared_memo_serves_a_second_session_without_computing_again(make_app, monkeypatch):
    """Heavy results are cached per input, not per user, where the inputs are all catalog specs."""
    from app.ui import memo, state
    from calculators.report import explain_perf
    calls: list[str] = []
    for module, name in ((state, "_capacity"), (explain_perf, "performance_summary")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _n=name, _f=real, **k: (calls.append(_n), _f(*a, **k))[1])
    a = make_app(model="meta-llama/Llama-3.1-8B-Instruct", gpu="H100", tp="2")
    b = make_app(model="meta-llama/Llama-3.1-8B-Instruct", gpu="H100", tp="2")
    assert not a.exception and not b.exception
    assert helpers.metrics(a) == helpers.metrics(b)
    assert sorted(calls) == ["_capacity", "performance_summary"], "the second session computed again"
    from calculators.specs.catalog import get_gpu
    assert any(f"('gpu', '{get_gpu('H100').id}')" in repr(k) for k in memo.shared_keys("capacity"))


def test_custom_specs_and_calibrations_never_reach_the_shared_memo(make_app):
    from app.ui import memo
    from calculators.scenario import config_from_fields, encode_config
    cfg = config_from_fields(id="secret/model", hidden_size=1024, num_hidden_layers=4, num_attention_heads=8,
                             num_key_value_heads=8, intermediate_size=4096, vocab_size=32000,
                             max_position_embeddings=4096)
    at = make_app(model="secret/model", cmodel=encode_config(cfg))
    assert not at.exception and at.metric
    at.switch_page("views/compare_gpus.py").run()
    assert not at.exception
    cal = make_app(model="meta-llama/Llama-3.1-8B-Instruct", gpu="H100", cal="c0.5_m0.55_o0.0021")
    assert not cal.exception
    held = [repr(k) for k in memo.shared_keys()]
    assert not any("secret/model" in k for k in held), held
    assert not [k for k in memo.shared_keys("perf") if "0.55" in repr(k)]
    assert any(k == "_memo_perf" for k in cal.session_state), "the calibrated summary is per session"
    assert any(k == "_memo_capacity" for k in at.session_state), "the custom model's result is per session"


def test_shared_key_refuses_anything_user_provided():
    from app.ui.memo import _NotShareableError, shared_key
    from calculators.perf.roofline import Efficiencies
    from calculators.scenario import Scenario
    from calculators.specs.catalog import get_gpu, get_model
    h100 = get_gpu("H100")
    assert shared_key([h100, Efficiencies(), {"tp": 2}]) == (("gpu", h100.id), "default-efficiencies", (("tp", 2),))
    for user in (h100.model_copy(update={"name": "mine"}), Efficiencies(compute=0.5),
                 Scenario(calibration="c0.5_m0.55_o0.0021"), object(), b"bytes",
                 get_model("meta-llama/Llama-3.1-8B-Instruct").model_copy(update={"id": "x/y"})):
        with pytest.raises(_NotShareableError):
            shared_key((1, user))


def test_no_streamlit_cache_holds_user_input():
    """st.cache_data/st.cache_resource are process-wide: only functions listed here may use them, and none
    of them may take a user's spec. (Custom specs are per session, in st.session_state.)"""
    allowed: dict[str, str] = {  # function name -> why its arguments are never user-provided
        "_report": "the accuracy report reads only the packaged corpus and catalog",
    }
    found = []
    for path in (ROOT / "app").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for dec in node.decorator_list:
                    text = ast.unparse(dec)
                    if "cache_data" in text or "cache_resource" in text:
                        found.append(f"{path.relative_to(ROOT)}:{node.name}")
                        assert node.name in allowed, f"{path}: {node.name} is cached process-wide ({text})"
            elif isinstance(node, ast.Call) and "cache_" in ast.unparse(node.func) and \
                    ast.unparse(node.func).startswith("st.cache"):
                found.append(f"{path.relative_to(ROOT)}:{ast.unparse(node)[:60]}")
                raise AssertionError(f"{path}: {ast.unparse(node)[:80]}")


# --------------------------------------------------------------------------------------------- paths
@pytest.fixture
def opened(monkeypatch):
    """Record every path the process opens while the app runs (AppTest runs the script in this process)."""
    seen: list[str] = []
    real_open, real_io_open = builtins.open, io.open
    real_read_bytes, real_read_text, real_path_open = Path.read_bytes, Path.read_text, Path.open

    def rec(p):
        seen.append(str(p))

    monkeypatch.setattr(builtins, "open", lambda f, *a, **k: (rec(f), real_open(f, *a, **k))[1])
    monkeypatch.setattr(io, "open", lambda f, *a, **k: (rec(f), real_io_open(f, *a, **k))[1])
    monkeypatch.setattr(Path, "read_bytes", lambda self: (rec(self), real_read_bytes(self))[1])
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: (rec(self), real_read_text(self, *a, **k))[1])
    monkeypatch.setattr(Path, "open", lambda self, *a, **k: (rec(self), real_path_open(self, *a, **k))[1])
    return seen


@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "/etc/passwd.json", "config.json",
                                  "file:///etc/passwd"])
def test_model_param_is_never_a_path(make_app, opened, name):
    at = make_app(model=name)
    assert not at.exception
    assert any("model=" in w.value and "ignored" in w.value for w in at.sidebar.warning), "an unknown-model warning"
    assert at.selectbox(key="model").value != name
    assert not [p for p in opened if "passwd" in p or p.endswith("config.json")], opened


def test_deep_custom_model_in_a_link_is_a_warning(make_app):
    import base64
    import zlib
    deep = base64.urlsafe_b64encode(zlib.compress(b"[" * 5000 + b"]" * 5000)).decode()  # RecursionError before
    at = make_app(cmodel=deep, model="x")
    assert not at.exception
    assert any("custom model in the link ignored" in w.value for w in at.sidebar.warning)


@pytest.mark.parametrize("params", [{"pp": "-inf"}, {"tp": "inf"}, {"block": "1e308"}, {"util": "nan"},
                                    {"max_len": "-inf", "rate": "inf"}])
def test_non_finite_numbers_in_the_url_are_warnings(make_app, params):
    # found by benchmarks/fuzz_long.py: ?pp=-inf raised OverflowError inside Streamlit's number_input binding
    # (guarded by app/ui/compat.py)
    at = make_app(**params)
    assert not at.exception
    assert any("ignored" in w.value for w in at.sidebar.warning)
    assert at.metric


# --------------------------------------------------------------------------------------------- escaping
def test_unsafe_html_is_never_used_with_user_text():
    for path in (ROOT / "app").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            assert not name.endswith(("st.html", "components.html")), f"{path}: {name}"
            for kw in node.keywords:
                if kw.arg == "unsafe_allow_html" and not (isinstance(kw.value, ast.Constant) and not kw.value.value):
                    # allowed only for a literal string with no interpolation
                    assert all(isinstance(a, ast.Constant) for a in node.args), f"{path}:{node.lineno}"


def _no_html_allowed(at: AppTest) -> None:
    for e in [*at.markdown, *at.sidebar.markdown, *at.caption, *at.sidebar.caption]:
        assert not getattr(e.proto, "allow_html", False), e.value


def test_script_tags_in_custom_names_stay_text(make_app):
    from calculators.scenario import config_from_fields, encode_config
    cfg = config_from_fields(id=XSS, hidden_size=1024, num_hidden_layers=4, num_attention_heads=8,
                             num_key_value_heads=8, intermediate_size=4096, vocab_size=32000,
                             max_position_embeddings=4096)
    gpu = "<script>alert(1)"  # a GPU name may not hold "/" (it travels in the URL)
    at = helpers.open_math(make_app(gpu=gpu, cgpu=f"{gpu}~96~3000~900", model=XSS, cmodel=encode_config(cfg)))
    assert not at.exception
    assert at.selectbox(key="gpu").value == gpu and at.selectbox(key="model").value == XSS
    # AppTest shows the markdown *source*; the page renders markdown without HTML, so the tags stay text.
    assert any(XSS in t for t in _texts(at))
    _no_html_allowed(at)
    for page in ("views/kv_cache.py", "views/catalog.py"):
        helpers.open_math(at.switch_page(page).run())
        assert not at.exception
        _no_html_allowed(at)


def test_refused_script_name_is_a_plain_warning(make_app):
    at = make_app(gpu=XSS, cgpu=f"{XSS}~96~3000~900")
    assert not at.exception
    assert any("custom GPU in the link ignored" in w.value for w in at.sidebar.warning)
    _no_html_allowed(at)


def test_exported_html_escapes_user_text():
    """A custom model named with markup (as an uploaded config.json can be) reaches the quote escaped."""
    from calculators.planning.fleet import Workload, plan_fleet
    from calculators.report.quote import quote_document, quote_html
    from calculators.scenario import config_from_fields
    from calculators.specs.catalog import get_gpu
    from calculators.specs.hf_config import model_from_config
    evil = '<img src=x onerror="alert(1)">'
    model = model_from_config(config_from_fields(id=evil, hidden_size=1024, num_hidden_layers=4,
                                                 num_attention_heads=8, num_key_value_heads=8,
                                                 intermediate_size=4096, vocab_size=32000,
                                                 max_position_embeddings=4096), id=evil)
    w = Workload(request_rate_per_s=1, input_len=100, output_len=50)
    gpus = [get_gpu("H100")]
    text = quote_html(quote_document(model, gpus, w, plan_fleet(model, gpus, w, max_pp=1)))
    assert "<img" not in text and "onerror=\"" not in text
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in text


def test_capacity_csv_neutralises_formula_cells():
    import csv

    from calculators.report.capacity import capacity_document
    from calculators.report.explain_capacity import csv_cell, result_csv
    from calculators.scenario import config_from_fields
    from calculators.specs.catalog import get_gpu
    from calculators.specs.hf_config import model_from_config
    from calculators.vllm.capacity import vllm_capacity
    evil = "=HYPERLINK(\"http://x\",\"y\")"
    cfg = config_from_fields(id=evil, hidden_size=1024, num_hidden_layers=4, num_attention_heads=8,
                             num_key_value_heads=8, intermediate_size=4096, vocab_size=32000,
                             max_position_embeddings=4096)
    m = model_from_config(cfg, id=evil)
    doc = capacity_document(m, vllm_capacity(m, gpu=get_gpu("H100")), served_name=evil)
    cells = [c for row in csv.reader(io.StringIO(result_csv(doc))) for c in row]
    assert cells and not any(c.startswith(("=", "+", "@", "\t", "\r")) for c in cells)
    assert not any(c.startswith("-") and not _is_number(c) for c in cells)
    assert "'" + evil in cells
    assert csv_cell(-1.5) == -1.5 and csv_cell("@SUM(A1)") == "'@SUM(A1)" and csv_cell(None) == ""


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_server_config_keeps_its_defences():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["enableXsrfProtection"] is True
    assert 0 < cfg["server"]["maxUploadSize"] <= 50  # MB
    assert cfg["server"].get("enableCORS", True) is True


# --------------------------------------------------------------------------------------------- failures
@pytest.fixture
def data_dir(monkeypatch, tmp_path):
    import shutil

    from calculators.specs import catalog
    for name in ("gpus.toml", "models.toml"):
        shutil.copy(catalog.DATA_DIR / name, tmp_path / name)
    for p in catalog.DATA_DIR.glob("*.toml"):
        if not (tmp_path / p.name).exists():
            shutil.copy(p, tmp_path / p.name)
    monkeypatch.setattr(catalog, "DATA_DIR", tmp_path)
    _clear_catalog()
    yield tmp_path
    monkeypatch.undo()
    _clear_catalog()


def _clear_catalog():
    from calculators.specs import catalog
    for fn in (catalog.load_gpus, catalog.load_models, catalog._gpu_index, catalog._model_index):
        fn.cache_clear()


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
@pytest.mark.parametrize("name", ["gpus.toml", "models.toml"])
def test_catalog_failure_at_start_up_names_the_file(make_app, data_dir, name, damage):
    if damage == "missing":
        (data_dir / name).unlink()
    else:
        (data_dir / name).write_text("[[gpu]]\nid = \n")
    at = make_app()
    assert not at.exception
    assert len(at.error) == 1, [e.value for e in at.error]
    assert name in at.error[0].value and "catalog" in at.error[0].value


def test_unexpected_error_shows_an_id_and_logs_the_traceback(make_app, monkeypatch, caplog):
    from calculators.vllm import concurrency
    def boom(*a, **k):
        raise RuntimeError("secret internal detail")
    monkeypatch.setattr(concurrency, "concurrency", boom)
    with caplog.at_level(logging.ERROR, logger="llmcap.app"):
        at = make_app(model="meta-llama/Llama-3.1-8B", gpu="H100")
    assert not at.exception
    msgs = [e.value for e in at.error]
    assert len(msgs) == 1 and msgs[0].startswith("Something went wrong (error id "), msgs
    error_id = msgs[0].split("error id ")[1][:8]
    assert "secret internal detail" not in msgs[0]
    rec = [r for r in caplog.records if f"error id {error_id}" in r.getMessage()]
    assert rec and rec[0].exc_info and "secret internal detail" in str(rec[0].exc_info[1])
    assert at.sidebar.selectbox  # the rest of the app (sidebar) still rendered


def test_input_error_inside_a_page_is_shown_as_it_is(make_app, monkeypatch):
    from calculators.errors import InvalidInputError
    from calculators.vllm import concurrency

    def bad(*a, **k):
        raise InvalidInputError("mean_len", -1, "a positive number")
    monkeypatch.setattr(concurrency, "concurrency", bad)
    at = make_app(model="meta-llama/Llama-3.1-8B", gpu="H100")
    assert not at.exception
    assert any(e.value == "mean_len: got -1; a positive number" for e in at.error)
