"""The RRF knobs (two branch weights and k), shared by the chat and the
Memories search so what you tune is what the agent uses."""

from __future__ import annotations

import streamlit as st

from core.retrieval import RrfParams

_PARAMS_KEY = "mp_rrf_params"
_VW, _TW, _K = "rrf_vector_weight", "rrf_text_weight", "rrf_k"
# The sliders start from the params in force (`value=`), not from state kept under their keys: a page whose
# first runs redraw it (the Chat page while the agent starts) lost that state, and the browser then drew the
# sliders at 0 / 0 / 1 and sent those back as a change ("At least one weight must be above 0"), and moving
# one slider applied the other two's zeros. Reset draws new sliders (new keys) at the defaults.
_GENERATION = "mp_rrf_sliders"


def _keys() -> tuple[str, str, str]:
    generation = st.session_state.get(_GENERATION, 0)
    suffix = f"_{generation}" if generation else ""
    return _VW + suffix, _TW + suffix, _K + suffix


def current_params() -> RrfParams:
    params = st.session_state.get(_PARAMS_KEY)
    if params is None:
        params = RrfParams.from_settings().validated()
        st.session_state[_PARAMS_KEY] = params
    return params


def _apply_sliders() -> None:
    params = current_params()
    vw, tw, k = (st.session_state.get(key) for key in _keys())
    candidate = RrfParams(
        params.vector_weight if vw is None else vw, params.text_weight if tw is None else tw, int(k or params.k)
    )
    if candidate.vector_weight == 0 and candidate.text_weight == 0:
        st.session_state["mp_rrf_rejected"] = True  # keep the last good params; say why below
        return
    st.session_state["mp_rrf_rejected"] = False
    st.session_state[_PARAMS_KEY] = candidate.validated()


def _reset() -> None:
    st.session_state[_PARAMS_KEY] = RrfParams.from_settings().validated()
    st.session_state[_GENERATION] = st.session_state.get(_GENERATION, 0) + 1
    st.session_state["mp_rrf_rejected"] = False


def render_controls(*, compact: bool = False) -> RrfParams:
    """Sliders for the weights and k; returns the params now in force."""
    params = current_params()
    vw_key, tw_key, k_key = _keys()
    cols = st.columns(3) if not compact else [st.container(), st.container(), st.container()]
    with cols[0]:
        st.slider(
            "Vector weight",
            0.0,
            2.0,
            value=float(params.vector_weight),
            step=0.05,
            key=vw_key,
            on_change=_apply_sliders,
            help="How much the semantic (embedding) branch counts.",
        )
    with cols[1]:
        st.slider(
            "Text weight",
            0.0,
            2.0,
            value=float(params.text_weight),
            step=0.05,
            key=tw_key,
            on_change=_apply_sliders,
            help="How much the full-text (keyword) branch counts.",
        )
    with cols[2]:
        st.slider(
            "k",
            1,
            200,
            value=int(params.k),
            step=1,
            key=k_key,
            on_change=_apply_sliders,
            help="Damping: a larger k flattens the difference between rank 1 and rank 10.",
        )
    if st.session_state.get("mp_rrf_rejected"):
        st.warning("At least one weight must be above 0; the previous weights are still in use.")
    defaults = RrfParams.from_settings().validated()
    if current_params() != defaults:
        st.button("Reset to defaults", on_click=_reset, key="rrf_reset", type="tertiary", icon=":material/restart_alt:")
    return current_params()


def render_formula() -> None:
    with st.expander("How the fused score is computed", icon=":material/function:"):
        st.markdown(
            "Each memory search runs **two rankings** over your memories: a *vector* ranking (cosine distance "
            "between embeddings, exact for your rows) and a *text* ranking (Postgres full-text match). "
            "**Reciprocal Rank Fusion** adds one contribution per branch in which a memory appears:"
        )
        # one term a line: on a phone (390 px) a formula on one line ran off the page, with no scrollbar shown
        st.latex(
            r"\begin{aligned}\text{score}(m) = {} & \frac{w_{\text{vector}}}{k + \text{rank}_{\text{vector}}(m)} \\"
            r" & + \frac{w_{\text{text}}}{k + \text{rank}_{\text{text}}(m)}\end{aligned}"
        )
        st.markdown(
            "A branch in which the memory does not appear contributes 0. Only *ranks* count, not raw "
            "scores, so the two branches need no calibration. Raising a weight makes that branch decide more; "
            "a small *k* rewards being first, a large *k* flattens the ranks. In the charts the teal part of a "
            "bar is the vector contribution and the amber part is the text contribution; together they are "
            "the fused score."
        )
        st.markdown(
            "**Past conversations** add three things in a hybrid search. Each candidate turn is also ranked "
            "*in context*, together with the turn that followed it (a statement and its reply are about the "
            "same thing); that ranking takes half of the vector weight (the light teal part of a bar). The "
            "text weight is scaled down when the best text match holds less than half of the question's word "
            "weight (the words the text branch uses, plus those you never said): *c* is that share. And, for "
            "someone with at least 100 past turns, the vector weight is scaled down when the nearest turn hardly "
            "stands out from the others: *z* is how many standard deviations nearer the question it is than the "
            "average turn. The summary above a table shows the weights used."
        )
        st.latex(
            r"\begin{aligned}\text{score}(t) = {} & \frac{w'_{\text{vector}}/2}{k + \text{rank}_{\text{vector}}(t)}"
            r" \\ & + \frac{w'_{\text{vector}}/2}{k + \text{rank}_{\text{in context}}(t)}"
            r" \\ & + \frac{w'_{\text{text}}}{k + \text{rank}_{\text{text}}(t)} \\[6pt]"
            r"w'_{\text{vector}} = {} & w_{\text{vector}} \cdot \min\left(1, \frac{z}{4}\right) \\[4pt]"
            r"w'_{\text{text}} = {} & w_{\text{text}} \cdot \min(1, 2c) \\[4pt]"
            r"c = {} & \frac{\text{best text score}}{\text{query weight}}\end{aligned}"
        )
