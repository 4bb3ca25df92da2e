"""The RRF knobs (two branch weights and k), shared by the chat and the
Memories search so what you tune is what the agent uses."""

from __future__ import annotations

import streamlit as st

from core.retrieval import RrfParams

_PARAMS_KEY = "mp_rrf_params"
_VW, _TW, _K = "rrf_vector_weight", "rrf_text_weight", "rrf_k"


def current_params() -> RrfParams:
    params = st.session_state.get(_PARAMS_KEY)
    if params is None:
        params = RrfParams.from_settings().validated()
        st.session_state[_PARAMS_KEY] = params
    return params


def _apply_sliders() -> None:
    candidate = RrfParams(st.session_state[_VW], st.session_state[_TW], int(st.session_state[_K]))
    if candidate.vector_weight == 0 and candidate.text_weight == 0:
        st.session_state["mp_rrf_rejected"] = True  # keep the last good params; say why below
        return
    st.session_state["mp_rrf_rejected"] = False
    st.session_state[_PARAMS_KEY] = candidate.validated()


def _reset() -> None:
    defaults = RrfParams.from_settings().validated()
    st.session_state[_PARAMS_KEY] = defaults
    st.session_state[_VW], st.session_state[_TW], st.session_state[_K] = (
        defaults.vector_weight,
        defaults.text_weight,
        defaults.k,
    )
    st.session_state["mp_rrf_rejected"] = False


def render_controls(*, compact: bool = False) -> RrfParams:
    """Sliders for the weights and k; returns the params now in force."""
    params = current_params()
    for key, value in ((_VW, params.vector_weight), (_TW, params.text_weight), (_K, params.k)):
        st.session_state.setdefault(key, value)
    cols = st.columns(3) if not compact else [st.container(), st.container(), st.container()]
    with cols[0]:
        st.slider(
            "Vector weight",
            0.0,
            2.0,
            step=0.05,
            key=_VW,
            on_change=_apply_sliders,
            help="How much the semantic (embedding) branch counts.",
        )
    with cols[1]:
        st.slider(
            "Text weight",
            0.0,
            2.0,
            step=0.05,
            key=_TW,
            on_change=_apply_sliders,
            help="How much the full-text (keyword) branch counts.",
        )
    with cols[2]:
        st.slider(
            "k",
            1,
            200,
            step=1,
            key=_K,
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
        st.latex(
            r"\text{score}(m) = \frac{w_{\text{vector}}}{k + \text{rank}_{\text{vector}}(m)}"
            r" + \frac{w_{\text{text}}}{k + \text{rank}_{\text{text}}(m)}"
        )
        st.markdown(
            "A branch in which the memory does not appear contributes 0. Only *ranks* count, not raw "
            "scores, so the two branches need no calibration. Raising a weight makes that branch decide more; "
            "a small *k* rewards being first, a large *k* flattens the ranks. In the charts the teal part of a "
            "bar is the vector contribution and the amber part is the text contribution; together they are "
            "the fused score."
        )
        st.markdown(
            "**Past conversations** add two things in a hybrid search. Each candidate turn is also ranked "
            "*in context*, together with the turn that followed it (a statement and its reply are about the "
            "same thing); that ranking takes half of the vector weight (the light teal part of a bar). And the "
            "text weight is scaled down when the best text match holds less than half of the question's word "
            "weight (the words the text branch uses, plus those you never said): the summary above a table "
            "shows the weight used."
        )
        st.latex(
            r"\text{score}(t) = \frac{w_{\text{vector}}/2}{k + \text{rank}_{\text{vector}}(t)}"
            r" + \frac{w_{\text{vector}}/2}{k + \text{rank}_{\text{in context}}(t)}"
            r" + \frac{w_{\text{text}} \cdot \min\left(1, \frac{\text{best text score}}{0.5 \cdot "
            r"\text{query weight}}\right)}{k + \text{rank}_{\text{text}}(t)}"
        )
