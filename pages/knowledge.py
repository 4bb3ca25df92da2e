"""Knowledge: browse and search the shared knowledge base (the documents the
agent's search_knowledge tool reads), with each hit's vector rank, text rank and fused score."""

from __future__ import annotations

import streamlit as st

from core import knowledge
from ui import auth
from ui.errors import reported
from ui.format import literal, nothing_to_search
from ui.retrieval import render_retrieval
from ui.shell import run_page
from ui.style import SEARCH_SIDE, page_header

ALL = "All categories"


@st.cache_data(ttl=300, show_spinner=False)
def _documents(user_key: str, category: str | None, _scope) -> list:
    # Knowledge is shared and rarely changes; cache per category (the scope is
    # still the user's: RLS allows every signed-in user to read it).
    return knowledge.list_documents(_scope, category=category)


def main() -> None:
    visitor = auth.current_visitor()
    scope = visitor.scope
    page_header(
        "Knowledge",
        "The shared knowledge base (Kestrel Coffee Co.) the agent searches when you ask "
        "a question it cannot answer from memory.",
        icon=":material/menu_book:",
    )
    categories = knowledge.categories(scope)
    search_col, browse_col = st.columns([11, 9], gap="large")
    with search_col, st.container(key=SEARCH_SIDE):
        st.subheader("Search", anchor=False)
        # the button as wide as its label, beside the box (a narrow column cut it to "S…")
        with st.form("knowledge_search_form", border=False), st.container(horizontal=True, vertical_alignment="bottom"):
            query = st.text_input(
                "Ask the knowledge base", key="kb_query", placeholder="e.g. how long does shipping take?"
            )
            searched = st.form_submit_button("Search", icon=":material/search:")
        filter_col, limit_col = st.columns([3, 2])
        category = filter_col.selectbox("Category", [ALL, *categories], key="kb_category")
        limit = limit_col.slider("Results", 1, 10, 5, key="kb_limit")
        st.caption(
            "The same hybrid search the agent's search_knowledge tool runs: a vector ranking (384-dimensional "
            "embeddings, cosine) and a full-text ranking (codes, names and numbers such as “E03”), fused by "
            "RRF."
        )
        reason = nothing_to_search(query) if query or searched else None
        if query and not reason:
            with reported():
                result = knowledge.search(scope, query, limit=limit, category=None if category == ALL else category)
                within = None if category == ALL else f"the {category} documents"
                if within:
                    st.caption(f":material/filter_list: Searched {literal(within)} only.")
                render_retrieval(result, key="kb_search", compact="medium", searched_in=within)
                for hit in result.hits[:3]:
                    with st.expander(f"#{hit.rank} · {hit.title} · fused score {hit.rrf_score:.4f}"):
                        st.markdown(hit.content)
        else:
            if reason:
                st.caption(f":material/info: Nothing was searched: {reason}.")
            st.info(
                "Type a question to see which documents the agent would read, and how close each one is.",
                icon=":material/lightbulb:",
            )
    with browse_col:
        st.subheader("Browse", anchor=False)
        browse_category = st.selectbox("Show", [ALL, *categories], key="kb_browse_category")
        documents = _documents(str(visitor.user_id), None if browse_category == ALL else browse_category, scope)
        if not documents:
            st.info(
                "The knowledge base is empty. Run `make db` (or `python -m core seed`) to load the demo documents.",
                icon=":material/inventory_2:",
            )
        st.caption(f"{len(documents)} document{'s' if len(documents) != 1 else ''}")
        with st.container(height=620, border=False):
            for doc in documents:
                with st.expander(f"{doc.title}  ·  _{doc.category}_"):
                    st.markdown(doc.content)


run_page(main)
