"""`python -m bench --skip …` keeps the skipped sections of docs/BENCHMARKS.md as the last run wrote them."""

from bench.__main__ import _dated, _kept_sections, _kept_sentence

EARLIER_RUN = """# Benchmarks

Written by `python -m bench` on 2026-11-23.

## Voice: end of user speech → first agent audio

voice figures

## Conversation memory at scale (50,000 turns, this run)

small scale figures

## Conversation memory at scale (1,000,000 turns, the recorded full run)

full scale figures
"""


def test_skipped_sections_are_kept_and_the_full_scale_run_is_never_kept_twice(tmp_path):
    output = tmp_path / "BENCHMARKS.md"
    output.write_text(EARLIER_RUN, encoding="utf-8")

    kept = _kept_sections(output, {"conversation-scale"})
    # the small scale run is kept, no longer called "this run"; the full run is rendered again from its JSON,
    # so keeping it would repeat it
    assert list(kept) == ["Conversation memory at scale (50,000 turns, an earlier run)"]
    small = kept["Conversation memory at scale (50,000 turns, an earlier run)"]
    assert small.startswith("## Conversation memory at scale (50,000 turns, an earlier run)\n")
    assert small.endswith("small scale figures") and "this run" not in small

    assert list(_kept_sections(output, {"voice"})) == ["Voice: end of user speech → first agent audio"]
    assert _kept_sections(output, set()) == {}


def test_a_full_scale_run_written_by_the_run_that_measured_it_is_not_kept_beside_its_json_rendering(tmp_path):
    output = tmp_path / "BENCHMARKS.md"
    output.write_text(
        EARLIER_RUN.replace("(1,000,000 turns, the recorded full run)", "(1,000,000 turns, this run)"),
        encoding="utf-8",
    )
    everything = _kept_sections(output, {"conversation-scale"})
    assert "Conversation memory at scale (1,000,000 turns, an earlier run)" in everything
    kept = _kept_sections(
        output, {"conversation-scale"}, rendered_again=("Conversation memory at scale (1,000,000 turns,",)
    )
    assert list(kept) == ["Conversation memory at scale (50,000 turns, an earlier run)"]


def _wer_result(domain_after: float, generic_after: float) -> dict:
    row = {"clips": 4, "sentences": 1}
    return {
        "split": "test",
        "beam_size": 1,
        "redecode_below": 0.65,
        "rows": [
            row | {"kind": "domain", "before": 0.5, "redecoded": 0.4, "prompt": 0.3, "after": domain_after},
            row | {"kind": "generic", "before": 0.1, "redecoded": 0.1, "prompt": 0.1, "after": generic_after},
        ],
        "by_voice": [{"voice": "piper joe 1.0x", "before": 0.2, "redecoded": 0.15, "prompt": 0.1, "after": 0.08}],
        "by_take": [
            {"take": 1, "domain": {"before": 0.5, "after": 0.24}, "generic": {"before": 0.1, "after": 0.12}},
            {"take": 2, "domain": {"before": 0.5, "after": 0.3}, "generic": {"before": 0.14, "after": 0.1}},
        ],
        "terms": 3,
        "decode_seconds": {"before": 2.0, "redecoded": 2.8, "prompt": 2.4, "after": 2.6},
        "plain_kept": {"domain": (1, 4), "generic": (3, 4)},
        "examples": [("Call me Siobhan.", "piper joe 1.0x", "Call me Chivon.", "Call me Siobhan.")],
        "respelled": [("order 108", "order 1008")],
        "respelled_generic": 0,
    }


def test_the_word_error_rate_section_says_which_goals_are_met():
    from bench.wer import section

    unmet = section(_wer_result(domain_after=0.29, generic_after=0.12))
    assert "| domain (1 sentences, 4 clips) | 50.0% | 40.0% | 30.0% | 29.0% | 1.72× lower | 1.38× lower |" in unmet
    assert "| generic (1 sentences, 4 clips) | 10.0% | 10.0% | 10.0% | 12.0% | 1.20× higher | 1.20× higher |" in unmet
    assert (
        "domain WER halved — **not met** (29.0% after, half of before is 25.0%); generic no worse — **not met**"
        in unmet
    )
    assert "| `order 108` | `order 1008` |" in unmet
    assert "250 ms per clip on average before, 350 ms re-decoded, 300 ms with the prompt and 325 ms after" in unmet
    assert "kept for 1 of 4 domain clips and 3 of 4 generic ones" in unmet
    assert "less sure than 0.65" in unmet
    assert "the Piper voice's clips in 2 takes" in unmet
    assert "| 1 | 50.0% | 24.0% | 10.0% | 12.0% | yes | no |" in unmet  # each take judged on its own
    assert "| 2 | 50.0% | 30.0% | 14.0% | 10.0% | no | yes |" in unmet
    met = section(_wer_result(domain_after=0.25, generic_after=0.1))
    assert "domain WER halved — **met** (25.0% after, half of before is 25.0%); generic no worse — **met**" in met


def test_each_kept_section_says_the_date_it_was_measured_on_not_the_last_runs(tmp_path):
    """A section kept through several runs keeps its own date (the header used to name the last run's)."""
    output = tmp_path / "BENCHMARKS.md"
    older = _dated("## Voice: end of user speech → first agent audio\n\nvoice figures", "2026-11-20")
    output.write_text(EARLIER_RUN.replace("## Voice: end of user speech → first agent audio\n\nvoice figures", older))
    kept = _kept_sections(output, {"voice", "conversation-scale"})
    assert kept["Voice: end of user speech → first agent audio"].endswith("<!-- measured on 2026-11-20 -->")
    sentence = _kept_sentence(kept, "2026-11-23")  # the file's header date, for a section without its own
    assert "“Voice: end of user speech → first agent audio” (2026-11-20)" in sentence
    assert "“Conversation memory at scale (50,000 turns, an earlier run)” (2026-11-23)" in sentence
    assert _dated(older, "2026-11-27") == older  # kept again: still its own date
    full = "## Conversation memory at scale (1,000,000 turns, the recorded full run)\n\nfull"
    assert _dated(full, "2026-11-27") == full  # rendered from its JSON, which says when it ran


def test_the_voice_section_gives_the_first_audio_of_replies_without_kept_audio_apart():
    """Replies that began with audio Piper had already made are counted and marked, and the figure
    without them is given beside the one of every turn (the bench repeats whole replies)."""
    from bench.__main__ import voice_section
    from bench.voice import VoiceTurn

    def turn(text: str, e2e: float, kept: int) -> VoiceTurn:
        metrics = {"e2e_ms": e2e - 90, "stt_ms": 400.0, "tts_ttfb_ms": 2.0 if kept else 80.0}
        return VoiceTurn(text=text, heard=text, turn=1, e2e_ms=e2e, metrics=metrics, finals=1, kept_pieces=kept)

    turns = [turn("Call me Sam.", 700.0, 0), turn("Where do I live?", 760.0, 0), turn("Call me Sam.", 600.0, 2)]
    result = {
        "turns": turns,
        "rounds": 1,
        "barge_in_ms": [250.0],
        "speculation": {},
        "whisper_alone_ms": [350.0],
        "load": {"before": 0.2, "after": 0.4},
    }
    text = voice_section(result)
    assert "| browser-measured (last speech frame → first agent audio) | 700 ms | 754 ms | 760 ms |" in text
    assert "| … the turns whose reply Piper synthesised from its first word (no kept audio) | 730 ms |" in text
    assert "Kept audio: 1 of 3 replies" in text
    assert "| 2.0 ms (kept) |" in text and text.count("(kept)") == 1  # the one turn
