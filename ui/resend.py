"""A typed message that never reached the server is sent again, once it is clear it was lost.

Streamlit's chat input clears itself and forgets the text as soon as it hands the message to the
websocket. Now and then a submission never starts a script run: a second submission that reaches the
server while the rerun asked for by the first is still waiting to start (the running script has not yet
reached its next Streamlit call) is folded into it, and only the newer text survives (Streamlit's
`_coalesce_widget_states`; three quick messages while the Chat page waited up to 0.8 s for an answer
lost one of them in CI on 2026-11-28). So the page tells the browser what it received: the
count (`received`) and a fingerprint of each of the last RECENT_FINGERPRINTS texts. A small script in
the browser remembers *every* message the visitor submits, with the count it saw at that moment, until
a text with its fingerprint shows up after that count. One still missing a few seconds later, with no
script running and the box empty, is put back and submitted again, with an invisible mark that carries
that count. The server drops a marked message it already has (received after the count the browser
saw, with the same text), so a slow acknowledgement never makes a duplicate.

A reload (by the visitor, or by the page recovering from a frontend crash, ui/recovery.py) starts a new
window, and with it a new count: a message sent but not yet acknowledged, or text typed but not sent,
would be lost with the old window. So both are also kept in the tab's sessionStorage, and a new window
whose box is empty puts the text back into the box, *not sent*: the visitor sees it and presses Enter.
A sent message that shows in the conversation after the reload (the new page took the conversation
over, ui/chat_state.py) arrived, and is not put back.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Collection, Sequence

# U+2063 (invisible separator) around the count in binary, U+200B for 0 and U+200C for 1: nothing
# shows while the text sits in the box for a moment, and nobody types these.
_MARK = re.compile("\u2063([\u200b\u200c]+)\u2063$")
_BITS = {"\u200b": "0", "\u200c": "1"}

RESEND_AFTER_MS = 4000
DOUBLE_SUBMIT_SECONDS = 1.5  # the same plain message again this soon is one submission handed over twice
LATE_ORIGINAL_SECONDS = 30.0  # a plain message equal to a resend kept this recently is its late original
MAX_RESENDS = 3
RESTORE_AFTER_MS = 1500  # a new window waits this long for the page (and its conversation) to be drawn
KEPT_FOR_MS = 30 * 60 * 1000  # text kept for a reload older than this is not put back
RECENT_FINGERPRINTS = 50  # the browser learns the fingerprints of this many of the latest messages received


def unmark(text: str) -> tuple[str, int | None]:
    """(the message without the mark, the count the browser saw when it was first sent; None when
    the visitor sent it, not the resend script)."""
    match = _MARK.search(text)
    if match is None:
        return text, None
    count = int("".join(_BITS[c] for c in match.group(1)), 2)
    return text[: match.start()], count


def fingerprint(text: str) -> int:
    """32-bit FNV-1a over the text's UTF-16 code units, spaces and control characters left out: what the
    browser script computes from the box's text (its `fingerprint`), so both sides agree whether or not
    Streamlit trimmed the message on its way."""
    value = 0x811C9DC5
    units = text.encode("utf-16-le")
    for i in range(0, len(units), 2):
        unit = units[i] | units[i + 1] << 8
        if unit > 0x20:
            value = ((value ^ unit) * 0x01000193) & 0xFFFFFFFF
    return value


def mark(text: str, seen: int) -> str:
    """What the browser script sends again (the Python side exists for the tests)."""
    return text + "\u2063" + "".join("\u200c" if b == "1" else "\u200b" for b in f"{seen:b}") + "\u2063"


def already_received(text: str, seen: int, received: Sequence[str]) -> bool:
    """Whether `text`, resent by a browser that had seen `seen` messages acknowledged, arrived after all."""
    return text in received[seen:]


def take(
    submitted: str | None,
    received: list[str],
    arrivals: list[tuple[float, bool]] | None = None,
    *,
    still_waiting: Collection[str] = (),
    now: float | None = None,
) -> str | None:
    """What a chat input's submit callback keeps: the message without the mark, appended to `received`
    (the page's count); None when it is a second copy of one already kept:

    - a resend (marked) of one that had arrived after all;
    - the visitor's own submission arriving after the resend of it was kept (the original was held up
      on its way, so the page sent it again first), within LATE_ORIGINAL_SECONDS;
    - the same plain message again within DOUBLE_SUBMIT_SECONDS while the first copy is `still_waiting`
      (not yet handed to the agent): one submission handed to the callback twice. On 2026-11-27 a
      fresh-clone run stored the first message of a cold start twice, both plain, with no resend left in
      the browser (tests/app/test_first_visit.py); only a second handing over or a late original explains
      that. A message repeated once the first was sent is always kept.

    `arrivals` (kept beside `received`) holds (time.monotonic(), was a resend) of each kept message."""
    text, seen = unmark(submitted or "")
    if seen is not None and already_received(text, seen, received):
        return None
    now = time.monotonic() if now is None else now
    if seen is None and arrivals:
        for kept, (at, resent) in zip(reversed(received), reversed(arrivals), strict=False):
            if now - at > LATE_ORIGINAL_SECONDS:
                break
            if kept == text and (resent or (now - at <= DOUBLE_SUBMIT_SECONDS and text in still_waiting)):
                return None
    received.append(text)
    if arrivals is not None:
        arrivals.append((now, seen is not None))
    return text


# The browser side. Installed once per chat input (the app's window keeps its state across reruns and
# page changes); each run updates the count and the fingerprints. Enter or the send button records the
# message; every half second the script checks.
SCRIPT = """<script>
(() => {
  const w = window.parent || window;
  const all = w.__mpResend = w.__mpResend || {};  // one state per chat input (Chat and Voice pages)
  const state = all['%(input_key)s'] = all['%(input_key)s'] || {pending: [], claimed: []};
  // what a reload must not lose, in the tab's sessionStorage: the unsent draft and the unacknowledged messages
  const kept = {draft: 'mpDraft:%(input_key)s', sent: 'mpSent:%(input_key)s'};
  const keep = (name, text) => {
    try {
      if (text && text.trim()) w.sessionStorage.setItem(kept[name], JSON.stringify({text, at: Date.now()}));
      else w.sessionStorage.removeItem(kept[name]);
    } catch (e) { /* storage full or blocked: the page works as before */ }
  };
  const keepSent = () => keep('sent', state.pending.map(p => p.text).join('\\n\\n'));
  const stored = name => {
    try {
      const item = JSON.parse(w.sessionStorage.getItem(kept[name]) || 'null');
      return item && Date.now() - item.at < %(kept_for_ms)d ? item.text : null;
    } catch (e) { return null; }
  };
  // ui.resend.fingerprint: FNV-1a over the UTF-16 code units, spaces and control characters left out
  const fingerprint = t => {
    let h = 0x811c9dc5;
    for (let i = 0; i < t.length; i++) {
      const u = t.charCodeAt(i);
      if (u > 0x20) h = Math.imul(h ^ u, 0x01000193) >>> 0;
    }
    return h;
  };
  w.__mpFingerprint = fingerprint;  // for tests/app/test_lost_message.py, which checks it against the server's
  // A pending message arrived when a received text with its fingerprint comes at or after the count it
  // saw; each received message answers for one pending message (the same text sent twice is two).
  const acknowledge = () => {
    const first = state.received - state.recent.length;
    state.claimed = state.claimed.filter(i => i >= first);
    const before = state.pending.length;
    state.pending = state.pending.filter(p => {
      if (p.seen < first) return false;  // more messages arrived since than the page lists: it is long in
      for (let i = p.seen; i < state.received; i++) {
        if (state.recent[i - first] === p.fingerprint && !state.claimed.includes(i)) {
          state.claimed.push(i);
          return false;
        }
      }
      return true;
    });
    if (state.pending.length !== before) keepSent();
  };
  if (!Array.isArray(state.pending)) state.pending = [];  // a window that ran an older version of this script
  if (!Array.isArray(state.claimed)) state.claimed = [];
  if (%(received)d < (state.received || 0)) {  // a new server session (the app restarted): a new count
    state.claimed = [];
    state.pending.forEach(p => { p.seen = 0; });
  }
  state.received = %(received)d;
  state.recent = %(recent)s;
  acknowledge();
  if (state.installed) return;
  state.installed = true;
  const doc = w.document;
  // this input's box only: the Chat and Voice pages each have one, with their own key
  const box = () => doc.querySelector('.st-key-%(input_key)s [data-testid=stChatInputTextArea]');
  const remember = () => {
    const b = box();
    if (state.resending || !b || !b.value.trim()) return;
    const text = b.value;
    state.pending.push({text, fingerprint: fingerprint(text), seen: state.received, at: Date.now(), tries: 0});
    keepSent();
    keep('draft', null);
  };
  doc.addEventListener('keydown', e => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.target === box()) remember();
  }, true);
  doc.addEventListener('click', e => {
    if (e.target.closest && e.target.closest('.st-key-%(input_key)s [data-testid=stChatInputSubmitButton]')) remember();
  }, true);
  doc.addEventListener('input', e => {
    if (!state.resending && e.target === box()) keep('draft', e.target.value);
  }, true);
  const setBox = (b, text) => {
    const setValue = Object.getOwnPropertyDescriptor(w.HTMLTextAreaElement.prototype, 'value').set;
    setValue.call(b, text);
    b.dispatchEvent(new Event('input', {bubbles: true}));
  };
  // a new window (a reload): put back what the last one had not got through, once the page is drawn
  const restoring = {draft: stored('draft'), sent: stored('sent'), since: Date.now()};
  keepSent();
  // compared as plain words: what a bubble shows and what the box held may differ in everything but words
  const words = t => ' ' + t.toLowerCase().replace(/[^\\p{L}\\p{N}]+/gu, ' ').trim() + ' ';
  const shown = t => words(t).trim() !== '' && Array.from(doc.querySelectorAll('[data-testid=stChatMessage]'))
    .some(m => m.querySelector('[data-testid=stChatMessageAvatarUser]') && words(m.innerText).includes(words(t)));
  const putBack = (b, text) => {  // into an empty box, not sent
    if (!text || !text.trim() || b.value.trim()) return;
    setBox(b, text);
    keep('draft', text);
  };
  const restore = w.setInterval(() => {
    const b = box(), waited = Date.now() - restoring.since;
    if (waited > 120000) { w.clearInterval(restore); return; }
    if (!b || b.disabled || waited < %(restore_after_ms)d || doc.querySelector('[data-testid=stStatusWidget]')) return;
    w.clearInterval(restore);
    const sent = (restoring.sent || '').split('\\n\\n');
    putBack(b, [...sent, restoring.draft].filter(t => t && t.trim() && !shown(t)).join('\\n\\n'));
  }, 250);
  const bits = n => n.toString(2).split('').map(b => b === '1' ? '\\u200c' : '\\u200b').join('');
  w.setInterval(() => {
    const b = box();
    if (!state.pending.length || !b) return;
    acknowledge();
    const late = state.pending.filter(p => Date.now() - p.at >= %(after_ms)d);
    if (!late.length) return;
    if (doc.querySelector('[data-testid=stStatusWidget]') || b.disabled || b.value.trim()) return;
    const given = late.filter(p => p.tries >= %(max_tries)d);
    if (given.length) {  // they never got through: the text goes back into the box, not lost
      state.pending = state.pending.filter(p => !given.includes(p));
      keepSent();
      putBack(b, given.map(p => p.text).filter(t => !shown(t)).join('\\n\\n'));
      return;
    }
    const p = late[0];  // one at a time, the oldest first
    p.tries += 1;
    p.at = Date.now();
    state.resending = true;
    setBox(b, p.text + '\\u2063' + bits(p.seen) + '\\u2063');
    state.resending = false;
    w.setTimeout(() => {
      state.resending = true;
      const enter = {key: 'Enter', code: 'Enter', keyCode: 13, which: 13, bubbles: true};
      b.dispatchEvent(new KeyboardEvent('keydown', enter));
      state.resending = false;
    }, 50);
  }, 500);
})();
</script>"""


def script(received: Sequence[str], *, input_key: str) -> str:
    """The browser side for the chat input with key `input_key`, which has received the messages `received`
    (in order, without their marks)."""
    return SCRIPT % {
        "received": len(received),
        "recent": json.dumps([fingerprint(text) for text in received[-RECENT_FINGERPRINTS:]]),
        "input_key": input_key,
        "after_ms": RESEND_AFTER_MS,
        "max_tries": MAX_RESENDS,
        "restore_after_ms": RESTORE_AFTER_MS,
        "kept_for_ms": KEPT_FOR_MS,
    }
