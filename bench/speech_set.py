"""A recorded set of utterances for measuring speech recognition: rich in the names, places,
numbers and product words one user and this deployment use, plus generic ones.

Each sentence is spoken by several synthetic voices (the Piper voice and espeak-ng voices), at
1.0x and 1.2x speed, clean and with pink noise mixed in by sox, and kept as 16 kHz mono WAV files
under DATA_DIR/bench/speech_set (made once, reused; espeak-ng and sox are Debian packages in the
Makefile's apt list). Piper samples noise as it speaks, so each recording of a sentence is said a little
differently and one take moves a 40-clip word error rate by a point or two; its clips can be recorded
in several takes (`build(takes=...)`). espeak-ng and the seeded noise give the same clip every time, so
they are recorded once. The bench user's memories (`PERSONA`) are what a real user would have told the
agent, so biasing Whisper with them is what the app does for that user.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.config import get_settings

RATE = 16_000

# What the bench user told the agent before (memory_type -> content), as the app stores it.
PERSONA: dict[str, str] = {
    "name": "Siobhan Okafor, goes by Siobhan",
    "home_city": "Albuquerque, New Mexico",
    "favorite_drink": "cortado with oat milk",
    "machine_owned": "Kestrel Grinder in Chalk White",
    "allergy": "hazelnuts",
    "pet": "a dachshund named Pretzel",
    "partner": "Thibault",
    "favorite_beans": "Ridgeline Ethiopia",
    "workplace": "Sandia Labs",
}

# Sentences with this user's words (PERSONA), the knowledge base's product names and order ids.
DOMAIN = [
    "My name is Siobhan Okafor.",
    "Call me Siobhan, please.",
    "I live in Albuquerque, New Mexico.",
    "Where is order 1007?",
    "Can you check order 1003 for me?",
    "My dog Pretzel knocked over the Kestrel Grinder.",
    "I usually drink a cortado with oat milk.",
    "Is the Kestrel One covered by the warranty?",
    "Thibault wants the Ridgeline Ethiopia beans.",
    "I am allergic to hazelnuts.",
    "Does the Kestrel Club ship to Albuquerque?",
    "My Kestrel One shows error E03.",
    "How much is the calibrated tamper?",
    "Siobhan here, what is the status of order 1010?",
    "Send the descaling kit to Albuquerque.",
    "Can I pay for the Kestrel Grinder with Affirm?",
    "Pretzel is a miniature dachshund.",
    "Order 1002 should arrive on Monday.",
    "I work at Sandia Labs in Albuquerque.",
    "Thibault broke the milk pitcher from order 1009.",
    "Remember that my partner is Thibault.",
    "My favorite beans are Ridgeline Ethiopia.",
    "Is order 1005 cancelled?",
    "My Kestrel Grinder is chalk white.",
    "Where do I find the water filter cartridges?",
    "Please remember that Pretzel is my dog.",
    "I would like a cortado, no hazelnuts.",
    "What is the return window for the Kestrel One?",
    "Track order 1008 to Albuquerque, please.",
    "Okafor is spelled O K A F O R.",
    "Does Thibault have a Kestrel Club plan?",
    "Order 1004 had the cleaning tablets.",
    "Ship the Ridgeline Ethiopia beans to Sandia Labs.",
    "My Kestrel One in sage green arrived.",
    "Siobhan and Thibault live in Albuquerque.",
    "Can Pretzel have oat milk?",
    "The knock box from order 1007 is missing.",
    "Tell me about the Kestrel Club plans.",
    "I need a new tamper for my Kestrel One.",
    "Cancel order 1003, please.",
]

# Sentences without any of those words: biasing must not make these worse.
GENERIC = [
    "My favorite color is teal.",
    "What is my favorite color?",
    "Where do I live?",
    "Remember that I am allergic to nuts.",
    "What do you know about me?",
    "How long does shipping take?",
    "Forget my favorite color.",
    "Can you help me with a return?",
    "What time do you open tomorrow?",
    "Thank you, that is all for today.",
]


# A development split: other sentences with the same user's and deployment's words, for choosing
# settings (the respelling thresholds, the prompt's form) without fitting them to the sentences above.
DEV_DOMAIN = [
    "Siobhan Okafor speaking, is my order ready?",
    "Please call me Siobhan from now on.",
    "We moved to Albuquerque last spring.",
    "What happened to order 1006?",
    "Has order 1001 shipped yet?",
    "Pretzel likes sleeping next to the Kestrel One.",
    "A cortado with oat milk is my morning drink.",
    "Does the warranty cover the Kestrel Grinder?",
    "Thibault drinks the House Blend beans.",
    "Hazelnuts make me sick.",
    "Can the Kestrel Club send beans to New Mexico?",
    "The Kestrel One says error E01.",
    "I want the milk pitcher in stainless steel.",
    "Is order 1008 still in Albuquerque?",
    "Do I need the descaling kit every month?",
    "Does Affirm work for the Kestrel One?",
    "My dachshund Pretzel chewed the knock box.",
    "Order 1004 arrived on Friday.",
    "Sandia Labs is where I work.",
    "Thibault ordered the water filter cartridges.",
    "My partner Thibault likes a cortado too.",
    "Ridgeline Ethiopia beans are the best.",
    "Please cancel order 1006.",
    "The Kestrel Grinder in chalk white looks great.",
    "How many cleaning tablets come in a box?",
    "Pretzel is my little dog.",
    "No hazelnuts in my cortado, please.",
    "Can I return the calibrated tamper?",
    "Send order 1002 to Sandia Labs.",
    "Is the Kestrel Club cheaper than buying beans?",
]
DEV_GENERIC = [
    "I like to read before bed.",
    "What did I tell you yesterday?",
    "Please remember that I prefer tea.",
    "Is it going to rain this weekend?",
    "Delete everything you know about me.",
    "How do I change my password?",
    "Can you speak a little slower?",
    "I moved to a new city last year.",
    "What are your opening hours?",
    "That is all, goodbye.",
]


@dataclass(frozen=True)
class Voice:
    """One way of speaking a sentence."""

    engine: str  # "piper" | "espeak-ng"
    name: str  # Piper: the bundled voice; espeak-ng: its voice id
    speed: float  # 1.0 = the voice's natural pace
    noise: bool  # pink noise mixed in (about 15 dB below the speech)

    @property
    def label(self) -> str:
        noisy = ", noise" if self.noise else ""
        return f"{self.engine} {self.name} {self.speed:.1f}x{noisy}"


VOICES = [
    Voice("piper", "joe", 1.0, False),
    Voice("piper", "joe", 1.2, True),
    Voice("espeak-ng", "en-us", 1.0, True),
    Voice("espeak-ng", "en-gb-x-rp", 1.2, False),
]
ESPEAK_WORDS_PER_MINUTE = 165
NOISE_DB_BELOW_SPEECH = 15.0


@dataclass(frozen=True)
class Clip:
    text: str
    voice: Voice
    path: Path
    kind: str  # "domain" | "generic"
    take: int = 0  # which recording of a Piper clip (espeak-ng clips are all take 0)

    def pcm(self) -> np.ndarray:
        """16 kHz mono float32 in [-1, 1] (what Whisper takes)."""
        with wave.open(str(self.path), "rb") as wav:
            data = np.frombuffer(wav.readframes(wav.getnframes()), dtype=np.int16)
        return data.astype(np.float32) / 32768.0

    def pcm_int16(self) -> np.ndarray:
        with wave.open(str(self.path), "rb") as wav:
            return np.frombuffer(wav.readframes(wav.getnframes()), dtype=np.int16).copy()


def tools_missing() -> list[str]:
    return [tool for tool in ("espeak-ng", "sox") if shutil.which(tool) is None]


def _run(args: list[str]) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=60)


def _record(text: str, voice: Voice, out: Path) -> None:
    from tests.support.audio import piper_utterance, write_wav

    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.wav"
        if voice.engine == "piper":
            write_wav(raw, piper_utterance(text, 1.0 / voice.speed), 22_050)
        else:
            wpm = str(round(ESPEAK_WORDS_PER_MINUTE * voice.speed))
            _run(["espeak-ng", "-v", voice.name, "-s", wpm, "-w", str(raw), text])
        speech = Path(tmp) / "speech.wav"
        _run(["sox", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", str(speech), "norm", "-3"])
        if not voice.noise:
            shutil.move(speech, out)
            return
        seconds = float(subprocess.run(["soxi", "-D", str(speech)], capture_output=True, text=True).stdout)
        noise = Path(tmp) / "noise.wav"
        # -R: the same noise on every run, so the set is reproducible
        level = f"-{NOISE_DB_BELOW_SPEECH + 3:.0f}"
        _run(["sox", "-R", "-n", "-r", str(RATE), "-c", "1", "-b", "16", str(noise), "synth", f"{seconds:.3f}",
              "pinknoise", "norm", level])  # fmt: skip
        _run(["sox", "-R", "-m", str(speech), str(noise), str(out)])


def folder() -> Path:
    return get_settings().data_dir / "bench" / "speech_set"


def build(
    *, sentences: list[str] | None = None, voices: list[Voice] | None = None, takes: int = 1, log=print
) -> list[Clip]:
    """Every (sentence, voice) clip, recorded on first use; Piper's in `takes` takes."""
    missing = tools_missing()
    if missing:
        raise RuntimeError(f"{' and '.join(missing)} not installed: run `make system-packages` (apt).")
    target = folder()
    target.mkdir(parents=True, exist_ok=True)
    clips = []
    made = 0
    domain = set(DOMAIN) | set(DEV_DOMAIN)
    for text in sentences if sentences is not None else DOMAIN + GENERIC:
        for voice in voices or VOICES:
            for take in range(takes if voice.engine == "piper" else 1):
                # take 0 keeps the name the clips had before there were takes, so they are reused
                name = f"{text}|{voice.label}" + (f"|take {take}" if take else "")
                path = target / f"{hashlib.sha1(name.encode()).hexdigest()[:16]}.wav"
                if not path.exists():
                    _record(text, voice, path)
                    made += 1
                clips.append(Clip(text, voice, path, "domain" if text in domain else "generic", take))
    if made:
        log(f"speech set: recorded {made} clips into {target}")
    return clips
