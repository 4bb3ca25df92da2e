"""The offline STT/TTS adapters with the real shipped models (no mocks):
Piper speaks, Whisper listens, through livekit's own STT/TTS interfaces."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from livekit import rtc
from livekit.agents import metrics

from agent.voice import local_tts
from agent.voice.local_stt import (
    WHISPER_SAMPLE_RATE,
    LocalWhisperSTT,
    load_model,
    normalize_transcript,
    to_whisper_input,
)
from agent.voice.local_tts import SAMPLE_RATE, LocalPiperTTS, SpokenPieces, split_first_clause
from core.transcript_correction import prefer_prompted
from tests.support.audio import piper_utterance, resample, rms

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def no_spoken_pieces(monkeypatch):
    """Every test starts with no kept audio, so what Piper synthesises does not depend on the tests before."""
    monkeypatch.setattr(local_tts, "spoken_pieces", SpokenPieces())


async def _synthesize(tts: LocalPiperTTS, text: str) -> rtc.AudioFrame:
    stream = tts.synthesize(text)
    return await stream.collect()


def _sine(freq: float, rate: int, seconds: float) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (np.sin(2 * np.pi * freq * t) * 12000).astype(np.int16)


def test_whisper_input_downmixes_and_resamples_webrtc_audio():
    # 0.5 s of a 440 Hz tone as 48 kHz interleaved stereo, split into 20 ms frames like WebRTC
    tone = _sine(440, 48_000, 0.5)
    stereo = np.repeat(tone, 2)
    frames = [rtc.AudioFrame(stereo[i : i + 1920].tobytes(), 48_000, 2, 960) for i in range(0, len(stereo), 1920)]
    pcm = to_whisper_input(frames)
    assert pcm.dtype == np.float32
    assert abs(len(pcm) - WHISPER_SAMPLE_RATE // 2) < 100
    spectrum = np.abs(np.fft.rfft(pcm))
    peak_hz = np.argmax(spectrum) * WHISPER_SAMPLE_RATE / len(pcm)
    assert abs(peak_hz - 440) < 5
    assert 0.3 < np.max(np.abs(pcm)) < 0.4  # 12000/32768, not doubled by the downmix


def test_transcript_numbers_lose_their_thousands_separators():
    assert normalize_transcript("Where is order 1,001?") == "Where is order 1001?"
    assert normalize_transcript("about 12,500,000 beans, 3 bags") == "about 12500000 beans, 3 bags"
    assert normalize_transcript("one, two, 3, 4") == "one, two, 3, 4"


async def test_piper_speaks_and_whisper_hears_teal():
    tts = LocalPiperTTS()
    collected: list[metrics.TTSMetrics] = []
    tts.on("metrics_collected", collected.append)
    frame = await _synthesize(tts, "My favorite color is teal.")
    assert frame.sample_rate == SAMPLE_RATE == 22_050 and frame.num_channels == 1
    assert 1.0 < frame.duration < 4.0
    audio = np.frombuffer(frame.data, dtype=np.int16)
    assert rms(audio) > 1000  # speech, not silence
    await asyncio.sleep(0)  # the metrics task reports after the stream closes
    assert collected and collected[0].ttfb > 0 and collected[0].audio_duration == pytest.approx(frame.duration)

    stt = LocalWhisperSTT()
    seen: list[metrics.STTMetrics] = []
    stt.on("metrics_collected", seen.append)
    # what the browser would send: 48 kHz stereo
    webrtc = np.repeat(resample(audio, SAMPLE_RATE, 48_000), 2)
    event = await stt.recognize(rtc.AudioFrame(webrtc.tobytes(), 48_000, 2, len(webrtc) // 2))
    text = event.alternatives[0].text.lower()
    assert "teal" in text and "favorite" in text
    assert 0.0 < event.alternatives[0].confidence <= 1.0
    assert seen and seen[0].audio_duration == pytest.approx(frame.duration, abs=0.05)


async def _pieces_synthesised(text: str) -> tuple[int, int]:
    """(pieces Piper had synthesised when the first audio reached the listener, pieces in all)."""
    stream = LocalPiperTTS().synthesize(text)
    done_at_first_audio = None
    async for _event in stream:
        if done_at_first_audio is None:
            done_at_first_audio = stream.sentences_done
    return done_at_first_audio, stream.sentences_done


async def test_piper_streams_each_sentence_as_soon_as_it_is_ready():
    text = "This is the first sentence. Here is a second one that is a bit longer. And a third."
    # the first audio reached the listener before the later sentences were synthesised
    assert await _pieces_synthesised(text) == (1, 3)


def test_a_long_first_sentence_is_spoken_from_its_first_clause():
    assert split_first_clause("Got it, I'll remember that your favorite color is teal.") == [
        "Got it,",
        "I'll remember that your favorite color is teal.",
    ]
    assert split_first_clause("Yes, sure.") == ["Yes, sure."]  # too short to gain anything
    assert split_first_clause("Hi! How are you today, friend?") == ["Hi! How are you today, friend?"]
    assert split_first_clause("Order 1001 shipped") == ["Order 1001 shipped"]


def test_a_long_first_clause_is_cut_before_a_phrase_within_six_words():
    # no comma to cut at: before the word a phrase starts with, the head said as an unfinished clause
    assert split_first_clause("You told me your favorite color is teal.") == [
        "You told me,",
        "your favorite color is teal.",
    ]
    # the first comma is only one word in; the next one is within six words
    assert split_first_clause("Done, I've forgotten your favorite color, and removed 2 past messages.") == [
        "Done, I've forgotten your favorite color,",
        "and removed 2 past messages.",
    ]
    # no phrase within six words: the first comma, however far
    long_clause = "Standard shipping takes three business days inside the country, usually a bit less."
    assert split_first_clause(long_clause) == [
        "Standard shipping takes three business days inside the country,",
        "usually a bit less.",
    ]
    # nothing worth splitting: the rest of the sentence would be two words
    assert split_first_clause("Your favorite color is teal.") == ["Your favorite color is teal."]


def test_a_date_is_never_said_in_two_pieces():
    """The brain quotes a past turn as "On Monday, November 23 you said: …" (agent/brain/replies.py)."""
    assert split_first_clause("On Monday, November 23 you said: “my sister Aiko got engaged”") == [
        "On Monday, November 23 you said:",
        "“my sister Aiko got engaged”",
    ]
    assert split_first_clause("It shipped on November 23, 2026, and arrives on Friday.") == [
        "It shipped on November 23, 2026,",
        "and arrives on Friday.",
    ]
    # a weekday and a comma without a month after it is still a clause
    assert split_first_clause("On Monday, you told me your favorite color is teal.") == [
        "On Monday,",
        "you told me your favorite color is teal.",
    ]


async def test_the_first_audio_of_a_long_sentence_comes_from_its_head():
    """The head is synthesised and pushed on its own, before the rest of the sentence exists."""
    assert await _pieces_synthesised("You told me your favorite color is teal and that you live in Denver.") == (1, 2)


async def test_a_reply_that_starts_like_an_earlier_one_starts_without_piper():
    """The audio of short pieces is kept: the same head again is pushed at once, the same audio as before."""
    first = LocalPiperTTS().synthesize("Got it, I'll remember that your favorite color is teal.")
    first_audio = [event.frame.data.tobytes() async for event in first]
    assert first.sentences_done == 2 and len(local_tts.spoken_pieces) == 2  # "Got it," and the rest

    again = LocalPiperTTS().synthesize("Got it, I'll remember that you live in Denver.")
    done_at_first_audio, again_audio = None, []
    async for event in again:
        if done_at_first_audio is None:
            done_at_first_audio = again.sentences_done
        again_audio.append(event.frame.data.tobytes())
    assert done_at_first_audio == 0 and again.sentences_done == 1  # only the new rest went to Piper
    assert local_tts.spoken_pieces.hits == 1
    head = len(local_tts.without_leading_silence(local_tts.spoken_pieces.get("Got it,", None)))
    assert b"".join(again_audio)[:head] == b"".join(first_audio)[:head]

    # a longer piece is not kept, nor one spoken more slowly mistaken for it
    long_text = "Standard shipping takes three business days inside the country and a bit less in town."
    await LocalPiperTTS().synthesize(long_text).collect()
    assert local_tts.spoken_pieces.get(long_text, None) is None
    slower = LocalPiperTTS(length_scale=1.3).synthesize("Got it, I'll remember that.")
    await slower.collect()
    assert slower.sentences_done == 2 and local_tts.spoken_pieces.get("Got it,", 1.3) is not None  # both to Piper


def _first_audible(samples: np.ndarray) -> int:
    return int(np.flatnonzero(np.abs(samples.astype(np.int32)) > local_tts.AUDIBLE_PEAK)[0])


def test_audio_starts_10_ms_before_its_first_audible_sample():
    lead_in = (np.random.default_rng(1).normal(0, 40, 1500)).astype(np.int16)  # quiet: peaks far below 300
    speech = _sine(220, SAMPLE_RATE, 0.2)
    trimmed = np.frombuffer(local_tts.without_leading_silence(np.concatenate([lead_in, speech]).tobytes()), np.int16)
    assert _first_audible(trimmed) == int(0.01 * SAMPLE_RATE)
    assert np.array_equal(trimmed[_first_audible(trimmed) :], speech[_first_audible(speech) :])
    assert local_tts.without_leading_silence(lead_in.tobytes()) == lead_in.tobytes()  # nothing audible: all kept


async def test_a_reply_starts_at_its_first_audible_sample_and_keeps_the_pause_between_its_pieces(monkeypatch):
    """Piper starts every text with 40-70 ms of near-silence: the listener would wait for nothing."""
    text = "You told me your favorite color is teal."  # said in two pieces: "You told me," and the rest

    async def said() -> np.ndarray:
        local_tts.spoken_pieces = SpokenPieces()
        frames = [event.frame.data.tobytes() async for event in LocalPiperTTS().synthesize(text)]
        return np.frombuffer(b"".join(frames), np.int16)

    trimmed = await said()
    assert _first_audible(trimmed) == int(0.01 * SAMPLE_RATE)
    # the rest keeps its lead-in: the breath between the two phrases
    head = local_tts.without_leading_silence(local_tts.spoken_pieces.get("You told me,", None))
    assert _first_audible(trimmed[len(head) // 2 :]) > 0.03 * SAMPLE_RATE

    monkeypatch.setattr(local_tts, "without_leading_silence", lambda audio: audio)
    assert _first_audible(await said()) > 0.03 * SAMPLE_RATE  # what Piper gives


async def test_a_piece_said_at_warm_up_starts_a_reply_at_once():
    assert local_tts.keep_spoken(["Got it,", "a piece far too long to be worth keeping in memory at all"]) == 1
    assert local_tts.keep_spoken(["Got it,"]) == 0  # already kept: Piper is not asked again
    assert local_tts.spoken_pieces.hits == 0  # warming up is not a reuse
    reply = LocalPiperTTS().synthesize("Got it, I'll remember that you live in Denver.")
    done_at_first_audio = None
    async for _event in reply:
        if done_at_first_audio is None:
            done_at_first_audio = reply.sentences_done
    assert done_at_first_audio == 0 and reply.sentences_done == 1 and local_tts.spoken_pieces.hits == 1


def test_the_voice_warm_up_says_the_brains_openers():
    from agent.brain.replies import SPOKEN_OPENERS
    from agent.voice.local_call import prewarm

    prewarm()
    assert all(local_tts.spoken_pieces.get(opener, None, count=False) for opener in SPOKEN_OPENERS)


def test_spoken_pieces_keep_the_most_recently_used():
    pieces = SpokenPieces(size=2)
    pieces.put("Got it,", None, b"a")
    pieces.put("Sure,", None, b"b")
    assert pieces.get("Got it,", None) == b"a"  # now the most recent
    pieces.put("Done,", None, b"c")
    assert pieces.get("Sure,", None) is None and pieces.get("Got it,", None) == b"a" and len(pieces) == 2


async def test_whisper_ignores_silence():
    stt = LocalWhisperSTT()
    silence = rtc.AudioFrame(np.zeros(16_000, np.int16).tobytes(), 16_000, 1, 16_000)
    event = await stt.recognize(silence)
    assert event.alternatives[0].text == ""


async def test_whisper_tiny_utterances_round_trip():
    stt = LocalWhisperSTT()
    for sentence, words in [
        ("What is my favorite color?", {"favorite", "color"}),
        ("Remember that I am allergic to nuts.", {"allergic", "nuts"}),
    ]:
        audio = piper_utterance(sentence)
        event = await stt.recognize(rtc.AudioFrame(audio.tobytes(), SAMPLE_RATE, 1, len(audio)))
        heard = event.alternatives[0].text.lower()
        assert words <= set(heard.replace("?", "").replace(".", "").split()), heard


async def test_whisper_spells_the_users_words_once_it_knows_them():
    """The prompt and the respelling together: a name and an order id come out as the user's."""
    audio = piper_utterance("My partner Thibault asked about order 1008.")
    frame = rtc.AudioFrame(audio.tobytes(), SAMPLE_RATE, 1, len(audio))
    untold = (await LocalWhisperSTT().recognize(frame)).alternatives[0].text
    assert "Thibault" not in untold, untold  # "My partner Thibble asked about order 108."
    stt = LocalWhisperSTT()
    stt.set_vocabulary(["1008", "Thibault"])
    heard = (await stt.recognize(frame)).alternatives[0].text
    assert "Thibault" in heard and "1008" in heard, heard


async def test_an_unsure_decode_is_decoded_again_with_a_beam_and_only_a_turn_decode():
    """`redecode_below`: a greedy decode less sure than it is replaced by a beam-5 decode of the same audio;
    never for silence, nor for an interim transcript (`redecode=False`), nor a sure decode."""
    audio = piper_utterance("My partner Thibault asked about order 1008.")
    pcm = resample(audio, SAMPLE_RATE, WHISPER_SAMPLE_RATE).astype(np.float32) / 32768
    encode = load_model().encode  # LastEncoding: the encoder's output for the last audio it read
    LocalWhisperSTT().transcribe_sync(np.zeros(WHISPER_SAMPLE_RATE, np.float32))  # the test before read this audio
    reused = encode.reused
    beam = LocalWhisperSTT(beam_size=5).transcribe_sync(pcm)
    assert encode.reused == reused  # a fresh encoding of this audio, to compare the re-decode with
    greedy = LocalWhisperSTT().transcribe_sync(pcm)
    assert not greedy.redecoded and not beam.redecoded and 0 < greedy.confidence < 1
    # the beam may agree with the greedy decode on this checkout's recording (Piper samples it anew), so
    # `redecoded` below, not a different confidence, is what tells the re-decode ran

    unsure = LocalWhisperSTT(redecode_below=greedy.confidence + 0.01)
    assert unsure.unsure(greedy.text, greedy.confidence) and not unsure.unsure("", 0.0)  # the rule bench/wer uses
    reused = encode.reused
    again = unsure.transcribe_sync(pcm)
    # the same beam decode as from a fresh encoding, for the price of the decoder alone
    assert again.redecoded and (again.text, again.confidence) == (beam.text, pytest.approx(beam.confidence))
    assert encode.reused == reused + 2  # this audio was the last encoded: neither decode encoded it again
    assert not unsure.transcribe_sync(pcm, redecode=False).redecoded  # an interim transcript
    reused = encode.reused
    assert not unsure.transcribe_sync(np.zeros(WHISPER_SAMPLE_RATE, np.float32)).redecoded  # silence
    assert encode.reused == reused  # other audio: encoded, not mistaken for the last
    sure = LocalWhisperSTT(redecode_below=greedy.confidence - 0.01).transcribe_sync(pcm)
    assert not sure.redecoded and sure.text == greedy.text

    await unsure.decode(pcm, interim=True)
    assert unsure.speculation.redecodes == 0
    assert (await unsure.decode(pcm)).redecoded and unsure.speculation.redecodes == 1


def test_with_a_vocabulary_an_unsure_turn_decode_is_weighed_against_the_plain_one(monkeypatch):
    """A turn's decode with the user's words set, less sure than `WEIGH_BELOW`, decodes the audio again
    without them (reusing the encoder's output) and keeps the one `prefer_prompted` picks; a sure one is
    kept alone, and an interim decode (`weigh=False`) is the prompted one alone."""
    from agent.voice import local_stt

    # steady: Piper's random noise once made Whisper hear "Thible" even with the name in its prompt (a
    # fresh-clone run), and the precondition below failed; the same audio every run
    audio = piper_utterance("My partner Thibault asked about order 1008.", steady=True)
    pcm = resample(audio, SAMPLE_RATE, WHISPER_SAMPLE_RATE).astype(np.float32) / 32768
    terms = ["Thibault", "1008", "Kestrel Grinder"]
    plain = LocalWhisperSTT(respell=False).transcribe_sync(pcm)  # no vocabulary: the style prompt alone
    stt = LocalWhisperSTT(respell=False)
    stt.set_vocabulary(terms)
    prompted = stt.transcribe_sync(pcm, weigh=False)
    assert not plain.plain and not prompted.plain
    # the prompted decode holds the user's words: the rule has something to weigh
    assert stt._corrector.vocabulary_words(stt._corrector.correct(prompted.text)) >= 2, prompted.text

    encode = load_model().encode
    monkeypatch.setattr(local_stt, "WEIGH_BELOW", 1.01)  # every decode is unsure enough to weigh
    reused = encode.reused
    weighed = stt.transcribe_sync(pcm)
    assert encode.reused == reused + 2  # both decodes used this audio's encoding (it was the last encoded)
    keep_prompted = prefer_prompted(
        (plain.text, plain.confidence), (prompted.text, prompted.confidence), stt._corrector
    )
    expected = prompted if keep_prompted else plain
    assert (weighed.text, weighed.plain) == (expected.text, not keep_prompted)
    assert weighed.confidence == pytest.approx(expected.confidence)

    monkeypatch.setattr(local_stt, "WEIGH_BELOW", prompted.confidence - 0.01)  # sure enough: kept alone
    reused = encode.reused
    sure = stt.transcribe_sync(pcm)
    assert encode.reused == reused + 1 and (sure.text, sure.plain) == (prompted.text, False)

    monkeypatch.setattr(local_stt, "WEIGH_BELOW", 1.01)
    reused = encode.reused
    interim = stt.transcribe_sync(pcm, redecode=False, weigh=False)
    assert encode.reused == reused + 1 and (interim.text, interim.plain) == (prompted.text, False)
