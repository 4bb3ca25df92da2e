"""ui/shell.py's page bookkeeping: whether the run before this one ran the same page (the Voice page
keeps its call across its own reruns with it, ui/voice.keep_call_across_reruns)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _two_pages():
    import streamlit as st

    from ui import shell

    def chat():
        st.markdown(f"chat stayed={shell.stayed_on_page()}")

    def voice():
        st.markdown(f"voice stayed={shell.stayed_on_page()}")

    shell.page_follows()
    shell.run_page(voice if st.session_state.get("go") == "voice" else chat)


def _shown(at: AppTest) -> str:
    return at.markdown[-1].value


def test_stayed_on_page_is_true_only_for_a_rerun_of_the_page_the_last_run_ran():
    at = AppTest.from_function(_two_pages).run()
    assert _shown(at) == "chat stayed=False"  # the first run of a browser session
    assert _shown(at.run()) == "chat stayed=True"
    at.session_state["go"] = "voice"
    assert _shown(at.run()) == "voice stayed=False"  # came from another page
    assert _shown(at.run()) == "voice stayed=True"
    assert _shown(at.run()) == "voice stayed=True"
    at.session_state["go"] = "chat"
    assert _shown(at.run()) == "chat stayed=False"
