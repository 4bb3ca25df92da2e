"""Accessible names for buttons whose short visible label does not say what they act on.

Every memory card has "Edit" and "Delete", every transcript search hit "Open": a screen reader listing the
page's buttons read the same words over and over. Streamlit 1.67 has no aria-label parameter (`help=` is a
tooltip, not the name), so a small script in the page sets `aria-label` on the button inside each keyed
widget's container (`st-key-<key>`). The visible label stays short, and each name starts with it, so
voice control ("click Delete") still finds the button. The names live in the window and a
MutationObserver applies them again whenever Streamlit redraws a button (each rerun can replace it).

The same observer mends Streamlit's sliders: each slider's input is labelled by itself *and* by its group,
and both carry the label, so a screen reader said "Results Results" for the Knowledge page's slider and
every fusion slider. The group is dropped from the input's `aria-labelledby` when it says the same words.
The shell installs the observer on every page (`install`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import streamlit as st

# Installed once per window (its state outlives reruns and page changes); each call adds its names. A key
# is a widget's, so the same key means the same button (a later run's name replaces the earlier one).
_SCRIPT = """<script>
(() => {
  const w = window.parent || window;
  const names = w.__mpButtonNames = w.__mpButtonNames || {};
  Object.assign(names, NAMES);
  const apply = () => {
    w.__mpButtonNamesQueued = false;
    for (const button of w.document.querySelectorAll('[class*="st-key-"] button')) {
      const holder = button.closest('[class*="st-key-"]');  // the button's own widget, not its card
      const key = [...holder.classList].find(c => c.startsWith('st-key-'));
      const name = key && names[key.slice(7)];
      if (name && button.getAttribute('aria-label') !== name) button.setAttribute('aria-label', name);
    }
    // a slider's input is labelled by itself and by its group, both carrying the label: keep one
    for (const thumb of w.document.querySelectorAll('input[type="range"][aria-labelledby][aria-label]')) {
      const label = thumb.getAttribute('aria-label');
      const ids = thumb.getAttribute('aria-labelledby').split(' ');
      const kept = ids.filter(id => {
        const other = w.document.getElementById(id);
        return id === thumb.id || !other || other.getAttribute('aria-label') !== label;
      });
      if (kept.length < ids.length) thumb.setAttribute('aria-labelledby', kept.join(' '));
    }
  };
  apply();
  if (w.__mpButtonNamer) return;
  // one pass per frame, however many nodes a rerun replaces
  w.__mpButtonNamer = new w.MutationObserver(() => {
    if (w.__mpButtonNamesQueued) return;
    w.__mpButtonNamesQueued = true;
    w.requestAnimationFrame(apply);
  });
  w.__mpButtonNamer.observe(w.document.body, {childList: true, subtree: true});
})();
</script>"""


def script(names: Mapping[str, str]) -> str:
    # user text goes into the script: "<" escaped, so no "</script>" inside a name ends it
    encoded = json.dumps(dict(names), ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
    return _SCRIPT.replace("NAMES", encoded)


def install() -> None:
    """The observer, with no names of its own: every page's sliders get their name once (call once per run)."""
    st.html(script({}), unsafe_allow_javascript=True)


def name_buttons(names: Mapping[str, str]) -> None:
    """Give the button of each widget key in `names` its accessible name (call once per run, after them)."""
    if names:
        st.html(script(names), unsafe_allow_javascript=True)
