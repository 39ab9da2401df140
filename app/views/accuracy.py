"""Model accuracy: the performance model against the public measurement corpus, uncorrected and
leave-one-source-out, with the 80 % band, its held-out coverage, the worst cases and what was left out.

Everything here is read from :func:`calculators.perf.accuracy.accuracy_report`; the page only displays it."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from calculators.perf.accuracy import (
    ALL,
    BIAS_TARGET,
    LABELS,
    METRICS,
    TARGETS,
    AccuracyReport,
    accuracy_report,
    worst_rows,
)
from calculators.perf.bands import TAIL_LEVELS, TARGET_COVERAGE, load_bands

PCT = st.column_config.NumberColumn(format="percent")
_BY = {"GPU family": "gpu_family", "Source": "source_id"}
_OTHER = {"gpu_family": "source_id", "source_id": "gpu_family"}
_SHOWN_UNIT = {"tpot": "ms", "ttft": "ms", "throughput": "tokens/s per GPU"}
_TO_SHOWN = {"tpot": 1e3, "ttft": 1e3, "throughput": 1.0}  # SI → the unit shown (s → ms)


@st.cache_data
def _report() -> AccuracyReport:
    """The report (it depends on no input of the session, so it is computed once per server)."""
    return accuracy_report()


def _error_columns(table: pd.DataFrame, metric: str, by: str) -> pd.DataFrame:
    """One metric's rows of an error table, grouped ``by`` family or source, with human column names."""
    rows = table[(table["metric"] == metric) & (table[_OTHER[by]] == ALL)]
    return pd.DataFrame({"GPU family" if by == "gpu_family" else "Source": rows[by], "Rows": rows["n"],
                         "Median |error|": rows["median_abs_error"], "Bias (median signed error)": rows["bias"],
                         "p90 |error|": rows["p90_abs_error"]})


def _tables(r: AccuracyReport, metric: str, by: str) -> None:
    cfg = {"Median |error|": PCT, "Bias (median signed error)": PCT, "p90 |error|": PCT}
    c1, c2 = st.columns(2)
    c1.markdown("**Uncorrected** (the model as it ships)")
    c1.dataframe(_error_columns(r.uncorrected, metric, by), hide_index=True, column_config=cfg,
                 key=f"acc_un_{metric}_{by}")
    c2.markdown("**Leave one source out** (corrected without the row's own source)")
    c2.dataframe(_error_columns(r.loso, metric, by), hide_index=True, column_config=cfg,
                 key=f"acc_loso_{metric}_{by}")


def _per_source(r: AccuracyReport, metric: str) -> None:
    """Each source counted once: the median over sources of each source's median |error| and bias."""
    un, lo = r.per_source("uncorrected"), r.per_source("LOSO")
    un, lo = un[un["metric"] == metric], lo[lo["metric"] == metric]
    lo = lo.set_index("gpu_family").loc[un["gpu_family"]]
    shown = pd.DataFrame({"GPU family": un["gpu_family"].to_numpy(), "Sources": un["sources"].to_numpy(),
                          "Median |error| (uncorrected)": un["median_abs_error"].to_numpy(),
                          "Bias (uncorrected)": un["bias"].to_numpy(),
                          "Median |error| (LOSO)": lo["median_abs_error"].to_numpy(),
                          "Bias (LOSO)": lo["bias"].to_numpy()})
    st.dataframe(shown, hide_index=True, key=f"acc_per_source_{metric}",
                 column_config={c: PCT for c in shown.columns if c not in ("GPU family", "Sources")})
    st.caption("Each publisher counted once: the median over sources of each source's own median |error|, so a "
               "source with most of the rows weighs as much as one with a few.")


def _targets(r: AccuracyReport, metric: str) -> None:
    t = r.targets[r.targets["metric"] == metric]
    shown = pd.DataFrame({"Stage": t["stage"], "Check": t["check"], "Value": t["value"], "Target": t["target"],
                          "Verdict": t["met"].map({True: "met", False: "missed"}), "Families outside": t["detail"]})
    st.dataframe(shown, hide_index=True, column_config={"Value": PCT, "Target": PCT}, key=f"acc_targets_{metric}")
    st.caption(f"Targets: median |error| ≤ {TARGETS[metric]:.0%} for {LABELS[metric]}; every GPU family's median "
               f"signed error within ±{BIAS_TARGET:.0%}. Value of the bias check: the largest family |bias|.")


def _scatter(r: AccuracyReport, metric: str, corrected: bool):
    """Predicted against measured on log axes, one colour per GPU family, the y = x line drawn."""
    import plotly.express as px
    rows = r.predictions[r.predictions["metric"] == metric]
    scale, unit = _TO_SHOWN[metric], _SHOWN_UNIT[metric]
    shown = pd.DataFrame({"measured": rows["measured"] * scale,
                          "predicted": rows["corrected" if corrected else "predicted"] * scale,
                          "GPU family": rows["gpu_family"], "source": rows["source_id"], "model": rows["model"],
                          "GPU": rows["gpu"], "TP": rows["tp"], "concurrency or batch": rows["batch"],
                          "input tokens": rows["input_len"], "output tokens": rows["output_len"]})
    fig = px.scatter(shown, x="measured", y="predicted", color="GPU family", log_x=True, log_y=True,
                     hover_data=["source", "model", "GPU", "TP", "concurrency or batch", "input tokens",
                                 "output tokens"],
                     labels={"measured": f"measured {LABELS[metric]} [{unit}]",
                             "predicted": f"{'corrected ' if corrected else ''}predicted {LABELS[metric]} [{unit}]"})
    lo = float(min(shown["measured"].min(), shown["predicted"].min()))
    hi = float(max(shown["measured"].max(), shown["predicted"].max()))
    fig.add_scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="predicted = measured",
                    line={"dash": "dash", "color": "grey"}, hoverinfo="skip")
    fig.update_layout(height=520, margin={"l": 10, "r": 10, "t": 30, "b": 10})
    return fig


def _band(r: AccuracyReport, metric: str) -> None:
    band = r.band[r.band["metric"] == metric]
    cov = r.coverage[r.coverage["metric"] == metric]
    if band.empty:
        return
    b = band.iloc[0]
    tail = float(b["tail"])
    overall = cov[cov["source_id"] == ALL]
    c = st.columns(4)
    c[0].metric("80 % band, low factor", f"× {b['low_factor']:.3g}",
                help=f"the source-weighted {tail:.1%} quantile of the leave-one-source-out residual "
                     "ln(measured / corrected)")
    c[1].metric("80 % band, high factor", f"× {b['high_factor']:.3g}",
                help=f"the source-weighted {1 - tail:.1%} quantile of the same residual")
    c[2].metric("Coverage per held-out source", "—" if overall.empty else f"{overall['coverage'].iloc[0]:.0%}",
                help="share of a source's rows inside the band fitted without it, averaged over sources "
                     f"(the band widens until this reaches {TARGET_COVERAGE:.0%})")
    c[3].metric("Coverage of all held-out rows", "—" if overall.empty else f"{overall['row_coverage'].iloc[0]:.0%}",
                help="the same, counting rows rather than sources (the largest source weighs most)")
    per = cov[cov["source_id"] != ALL]
    st.dataframe(pd.DataFrame({"Held-out source": per["source_id"], "Rows": per["n"], "Coverage": per["coverage"]}),
                 hide_index=True, column_config={"Coverage": PCT}, key=f"acc_cov_{metric}")


def _worst(r: AccuracyReport, metric: str) -> None:
    w = worst_rows(r.predictions[r.predictions["metric"] == metric], 10)
    scale, unit = _TO_SHOWN[metric], _SHOWN_UNIT[metric]
    shown = pd.DataFrame({"Source": w["source_id"], "Model": w["model"], "GPU": w["gpu"], "TP": w["tp"],
                          "Concurrency or batch": w["batch"], "Input tokens": w["input_len"],
                          "Output tokens": w["output_len"], f"Measured [{unit}]": w["measured"] * scale,
                          f"Predicted [{unit}]": w["predicted"] * scale, "Error": w["error"],
                          f"Corrected [{unit}]": w["corrected"] * scale, "Error after LOSO": w["loso_error"]})
    st.dataframe(shown, hide_index=True, column_config={"Error": PCT, "Error after LOSO": PCT},
                 key=f"acc_worst_{metric}")


def _by_setup(metric: str) -> None:
    """What the public runs of each setup measured against the model, held out (the table ``llmcap perf``, the
    Overview, the Fleet planner and the quote read for the user's own setup)."""
    from calculators.perf.published_runs import load_published_runs, prompt_bin_label
    runs = [e for e in load_published_runs().run if e.metric == metric]
    shown = pd.DataFrame({
        "Model": [e.model for e in runs], "GPU": [e.gpu for e in runs],
        "Layout": [f"TP{e.tensor_parallel_size}×PP{e.pipeline_parallel_size}"
                   + (" · DP attention" if e.dp_attention else "") for e in runs],
        "Weights": [e.weights for e in runs], "Prompt tokens": [prompt_bin_label(e.prompt_bin) for e in runs],
        "Rows": [e.rows for e in runs], "Measured ÷ model (median)": [e.ratio for e in runs],
        "10 %": [e.ratio_low for e in runs], "90 %": [e.ratio_high for e in runs],
        "Engines": [", ".join(e.engines) for e in runs], "Sources": ["; ".join(e.sources) for e in runs]})
    st.caption("Each setup the public corpus ran, its rows predicted by the fit without their source: measured ÷ the "
               "model's figure at the median and its 10th and 90th percentiles (from 5 rows). A user's setup that "
               "matches a row here sees it beside its figures.")
    ratio = st.column_config.NumberColumn(format="× %.2f")
    st.dataframe(shown, hide_index=True, key=f"acc_setups_{metric}",
                 column_config={"Measured ÷ model (median)": ratio, "10 %": ratio, "90 %": ratio})


def _skipped(r: AccuracyReport) -> None:
    counts = r.skipped_by_reason()
    st.markdown(f"**{r.comparable_rows:,}** corpus rows compared, **{len(r.skipped):,}** left out:")
    st.dataframe(pd.DataFrame({"Reason": counts.index, "Rows": counts.to_numpy()}), hide_index=True,
                 key="acc_skipped")
    if unjudged := r.gpus_without_family_runs():
        st.caption("Catalog GPUs of a family no compared row ran on, priced with every family's reference set: no "
                   "row judges them, and their figures carry the bands of a family left out of the fit (above; "
                   "docs/performance-model.md §11): " + ", ".join(unjudged))


def _unseen_family(r: AccuracyReport, metric: str) -> None:
    """Leave one GPU family out: how far off a family the fit has not seen comes out, and its band."""
    t = r.family_held_out
    t = t[t["metric"] == metric] if not t.empty else t
    if t.empty:
        return
    st.subheader("A GPU family the fit has not seen")
    st.caption("Each family's rows predicted by the coefficients fitted without that family, with their reference "
               "set — how a GPU of a family without runs (a T4, an MI250X, a Gaudi, a TPU) is priced.")
    st.dataframe(pd.DataFrame({"Family left out": t["gpu_family"], "Rows": t["n"],
                               "Median |error|": t["median_abs_error"], "Bias": t["bias"]}),
                 hide_index=True, column_config={"Median |error|": PCT, "Bias": PCT}, key=f"acc_family_{metric}")
    b = getattr(load_bands().unseen_family, metric)
    st.caption(f"80 % band of such a GPU: × {b.low_factor:.3g} … × {b.high_factor:.3g} of the estimate; bands like "
               f"it held on average {b.coverage:.0%} of each left-out family's rows.")


METHOD = f"""
**Which rows.** A row of the public corpus is compared when the product can state the same run: neither
prefill/decode disaggregated nor speculative decoding (which the product does not state), a catalog model and GPU,
stated parallelism and lengths (attention data-parallel across the tensor-parallel GPUs where the run says so), a
weight format the product has, and a load the product models. A closed-loop concurrency or a static batch gives
TPOT, TTFT and throughput; an arrival rate (open loop) its TPOT, its TTFT if the run kept up with the offered
rate and its throughput if it did not; an offline throughput ceiling its throughput, at the batch the engine
would run (the fewest of what the KV cache holds, the engine's default largest batch and the prompts sent).
Replicas (`gpu_count` = k × tp × pp) count when the row's own figures say each replica ran the stated concurrency.
The rest are counted below with their reason.

**What is compared.** The roofline with its shipped coefficients (fitted on this corpus, per GPU family and
engine generation) predicts TPOT (against the measured TPOT median,
else the ITL median, else the TPOT mean), TTFT (median, else mean, but not the mean of a closed loop, which
carries its opening burst) and output tokens/s per GPU (the per-GPU figure,
else the total ÷ GPUs). Error = predicted / measured − 1; the bias is its median.

**Leave one source out.** For each source, the coefficients are fitted again on the *other* sources only, and
that fit predicts the source it never saw: what the model would do on a publisher it was not tuned on. The
80 % band is a pair of quantiles of what remains, every source weighted alike, calibrated rather than assumed:
the {TAIL_LEVELS[0]:.0%}/{1 - TAIL_LEVELS[0]:.0%} quantiles, widened step by step (down to
{TAIL_LEVELS[-1]:.0%}/{1 - TAIL_LEVELS[-1]:.0%}) until a band fitted without a source holds, on average over
sources, {TARGET_COVERAGE:.0%} of that source's rows. Where even the widest does not, its coverage says so.

**Leave one family out.** A GPU of a family no compared run used (a T4, an MI250X, a Gaudi, a TPU) takes the
fit's reference set. What that costs is measured on the families that have runs: each is left out of the fit in
turn and its rows predicted with the reference set of the fit on the others. The bands shown for such a GPU are
fitted on those residuals the same way, every family weighted alike (and within it every source), their
coverage judged with each family left out.

**Caveats.** One publisher (InferenceX) holds most compared rows, so the overall figures mostly describe it;
the per-source table counts each publisher once.
Measured TTFT includes queueing where the benchmark queued; latency statistics differ between sources.
Run `llmcap accuracy` (add `--json` for the tables) for the same figures; the method is in
docs/performance-model.md §11.
"""


def render() -> None:
    """Draw the page."""
    st.title("Model accuracy")
    st.caption("The performance model against published measurements of real serving runs: how far off it is, "
               "in which direction, and how well a fit that never saw a publisher predicts it.")
    r = _report()
    c1, c2 = st.columns(2)
    metric = c1.radio("Metric", METRICS, format_func=lambda m: LABELS[m], horizontal=True, key="acc_metric")
    by = _BY[c2.radio("Rows of the tables", list(_BY), horizontal=True, key="acc_by")]
    st.subheader(f"{LABELS[metric]}: error against the measurement")
    _tables(r, metric, by)
    _per_source(r, metric)
    _targets(r, metric)
    st.subheader("Predicted against measured")
    corrected = st.toggle("Show the prediction fitted without the row's source", key="acc_corrected")
    st.plotly_chart(_scatter(r, metric, corrected), key=f"acc_scatter_{metric}")
    st.subheader("Uncertainty band")
    _band(r, metric)
    st.subheader("Worst cases (source left out of the fit)")
    _worst(r, metric)
    _unseen_family(r, metric)
    st.subheader("By setup (source left out of the fit)")
    _by_setup(metric)
    st.subheader("Rows compared and left out")
    _skipped(r)
    with st.expander("How this is measured"):
        st.markdown(METHOD)


render()
