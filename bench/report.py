"""Markdown tables and PNG plots for the conversation-memory benchmarks (bench.quality,
bench.conversation_scale)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.stats import fmt_ms, table

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "images"
LABELS = {
    "p10": "10th percentile user",
    "typical": "median user (typical)",
    "p75": "75th percentile user",
    "p90": "90th percentile user",
    "p99": "99th percentile user",
    "heavy": "heavy user",
}


def _mb(size: int) -> str:
    return f"{size / 2**20:,.0f} MB"


def _n(value: float) -> str:
    return f"{value:.3f}"


def quality_sets(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{set: {split: {"before", "after"}}}; results saved before the second set put the splits at the top."""
    if "sets" in result:
        return result["sets"]
    return {"conversations": {s: result[s] for s in ("dev", "test") if s in result}}


def quality_markdown(result: dict[str, Any]) -> str:
    parts = []
    rows = []
    sets = quality_sets(result)
    for set_name, split in [(n, s) for n in sets for s in ("dev", "test")]:
        if split not in sets[set_name]:
            continue
        for when in ("before", "after"):
            summary = sets[set_name][split][when]
            modes = summary["modes"]
            label = (
                "before: turns as slot memories, 0.7/0.3, k 60, OR + ts_rank_cd"
                if when == "before"
                else f"after: conversation tier, {summary['weights'][0]:g}/{summary['weights'][1]:g}, "
                f"k {summary['rrf_k']}, text weighted by English rarity + per-user IDF, text weight by coverage, "
                "the turn in context, repeats folded, vector weight by confidence"
            )
            rows.append(
                [f"{set_name} {split} ({summary['queries']:,} questions, {summary['memories']:,} turns)", label]
                + [_n(modes[m][f]) for m in ("vector", "text", "hybrid") for f in ("recall@5", "recall@10", "mrr")]
            )
    if rows:
        parts.append(
            table(
                [
                    "set and split",
                    "retrieval",
                    "vector R@5",
                    "R@10",
                    "MRR",
                    "text R@5",
                    "R@10",
                    "MRR",
                    "hybrid R@5",
                    "R@10",
                    "MRR",
                ],
                rows,
            )
        )
    for set_name, split in [(n, s) for n in sets for s in ("dev", "test")]:
        if split in sets[set_name]:
            after = sets[set_name][split]["after"]["modes"]
            best = max(after["vector"]["recall@5"], after["text"]["recall@5"])
            gain = after["hybrid"]["recall@5"] - best
            parts.append(
                f"**{set_name} {split}:** hybrid recall@5 {after['hybrid']['recall@5']:.3f}, "
                f"{gain * 100:+.1f} points over the better single branch ({best:.3f})."
            )
    if "slots" in result:
        slots = result["slots"]["modes"]
        weights, k = result["slots"]["weights"], result["slots"]["rrf_k"]
        parts.append(
            "Slot memories (docs/eval/memories.jsonl, 114 questions), app defaults "
            f"{weights[0]:g}/{weights[1]:g}, k {k}: "
            + ", ".join(f"{m} R@1 {slots[m]['recall@1']:.3f}" for m in ("vector", "text", "hybrid"))
            + " (hybrid R@1 before this work: 0.847)."
        )
    if "knowledge" in result:
        k = result["knowledge"]
        parts.append(
            table(
                ["knowledge questions (40)", "R@1", "R@3", "MRR", 'top hit for "my machine shows E03"'],
                [
                    [m, _n(v["recall@1"]), _n(v["recall@3"]), _n(v["mrr"]), k["e03_top"][m]]
                    for m, v in k["modes"].items()
                ],
            )
        )
    return "\n\n".join(parts)


def scale_markdown(
    result: dict[str, Any], *, image_prefix: str, images_dir: Path = IMAGES, relative_to: Path = ROOT / "docs"
) -> str:
    size = result["size"]
    parts = []
    machine = result.get("machine", {})
    parts.append(
        f"{size['turns']:,} turns over {size['users']:,} users ({size['heavy_users']} heavy users with "
        f"{size['heavy_turns']:,} turns each, the others log-normal); {size['real_sample']:,} turns embedded "
        f"with all-MiniLM-L6-v2, the rest perturbations of those (cosine ≈ 0.9 to their source). "
        f"shared_buffers {result.get('shared_buffers', '?')}. "
        + (
            f"Run on {machine.get('date', '?')}, {machine.get('cpu', '?')} ({machine.get('cores', '?')} cores). "
            if machine
            else ""
        )
        + "Load average (1, 5, 15 min) before / after: "
        + ", ".join(f"{x:.2f}" for x in result["load_before"])
        + " / "
        + ", ".join(f"{x:.2f}" for x in result["load_after"])
        + "."
    )
    ingest = result["ingest"]
    store = result["store_turn"]
    parts.append(
        table(
            ["ingestion", "value"],
            [
                [
                    "COPY (20,000 turns per statement, triggers and indexes included)",
                    f"{ingest['copy_turns_per_s']:,.0f} turns/s",
                ],
                ["end to end, with the client formatting the vectors", f"{ingest['turns_per_s']:,.0f} turns/s"],
                [
                    "one turn through core.conversations.store_turn (embedding computed beforehand)",
                    f"p50 {fmt_ms(store['p50'])}, p95 {fmt_ms(store['p95'])}",
                ],
                *(
                    [
                        [
                            f"the same, a heavy user's turn ({heavy_store['turns']:,} turns"
                            + (", into their own HNSW index too)" if heavy_store["own_index"] else ")"),
                            f"p50 {fmt_ms(heavy_store['p50'])}, p95 {fmt_ms(heavy_store['p95'])}",
                        ]
                    ]
                    if (heavy_store := result.get("store_turn_heavy"))
                    else []
                ),
                ["embedding with all-MiniLM-L6-v2 on this CPU", f"{result['embed_rate_per_s']:,.0f} turns/s"],
            ]
            + (
                [
                    [
                        f"the maintenance job's HNSW index of each user with at least "
                        f"{result['vector_indexes']['min_turns']:,} turns",
                        f"{result['vector_indexes']['users']} user(s) in {result['vector_indexes']['seconds']:,.0f} s",
                    ]
                ]
                if result.get("vector_indexes")
                else []
            ),
        )
    )
    sizes = result["sizes"]
    parts.append(table(["relation", "size"], [[name, _mb(value)] for name, value in sizes.items()]))
    rows = []
    for label, item in sorted(result["hybrid"].items(), key=lambda kv: kv[1]["turns"]):
        rows.append(
            [
                LABELS.get(label, label),
                f"{item['turns']:,}",
                fmt_ms(item["p50"]),
                fmt_ms(item["p95"]),
                fmt_ms(item["p99"]),
                fmt_ms(item["vector_p50"]),
                fmt_ms(item["text_p50"]),
            ]
        )
    parts.append(
        table(["user", "turns", "hybrid p50", "p95", "p99", "vector branch alone p50", "text branch alone p50"], rows)
    )
    plots = plot_scale(result, image_prefix, images_dir)
    for path in plots:
        parts.append(f"![{path.stem}]({path.relative_to(relative_to)})")
    if result.get("index_choices"):
        rows = []
        for entry in result["index_choices"]:
            if entry["user"] not in ("typical", "heavy"):
                continue
            rows.append(
                [
                    entry["choice"],
                    LABELS.get(entry["user"], entry["user"]),
                    f"{entry['turns']:,}",
                    fmt_ms(entry["p50"]),
                    fmt_ms(entry["p95"]),
                    f"{entry['recall@10']:.3f}",
                    entry["note"],
                ]
            )
        note = ""
        if result.get("index_choices_run"):
            run = result["index_choices_run"]
            note = (
                f" These were measured in {run['note']}; load average before / after that run "
                + ", ".join(f"{x:.2f}" for x in run["load_before"])
                + " / "
                + ", ".join(f"{x:.2f}" for x in run["load_after"])
                + "."
            )
        parts.append(
            "Vector branch alone, top 10, by index choice (recall@10 against exact float32 cosine "
            "computed in numpy)." + note
        )
        parts.append(table(["index choice", "user", "turns", "p50", "p95", "recall@10", "how"], rows))
    return "\n\n".join(parts)


def plot_scale(result: dict[str, Any], prefix: str, images_dir: Path = IMAGES) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    images_dir.mkdir(parents=True, exist_ok=True)
    out = []
    items = sorted(result["hybrid"].values(), key=lambda item: item["turns"])
    turns = [item["turns"] for item in items]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(turns, [i["p95"] for i in items], "o-", label="hybrid p95")
    ax.plot(turns, [i["p50"] for i in items], "o--", label="hybrid p50")
    ax.plot(turns, [i["vector_p50"] for i in items], "s:", label="vector branch alone p50")
    ax.plot(turns, [i["text_p50"] for i in items], "^:", label="text branch alone p50")
    ax.axhline(10, color="grey", lw=0.8, ls="--")
    ax.axhline(50, color="grey", lw=0.8, ls="--")
    ax.text(turns[0], 10.5, "goal, typical user p95", fontsize=8, color="grey")
    ax.text(turns[0], 52, "goal, heavy user p95", fontsize=8, color="grey")
    ax.set_xscale("log")
    ax.set_xlabel("turns of the searching user (log scale)")
    ax.set_ylabel("ms (SQL only)")
    ax.set_title(f"match_conversation_turns_hybrid, {result['size']['turns']:,} turns in the table")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = images_dir / f"{prefix}_latency_by_user.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    out.append(path)
    if result.get("index_choices"):
        fig, axes = plt.subplots(1, 2, figsize=(11, 5.2), sharey=True)
        names = list(dict.fromkeys(e["choice"] for e in result["index_choices"]))
        # one marker and colour per choice: the full run has 11, more than tab10 and 10 markers tell apart
        markers = ["o", "s", "D", "^", "v", "P", "X", "*", "h", "p", "<", ">", "d", "8"]
        colours = list(plt.cm.tab10.colors) + list(plt.cm.Dark2.colors)
        for ax, user in zip(axes, ("typical", "heavy"), strict=True):
            entries = {e["choice"]: e for e in result["index_choices"] if e["user"] == user}
            for i, name in enumerate(names):
                if name in entries:
                    e = entries[name]
                    ax.scatter(
                        e["p95"],
                        e["recall@10"],
                        s=45,
                        marker=markers[i % len(markers)],
                        label=name,
                        color=colours[i % len(colours)],
                    )
            ax.set_xscale("log")
            ax.set_xlabel("p95 ms (log scale)")
            turns = next(iter(entries.values()))["turns"] if entries else 0
            ax.set_title(f"{LABELS[user]}, {turns:,} turns")
            ax.axhline(0.99, color="grey", lw=0.8, ls="--")
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("recall@10 vs exact float32 cosine")
        handles, labels = axes[1].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
        fig.suptitle(
            "Vector branch by index choice (the app's: exact halfvec, covering index; "
            "from 10,000 turns the user's own HNSW)"
        )
        fig.tight_layout(rect=(0, 0.14, 1, 1))
        path = images_dir / f"{prefix}_index_choices.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        out.append(path)
    return out
