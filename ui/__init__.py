"""Shared Streamlit widgets for the pages: the identity gate, the sidebar, the
retrieval panel, RRF controls, error display. Pages stay thin views over core/."""
