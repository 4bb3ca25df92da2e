"""A page whose Streamlit frontend crashed is reloaded instead of staying blank.

Streamlit's frontend (1.67) can throw "Cannot set a node at a delta path" while it applies a fragment's
output to a tree a full rerun has just changed (streamlit/streamlit#15084 and #16281 are two such cases),
and the error unmounts the whole app: a white page that sends nothing to the server any more. The Voice
page, with three auto-rerunning fragments beside a WebRTC call, hit it in full test runs: the call ended
and a message typed during it was lost with the page. The window itself survives the crash, so a small
script in it checks twice a second that the app is still mounted and, once it has been gone for two
seconds, reloads the page. The identity lives in a cookie, memories and sessions in the database, so the
visitor comes back to the same page as the same person. At most one reload a minute: a page that crashes
again at once stays as it is rather than reloading forever.
"""

from __future__ import annotations

import streamlit as st

CHECK_EVERY_MS = 500
GONE_FOR_CHECKS = 4  # two seconds without the app
AT_MOST_EVERY_MS = 60_000

_SCRIPT = """<script>
(() => {
  const w = window.parent || window;
  if (w.__mpRecovery) return;  // one watcher per window, whatever the number of runs
  w.__mpRecovery = {missing: 0};
  const doc = w.document;
  w.setInterval(() => {
    const state = w.__mpRecovery;
    if (doc.querySelector('[data-testid=stApp]')) { state.missing = 0; return; }
    state.missing += 1;
    if (state.missing < GONE_FOR_CHECKS) return;
    const last = Number(w.sessionStorage.getItem('mpRecoveredAt') || 0);
    if (Date.now() - last < AT_MOST_EVERY_MS) return;
    w.sessionStorage.setItem('mpRecoveredAt', String(Date.now()));
    w.sessionStorage.setItem('mpRecoveries', String(Number(w.sessionStorage.getItem('mpRecoveries') || 0) + 1));
    console.warn('Memory Playground: the page stopped drawing (a Streamlit frontend error); reloading it.');
    w.location.reload();
  }, CHECK_EVERY_MS);
})();
</script>"""


def script() -> str:
    return (
        _SCRIPT.replace("GONE_FOR_CHECKS", str(GONE_FOR_CHECKS))
        .replace("AT_MOST_EVERY_MS", str(AT_MOST_EVERY_MS))
        .replace("CHECK_EVERY_MS", str(CHECK_EVERY_MS))
    )


def install() -> None:
    """Put the watcher in the page (call once per run; the browser keeps one per window)."""
    st.html(script(), unsafe_allow_javascript=True)
