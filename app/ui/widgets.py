"""Small shared widgets: "show the math", headline metrics, downloads."""
from __future__ import annotations

import json
import re

import streamlit as st

MATH_PREFIX = "Show the math: "


def math_key(title: str) -> str:
    """The expander's widget key: the title's words without its numbers, so it stays open as they change."""
    return "math_" + re.sub(r"[^a-z]+", "_", title.lower()).strip("_")


def show_math(title: str, math: dict | None) -> None:
    """An expander with the formula, the user's numbers substituted and the source of each constant.

    The text is sent only while the expander is open (opening it reruns the page): a collapsed
    expander's text still costs every browser a render on every change (on the Overview, one
    Chromium changing ``tensor_parallel_size``: 454 ms of browser CPU per change with it, 398 without).
    """
    if not math:
        return
    with st.expander(MATH_PREFIX + title, key=math_key(title), on_change="rerun") as box:
        if box.open:
            st.markdown(f"**Formula**  \n`{math['formula']}`\n\n**Your numbers**  \n`{math['substituted']}`"
                        "\n\n**Sources**\n" + "\n".join(f"- {s}" for s in math["sources"]))


def downloads(doc: dict, *, key: str) -> None:
    """JSON (the same document as ``llmcap capacity --json``) and CSV downloads."""
    from calculators.report.explain_capacity import result_csv
    c1, c2 = st.columns(2)
    c1.download_button("Download JSON (same as llmcap capacity --json)", json.dumps(doc, indent=2) + "\n",
                       file_name="capacity.json", mime="application/json", key=f"{key}_json", on_click="ignore")
    c2.download_button("Download CSV", result_csv(doc), file_name="capacity.csv", mime="text/csv",
                       key=f"{key}_csv", on_click="ignore")


def show_error(ctx) -> bool:
    """Show the calculator's error (if any) in the page; True when there is one."""
    if ctx.error is not None:
        st.error(f"Cannot compute this scenario — {ctx.error}. Fix the input marked in the sidebar.")
        return True
    return False


def memory_markdown(rows: list[dict]) -> None:
    """The per-GPU memory rows as a Markdown table (no pandas needed on the first page)."""
    def num(x):
        return "" if x is None else f"{x:,.2f}"
    lines = ["| item | GiB | low GiB | high GiB | basis |", "|---|--:|--:|--:|---|"]
    lines += [f"| {r['item']} | {num(r['gib'])} | {num(r['low_gib'])} | {num(r['high_gib'])} | {r['basis']} |"
              for r in rows]
    st.markdown("\n".join(lines))


MISSING = "—"


def table(data, **kwargs) -> None:
    """``st.dataframe`` with an empty cell shown as "—" (not "None") and numbers kept right-aligned: the
    frame goes through a pandas Styler, whose display values Streamlit shows while the data stay numeric."""
    import pandas as pd
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    kwargs.setdefault("hide_index", True)
    st.dataframe(frame.style.format(na_rep=MISSING, precision=2, thousands=","), **kwargs)


_BANDED = (("tpot", "TPOT", 1e3, "ms", 1), ("ttft", "TTFT", 1e3, "ms", 0),
           ("throughput", "output", 1.0, "tokens/s", 0))  # metric, label, display scale, unit, digits


NO_BAND = ("No 80 % band: the model in force is a calibration, and the bands (see Model accuracy) describe the "
           "shipped fitted model; the calibration's own fit error is in the model caption above.")


def band_caption(tpot_s: float | None = None, ttft_s: float | None = None,
                 tokens_per_s: float | None = None, gpu=None, shipped: bool = True) -> None:
    """One caption with the 80 % band of each timed figure given (fitted on public measurements, see the
    Model accuracy page; ``gpu``'s bands: those measured with GPU families left out where its family has
    no runs), so that no timed number is shown without how sure it is — or, for a model that is not the
    shipped fit (``shipped`` False: a calibration), why it has none."""
    from calculators.perf.bands import timing_band
    if not shipped:
        st.caption(NO_BAND)
        return
    given = {"tpot": tpot_s, "ttft": ttft_s, "throughput": tokens_per_s}
    parts, coverage, held = [], 1.0, ""
    for metric, label, scale, unit, digits in _BANDED:
        if given[metric] is None:
            continue
        band = timing_band(metric, gpu)
        parts.append(f"{label} {band.range_text(given[metric], scale, unit, digits)}")
        coverage, held = min(coverage, band.coverage), band.held_out_text
    if parts:
        st.caption("80 % band from public measurements: " + " · ".join(parts) + f" (bands like these held on average "
                   f"at least {coverage:.0%} of {held}; see Model accuracy).")


def published_runs_note(entries: list[dict]) -> None:
    """What the public runs of this very setup measured against the model (the perf document's
    ``published_runs``), or, where the corpus ran none, every run on the GPU's family (``family_runs``), one line per
    metric under their sources; nothing without entries."""
    from calculators.report.perf import published_runs_heading
    if entries:
        heading = published_runs_heading(entries)
        st.caption(heading[:1].upper() + heading[1:] + "\n\n" + "\n".join(f"- {e['text']}" for e in entries))


def band_factors_caption(box=st, gpus=(), shipped: bool = True) -> None:
    """The 80 % bands as factors, for a table of timed figures (each figure × the factors gives its band),
    in ``box`` (a container; the page by default); after them, the bands of those of ``gpus`` whose family has
    no runs (measured with GPU families left out); for a calibration (``shipped`` False), why there are none."""
    from calculators.perf.bands import seen_family, timing_band
    if not shipped:
        box.caption(NO_BAND)
        return

    def factors(gpu=None) -> str:
        return ", ".join(f"{label} ×{b.low_factor:.2f}–×{b.high_factor:.2f}"
                         for metric, label, *_ in _BANDED for b in [timing_band(metric, gpu)])
    unseen = [g for g in gpus if not seen_family(g)]
    extra = (f" For the {', '.join(g.id for g in unseen)}, whose family has no runs in the corpus: "
             f"{factors(unseen[0])} (measured leaving each GPU family out of the fit)." if unseen else "")
    box.caption("How sure the timed figures are: the measured value lay within " + factors()
                + " of the estimate for 80 % of public measurements (see Model accuracy)." + extra)
