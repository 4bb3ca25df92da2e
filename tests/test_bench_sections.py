"""`python -m bench --skip …` keeps the skipped sections of docs/BENCHMARKS.md as the last run wrote them."""

from bench.__main__ import _kept_sections

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
    # the small scale run is kept; the full run is rendered again from its JSON, so keeping it would repeat it
    assert list(kept) == ["Conversation memory at scale (50,000 turns, this run)"]
    assert kept["Conversation memory at scale (50,000 turns, this run)"].endswith("small scale figures")

    assert list(_kept_sections(output, {"voice"})) == ["Voice: end of user speech → first agent audio"]
    assert _kept_sections(output, set()) == {}


def test_a_full_scale_run_written_by_the_run_that_measured_it_is_not_kept_beside_its_json_rendering(tmp_path):
    output = tmp_path / "BENCHMARKS.md"
    output.write_text(
        EARLIER_RUN.replace("(1,000,000 turns, the recorded full run)", "(1,000,000 turns, this run)"),
        encoding="utf-8",
    )
    everything = _kept_sections(output, {"conversation-scale"})
    assert "Conversation memory at scale (1,000,000 turns, this run)" in everything
    kept = _kept_sections(
        output, {"conversation-scale"}, rendered_again=("Conversation memory at scale (1,000,000 turns,",)
    )
    assert list(kept) == ["Conversation memory at scale (50,000 turns, this run)"]
