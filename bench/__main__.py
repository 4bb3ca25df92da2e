"""`python -m bench [--rounds N] [--recall-repeats N] [--scale-rows 10000,100000] [--conversation-full]
[--skip voice,recall,scale,quality,conversation-scale]`

Runs the benchmarks against the configured database (the embedded one under
DATA_DIR by default; `make bench` migrates and seeds it first; the scale runs
use their own throwaway servers) and writes docs/BENCHMARKS.md.

The conversation-memory scale run is small by default (50,000 turns);
--conversation-full runs 1,000,000 turns over 1,000 users (an hour or more on
2 cores) and keeps its raw numbers in docs/bench/conversation_scale_full.json,
which later default runs render again.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from agent import describe_models, plugins
from bench import conversation_scale, quality, recall, scale, voice
from bench.report import quality_markdown, scale_markdown
from bench.stats import fmt_ms, percentile, summary, table

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "BENCHMARKS.md"
FULL_SCALE_JSON = ROOT / "docs" / "bench" / "conversation_scale_full.json"
E2E_GOAL_MS = 1200
RECALL_GOAL_MS = 50


def machine() -> dict[str, str]:
    model = "unknown CPU"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        model = next(
            (line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")), model
        )
    except (OSError, subprocess.SubprocessError):
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return {
        "cpu": model,
        "cores": str(os.cpu_count()),
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
        "load": load,
    }


def voice_section(result: dict) -> str:
    llm = describe_models().llm
    brain = "offline brain" if describe_models().offline_brain else llm
    turns = result["turns"]
    heard = [t for t in turns if t.e2e_ms is not None]
    e2e = summary(t.e2e_ms for t in heard)
    session_e2e = summary(t.metrics.get("e2e_ms") for t in heard)
    parts = {
        "VAD endpointing (speech end → STT starts)": [
            t.metrics["transcription_delay_ms"] - t.metrics["stt_ms"]
            for t in heard
            if "transcription_delay_ms" in t.metrics and "stt_ms" in t.metrics
        ],
        "speech-to-text (Whisper tiny.en, int8)": [t.metrics.get("stt_ms") for t in heard],
        "per-turn memory recall (embed + hybrid SQL)": [t.metrics.get("recall_ms") for t in heard],
        "tools (DB reads/writes, embeddings)": [t.tools_ms for t in heard],
        f"LLM time to first token ({brain})": [t.metrics.get("llm_ttft_ms") for t in heard],
        "TTS time to first audio (Piper, first clause)": [t.metrics.get("tts_ttfb_ms") for t in heard],
    }
    rows = [[name, fmt_ms(percentile(values, 0.5)), fmt_ms(percentile(values, 0.95))] for name, values in parts.items()]
    goal = "met" if e2e["p50"] is not None and e2e["p50"] <= E2E_GOAL_MS else "not met"
    per_turn = [
        [
            f"`{t.text}`",
            f"`{t.heard}`" if t.heard else "(nothing heard)",
            fmt_ms(t.e2e_ms),
            fmt_ms(t.metrics.get("stt_ms")),
            fmt_ms(t.metrics.get("tts_ttfb_ms")),
            ", ".join(t.tools) or "–",
        ]
        for t in turns
    ]
    misheard = sum(1 for t in turns if t.heard is None or t.heard.strip(" .?!").lower() != t.text.strip(" .?!").lower())
    return "\n\n".join(
        [
            "## Voice: end of user speech → first agent audio (offline pipeline)",
            f"{len(heard)} turns ({result['rounds']} rounds of {len(turns) // max(1, result['rounds'])} Piper-recorded "
            "utterances) played in real time into a `LocalVoiceCall` as 48 kHz stereo 20 ms frames by a fake "
            "browser that also reads the agent's audio every 20 ms. Measured from the last frame of speech sent to "
            "the first non-silent agent frame read (20 ms resolution). Pipeline: Silero VAD (0.4 s of silence ends "
            f"the turn) → Whisper tiny.en → per-turn recall → {brain} + tools → Piper.",
            table(
                ["", "p50", "p95", "max"],
                [
                    [
                        "browser-measured (last speech frame → first agent audio)",
                        fmt_ms(e2e["p50"]),
                        fmt_ms(e2e["p95"]),
                        fmt_ms(e2e["max"]),
                    ],
                    [
                        "the session's own `e2e_latency` (VAD speech end → playback start)",
                        fmt_ms(session_e2e["p50"]),
                        fmt_ms(session_e2e["p95"]),
                        fmt_ms(session_e2e["max"]),
                    ],
                ],
            ),
            f"Goal: ≤ {E2E_GOAL_MS} ms p50 on 2 CPU cores — **{goal}** in this run.",
            "### Where the time goes (per turn)",
            table(["step", "p50", "p95"], rows),
            "The steps run one after another, so their sum is close to the end-to-end figure; the VAD row is the "
            "silence the turn detector waits for plus any queueing before Whisper starts.",
            "### Every turn",
            table(["said", "heard", "first audio", "STT", "TTS first audio", "tools"], per_turn),
            f"{misheard} of {len(turns)} utterances were not transcribed word for word.",
        ]
    )


def recall_section(result: dict) -> str:
    total = summary(result["total_ms"])
    embed = summary(result["embed_ms"])
    sql = summary([s - e for s, e in zip(result["search_ms"], result["embed_ms"], strict=True)])
    goal = "met" if total["p95"] is not None and total["p95"] <= RECALL_GOAL_MS else "not met"
    return "\n\n".join(
        [
            "## Per-turn recall (the agent's hybrid memory search before each reply)",
            f"`PlaygroundAgent.recall` called {result['queries']} times (20 different user sentences) for a user "
            f"with {result['memories']} memories, after a warm-up. It embeds the sentence (all-MiniLM-L6-v2 on CPU) "
            "and runs `match_memories_hybrid` (exact vector branch + full-text branch, fused with RRF) in a "
            f"worker thread, within a {result['budget_ms']:.0f} ms budget.",
            table(
                ["", "p50", "p95", "max"],
                [
                    [
                        "recall step (wall time, as the agent sees it)",
                        fmt_ms(total["p50"]),
                        fmt_ms(total["p95"]),
                        fmt_ms(total["max"]),
                    ],
                    ["… embedding the query", fmt_ms(embed["p50"]), fmt_ms(embed["p95"]), fmt_ms(embed["max"])],
                    ["… hybrid SQL", fmt_ms(sql["p50"]), fmt_ms(sql["p95"]), fmt_ms(sql["max"])],
                ],
            ),
            f"Goal: ≤ {RECALL_GOAL_MS} ms p95 — **{goal}** in this run "
            f"({result['skipped']} recalls went over the budget and were skipped).",
        ]
    )


def scale_section(result: dict) -> str:
    rows = []
    for item in result["results"]:
        s = summary(item["sql_ms"])
        rows.append(
            [
                f"{item['rows']:,}",
                f"{item['user']} ({item['own_memories']:,} memories)",
                fmt_ms(s["p50"]),
                fmt_ms(s["p95"]),
            ]
        )
    return "\n\n".join(
        [
            "## Hybrid search SQL as the table grows",
            "A throwaway embedded database filled with many users' memories (random unit vectors, text from a "
            f"small vocabulary so that common words appear in every user's rows; {result['per_user']} memories per "
            "user), plus one heavy user. Only the SQL call is timed (the query embedding is computed beforehand); "
            "8 questions × 5 repeats per row.",
            table(["memories in the table", "searching user", "p50", "p95"], rows),
            "The vector branch is exact per user (it reads that user's rows through the `(user_id, memory_type)` "
            "index and sorts them), so its cost follows one user's memory count, not the table's.",
        ]
    )


def quality_section(result: dict) -> str:
    return "\n\n".join(
        [
            "## Conversation memory: retrieval quality",
            "Measured with `python -m core.eval_retrieval` on the conversational set (docs/eval/conversations, "
            "split by user: dev for tuning, test measured once), top 10. *Before* loads the turns as slot memories "
            "and searches them the way every search ran before the conversation tier; *after* loads them with "
            "`--as-turns` into the conversation tier with the app's defaults. docs/RETRIEVAL.md explains the choices.",
            quality_markdown(result),
        ]
    )


def conversation_scale_section(result: dict, *, title: str, prefix: str) -> str:
    return "\n\n".join([f"## {title}", scale_markdown(result, image_prefix=prefix)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the 10 voice utterances (default 2)")
    parser.add_argument(
        "--utterances",
        type=int,
        default=None,
        help="only the first N of the voice utterances per round (a quick check)",
    )
    parser.add_argument("--recall-repeats", type=int, default=10)
    parser.add_argument(
        "--scale-rows",
        default="10000,100000",
        help="comma-separated table sizes for the scale run (default 10000,100000)",
    )
    parser.add_argument("--skip", default="", help="comma-separated: voice, recall, scale, quality, conversation-scale")
    parser.add_argument(
        "--conversation-full",
        action="store_true",
        help="conversation scale run with 1,000,000 turns over 1,000 users (default 50,000 / 100)",
    )
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    plugins.register()  # on the main thread, before the voice run starts the agent's loop thread

    started = time.time()
    before = machine()
    sections = []
    if "recall" not in skip:
        sections.append(recall_section(recall.run(args.recall_repeats)))
    if "voice" not in skip:
        sections.append(voice_section(voice.run(args.rounds, utterances=args.utterances)))
    if "scale" not in skip:
        sizes = [int(x) for x in args.scale_rows.split(",") if x.strip()]
        sections.append(scale_section(scale.run(sizes)))
    if "quality" not in skip:
        sections.append(quality_section(quality.run(["dev", "test"])))
    if "conversation-scale" not in skip:
        size = conversation_scale.FULL if args.conversation_full else conversation_scale.SMALL
        result = conversation_scale.run(size)
        result["machine"] = {**machine(), "date": dt.date.today().isoformat()}
        if args.conversation_full:
            FULL_SCALE_JSON.parent.mkdir(parents=True, exist_ok=True)
            FULL_SCALE_JSON.write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
        sections.append(
            conversation_scale_section(
                result, title=f"Conversation memory at scale ({size.turns:,} turns, this run)", prefix=size.label
            )
        )
    if ("conversation-scale" in skip or not args.conversation_full) and FULL_SCALE_JSON.exists():
        full = json.loads(FULL_SCALE_JSON.read_text(encoding="utf-8"))
        sections.append(
            conversation_scale_section(
                full,
                title=f"Conversation memory at scale ({full['size']['turns']:,} turns, the recorded full run)",
                prefix="full",
            )
            + "\n\nRaw numbers, every probed user included: "
            "[docs/bench/conversation_scale_full.json](bench/conversation_scale_full.json)."
        )
    info = machine()
    header = "\n".join(
        [
            "# Benchmarks",
            "",
            f"Written by `python -m bench` (`make bench`) on {dt.date.today().isoformat()} in "
            f"{(time.time() - started) / 60:.1f} min.",
            "",
            table(
                ["machine", ""],
                [
                    ["CPU", info["cpu"]],
                    ["cores", info["cores"]],
                    ["OS", info["os"]],
                    ["Python", info["python"]],
                    ["load average (1, 5, 15 min) before / after", f"{before['load']} / {info['load']}"],
                ],
            ),
            "",
            "The machine is shared: other processes' load shows up in these numbers, especially in the p95s.",
        ]
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(header + "\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
