"""Exploring retrieval choices on a conversational dev split (docs/eval/conversations or multisession).

    .venv/bin/python -m bench.conversation_tuning [--set conversations|multisession] [--split dev] [--cache DIR]

Loads the split's turns into a throwaway embedded Postgres once (for the
full-text lexemes, exactly as the SQL function sees them), embeds the turns
in several ways, and then ranks every question offline:

  * vector branch: exact cosine in numpy (what the SQL function computes);
  * text branch: several formulations computed from the turns' tsvector
    lexemes (BM25 with per-user or global IDF, extra stop words, fewer words,
    English rarity from public.english_word_rarity added to the IDF);
  * fusion: weighted RRF swept over weights, k and per-branch depth.

The chosen defaults are then measured through the real CLI (bench.quality).
This script only explores; it never tunes on the test split unless told to.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT / "docs" / "eval"
SPLITS = EVAL / "conversations"
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "mp-conversation-tuning"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class Split:
    turns: list[dict]
    queries: list[dict]
    qrels: dict[str, set[str]]


def load_split(name: str, base: Path = SPLITS) -> Split:
    folder = base / name
    return Split(
        read_jsonl(folder / "turns.jsonl"),
        read_jsonl(folder / "queries.jsonl"),
        {r["id"]: set(r["relevant"]) for r in read_jsonl(folder / "qrels.jsonl")},
    )


# ---------------------------------------------------------------------------
# Embeddings (cached on disk by text hash: embedding 5,000 turns takes minutes)
# ---------------------------------------------------------------------------


def embed_cached(texts: list[str], cache: Path) -> np.ndarray:
    from core import embeddings

    cache.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256("\x1e".join(texts).encode()).hexdigest()[:20]
    path = cache / f"{key}.npy"
    if path.exists():
        return np.load(path)
    vectors = embeddings.embed(texts)
    np.save(path, vectors)
    return vectors


def turn_texts(turns: list[dict], how: str) -> list[str]:
    by_pos = {(t["user"], t["session"], t["turn"]): t for t in turns}
    out = []
    for t in turns:
        prev = by_pos.get((t["user"], t["session"], t["turn"] - 1))
        nxt = by_pos.get((t["user"], t["session"], t["turn"] + 1))
        line = f"{t['speaker']}: {t['content']}"
        if how == "content":
            out.append(t["content"])
        elif how == "speaker":
            out.append(line)
        elif how == "date":
            out.append(f"{t['date'][:10]} {line}")
        elif how == "previous":
            out.append((f"{prev['speaker']}: {prev['content']}\n" if prev else "") + line)
        elif how == "next":
            out.append(line + (f"\n{nxt['speaker']}: {nxt['content']}" if nxt else ""))
        else:
            raise ValueError(how)
    return out


# ---------------------------------------------------------------------------
# Lexemes from Postgres (english configuration, as the generated column)
# ---------------------------------------------------------------------------


def lexemes_from_postgres(texts: list[str], queries: list[str]) -> tuple[list[list[str]], list[list[str]]]:
    from core import db

    tmp = Path(tempfile.mkdtemp(prefix="mp-tune-"))
    uri = db.start_embedded(tmp / "pg", cleanup_mode="delete")
    db.migrate(uri, embedded=True, echo=lambda *_: None)
    with db.admin_connection(uri) as conn:
        global ENGLISH_RARITY, ENGLISH_FLOOR
        ENGLISH_RARITY = dict(conn.execute("select lexeme, rarity::float8 from public.english_word_rarity").fetchall())
        ENGLISH_FLOOR = max(ENGLISH_RARITY.values())

        def lex(values):
            rows = conn.execute(
                "select x.ord, tsvector_to_array(to_tsvector('english', x.t)) "
                "from unnest(%s::text[]) with ordinality as x(t, ord) order by x.ord",
                (values,),
            ).fetchall()
            return [list(r[1]) for r in rows]

        return lex(texts), lex(queries)


# ---------------------------------------------------------------------------
# Rankings
# ---------------------------------------------------------------------------


def vector_rankings(split: Split, turn_vectors: np.ndarray, query_vectors: np.ndarray, depth: int = 1000):
    """Per query: turn ids of the asking user, by exact cosine distance (ties by position)."""
    user_rows = defaultdict(list)
    for i, t in enumerate(split.turns):
        user_rows[t["user"]].append(i)
    result = {}
    for qi, q in enumerate(split.queries):
        rows = np.array(user_rows[q["user"]])
        sims = turn_vectors[rows] @ query_vectors[qi]
        order = np.lexsort((rows, -sims))[:depth]
        result[q["id"]] = [split.turns[rows[o]]["id"] for o in order]
    return result


# public.english_word_rarity, read by lexemes_from_postgres: -ln(English frequency) of the 5,000 most
# frequent lexemes; a lexeme not in it is as rare as the rarest one there.
ENGLISH_RARITY: dict[str, float] = {}
ENGLISH_FLOOR = 0.0


# Words people use to ask an assistant about the past, not about the thing itself (stemmed).
META_STOP = {"remind", "rememb", "forgot", "forget", "recal", "tell", "told", "say", "said", "mention"}


def bm25_rankings(
    split: Split,
    turn_lex: list[list[str]],
    query_lex: list[list[str]],
    *,
    idf_scope="user",
    max_terms=8,
    k1=1.2,
    b=0.75,
    stop: set[str] = frozenset(),
    max_df_fraction=1.0,
    min_coverage=0.0,
    missing_terms_count=False,
    common_fraction=1.0,
    english: bool = False,
    depth: int = 1000,
    coverage: dict[str, tuple[float, float]] | None = None,
):
    """BM25 with term frequency counted once (as match_conversation_turns_hybrid computes it);
    english=True adds each word's English rarity to its IDF and keeps the heaviest words.
    `coverage`, if given, receives per query (best score / weight of the words used, best score /
    weight of every query word, the unsaid ones weighted as if said in no turn)."""
    user_rows = defaultdict(list)
    for i, t in enumerate(split.turns):
        user_rows[t["user"]].append(i)
    sets = [set(lex) for lex in turn_lex]
    global_df: dict[str, int] = defaultdict(int)
    for s in sets:
        for lexeme in s:
            global_df[lexeme] += 1
    result = {}
    user_stats = {}
    for user, rows in user_rows.items():
        df: dict[str, int] = defaultdict(int)
        for r in rows:
            for lexeme in sets[r]:
                df[lexeme] += 1
        avg = max(sum(len(sets[r]) for r in rows) / max(len(rows), 1), 1.0)
        user_stats[user] = (df, len(rows), avg)
    for qi, q in enumerate(split.queries):
        rows = user_rows[q["user"]]
        df, n, avg = user_stats[q["user"]]
        if idf_scope == "global":
            df, n = global_df, len(split.turns)
        terms = []
        for lexeme in dict.fromkeys(query_lex[qi]):
            if lexeme in stop or df.get(lexeme, 0) == 0:
                continue
            if df[lexeme] / n > max_df_fraction:
                continue
            if idf_scope == "user" and user_stats[q["user"]][0].get(lexeme, 0) == 0:
                continue
            idf = math.log(1 + (n - df[lexeme] + 0.5) / (df[lexeme] + 0.5))
            if english:
                idf += ENGLISH_RARITY.get(lexeme, ENGLISH_FLOOR)
            terms.append((idf, lexeme))
        terms.sort(key=lambda x: (-x[0], x[1]))
        terms = terms[:max_terms]
        # words in more than common_fraction of the user's turns are dropped unless it is the rarest one
        terms = [t for pos, t in enumerate(terms) if pos == 0 or df[t[1]] <= common_fraction * n]
        total = sum(idf for idf, _ in terms)
        if missing_terms_count:  # a query word this user never used still counts in the total
            total += sum(
                math.log(1 + (n + 0.5) / 0.5)
                for lexeme in dict.fromkeys(query_lex[qi])
                if lexeme not in stop and df.get(lexeme, 0) == 0
            )
        scored = []
        for r in rows:
            matched = [idf for idf, lexeme in terms if lexeme in sets[r]]
            if matched and sum(matched) >= min_coverage * total:
                norm = (k1 + 1) / (1 + k1 * (1 - b + b * len(sets[r]) / avg))
                scored.append((-(sum(matched) * norm), r))
        scored.sort()
        result[q["id"]] = [split.turns[r]["id"] for _, r in scored[:depth]]
        if coverage is not None:
            unsaid = sum(
                math.log(1 + (n + 0.5) / 0.5) + (ENGLISH_RARITY.get(x, ENGLISH_FLOOR) if english else 0.0)
                for x in dict.fromkeys(query_lex[qi])
                if x not in stop and df.get(x, 0) == 0
            )
            best = -scored[0][0] if scored else 0.0
            coverage[q["id"]] = (best / total if total else 0.0, best / (total + unsaid) if total + unsaid else 0.0)
    return result


def rrf(vector: list[str], text: list[str], wv: float, wt: float, k: int, depth: int, top: int = 10) -> list[str]:
    """The two branches fused; ties go to the better vector rank."""
    return rrf_lists([(wv, vector), (wt, text)], k, depth, vector[:depth], top)


def rrf_lists(
    lists: list[tuple[float, list[str]]], k: int, depth: int, tiebreak: list[str], top: int = 10
) -> list[str]:
    """Weighted RRF of any number of rankings; ties go to the better rank in `tiebreak` (the vector branch)."""
    scores: dict[str, float] = defaultdict(float)
    for weight, ranking in lists:
        for rank, tid in enumerate(ranking[:depth], start=1):
            scores[tid] += weight / (k + rank)
    first = {tid: rank for rank, tid in enumerate(tiebreak)}
    return sorted(scores, key=lambda t: (-scores[t], first.get(t, math.inf), t))[:top]


def in_context(
    split: Split, turn_vectors: np.ndarray, query_vectors: np.ndarray, candidates, share: float = 1.0, step: int = 1
):
    """Per query: its candidates ranked by the cosine distance of (turn + share x the next turn of its
    session) to the query, as match_conversation_turns_hybrid ranks the turn in context (share 1);
    step -1 takes the turn before instead."""
    at = {(t["user"], t["session"], t["turn"]): i for i, t in enumerate(split.turns)}
    row = {t["id"]: i for i, t in enumerate(split.turns)}
    half = turn_vectors.astype(np.float16).astype(np.float64)  # the table keeps half precision
    pairs = half.copy()
    for i, t in enumerate(split.turns):
        after = at.get((t["user"], t["session"], t["turn"] + step))
        if after is not None:
            pairs[i] += share * half[after]
    pairs /= np.linalg.norm(pairs, axis=1, keepdims=True)
    result = {}
    for qi, q in enumerate(split.queries):
        ids = candidates[q["id"]]
        sims = [-(pairs[row[t]] @ query_vectors[qi]) for t in ids]
        result[q["id"]] = [ids[i] for i in np.lexsort((np.arange(len(ids)), sims))]
    return result


def fold_repeats(split: Split, ranked: dict[str, list[str]], top: int = 10) -> dict[str, list[str]]:
    """Per query: the first `top` turns that say different things (speaker and words, case and spacing
    aside), as core.retrieval.fold_repeats_of keeps them."""
    from core.retrieval import what_was_said

    said = {t["id"]: what_was_said(t["speaker"], t["content"]) for t in split.turns}
    folded = {}
    for qid, ids in ranked.items():
        kept: dict[tuple[str, str], str] = {}
        for tid in ids:
            kept.setdefault(said[tid], tid)
        folded[qid] = list(kept.values())[:top]
    return folded


# The vector weight is full from this z-score of the best vector hit (match_conversation_turns_hybrid).
CONFIDENT_Z = 4.0
CONFIDENCE_SAMPLE = 1000  # the function's z-score reads at most this many of the user's turns
CONFIDENCE_MIN_TURNS = 100  # and with fewer the vector weight stays full


def vector_confidence(split: Split, turn_vectors: np.ndarray, query_vectors: np.ndarray) -> dict[str, float]:
    """Per query: how far the nearest turn stands out among the asking user's turns, the z-score of its
    cosine distance among theirs (half precision, as the table keeps them), as the SQL function computes it
    for the vector weight (infinite, so the weight stays full, for a user with fewer than CONFIDENCE_MIN_TURNS
    turns); the users of these sets have more than that and fewer than CONFIDENCE_SAMPLE."""
    user_rows = defaultdict(list)
    for i, t in enumerate(split.turns):
        user_rows[t["user"]].append(i)
    half = turn_vectors.astype(np.float16).astype(np.float64)
    result = {}
    for qi, q in enumerate(split.queries):
        rows = user_rows[q["user"]][:CONFIDENCE_SAMPLE]
        distances = 1 - half[rows] @ query_vectors[qi].astype(np.float16).astype(np.float64)
        spread = distances.std()
        enough = len(rows) >= CONFIDENCE_MIN_TURNS and spread > 0
        result[q["id"]] = float((distances.mean() - distances.min()) / spread) if enough else math.inf
    return result


def vector_factor(z: float, full_from: float | None = CONFIDENT_Z) -> float:
    """The share of the vector weight a hybrid search uses for a best hit with this z-score (None: all)."""
    return 1.0 if full_from is None else min(1.0, max(0.0, z / full_from))


def todays_hybrid(
    split: Split,
    vector: dict[str, list[str]],
    text: dict[str, list[str]],
    coverage: dict[str, tuple[float, float]],
    turn_vectors: np.ndarray,
    query_vectors: np.ndarray,
    full_from: float | None = CONFIDENT_Z,
) -> dict[str, list[str]]:
    """Per query: the fused ranking of today's defaults, 40 deep (0.5 / 0.5, k 2, the turn in context on
    half of the vector weight, the text weight by coverage, the vector weight by confidence unless
    full_from is None)."""
    pool = {q: list(dict.fromkeys(vector[q][:40] + text[q][:40])) for q in split.qrels}
    context = in_context(split, turn_vectors, query_vectors, pool, 1.0)
    confidence = {} if full_from is None else vector_confidence(split, turn_vectors, query_vectors)
    fused = {}
    for q in split.qrels:
        wv = 0.5 * vector_factor(confidence.get(q, math.inf), full_from)
        wt = 0.5 * min(1.0, coverage[q][1] / 0.5)
        fused[q] = rrf_lists([(wv / 2, vector[q]), (wv / 2, context[q]), (wt, text[q])], 2, 40, vector[q], 40)
    return fused


def word_piece_vectors(texts: list[str]) -> np.ndarray:
    """A weaker embedding of the same texts, for the robustness check: the mean of all-MiniLM-L6-v2's input
    word-piece vectors (its vocabulary without the transformer layers, like averaged word vectors)."""
    from core import embeddings

    model = embeddings.get_model()
    table = model[0].auto_model.embeddings.word_embeddings.weight.detach().numpy().astype(np.float64)
    out = np.zeros((len(texts), table.shape[1]))
    for i, text in enumerate(texts):
        ids = model.tokenizer(text, add_special_tokens=False, truncation=True, max_length=256)["input_ids"]
        if ids:
            mean = table[ids].mean(axis=0)
            out[i] = mean / (np.linalg.norm(mean) or 1.0)
    return out


def noisy(vectors: np.ndarray, sigma: float, seed: int) -> np.ndarray:
    """The vectors with Gaussian noise of this spread per dimension, normalised again: a blurrier model."""
    out = vectors + np.random.default_rng(seed).normal(0.0, sigma, vectors.shape)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def weaker_vector_branches(
    split: Split, text: dict[str, list[str]], coverage, turn_vectors: np.ndarray, query_vectors: np.ndarray
) -> list[list[str]]:
    """Rows of the robustness table: for all-MiniLM-L6-v2 and for weaker embeddings of the same turns, the
    vector and text branches alone and today's hybrid without and with the vector weight by confidence
    (recall@5, repeats folded; the margin is over the better branch)."""
    texts = turn_texts(split.turns, "speaker")
    questions = [q["query"] for q in split.queries]
    variants = [("all-MiniLM-L6-v2 (the app's)", turn_vectors, query_vectors)]
    for number, sigma in enumerate((0.04, 0.06, 0.08), start=1):
        turns, queries = noisy(turn_vectors, sigma, number), noisy(query_vectors, sigma, 10 + number)
        variants.append((f"MiniLM + noise, sd {sigma:g}", turns, queries))
    variants.append(("MiniLM's word pieces, averaged", word_piece_vectors(texts), word_piece_vectors(questions)))
    rows = []
    deep_text = {q: text[q][:40] for q in split.qrels}
    text_r5 = metrics(fold_repeats(split, deep_text), split.qrels)["R@5"]
    for label, turns, queries in variants:
        vector = vector_rankings(split, turns, queries)
        vector_r5 = metrics(fold_repeats(split, {q: vector[q][:40] for q in split.qrels}), split.qrels)["R@5"]
        best = max(vector_r5, text_r5)
        cells = [label, f"{vector_r5:.3f}", f"{text_r5:.3f}"]
        for full_from in (None, CONFIDENT_Z):
            fused = todays_hybrid(split, vector, text, coverage, turns, queries, full_from)
            r5 = metrics(fold_repeats(split, fused), split.qrels)["R@5"]
            cells += [f"{r5:.3f}", f"{100 * (r5 - best):+.1f}"]
        rows.append(cells)
    return rows


def metrics(ranked: dict[str, list[str]], qrels: dict[str, set[str]], ids=None) -> dict[str, float]:
    ids = ids or list(qrels)
    r5, r10, rr = [], [], []
    for qid in ids:
        rel, got = qrels[qid], ranked.get(qid, [])
        r5.append(len(rel & set(got[:5])) / len(rel))
        r10.append(len(rel & set(got[:10])) / len(rel))
        first = next((i for i, t in enumerate(got[:10], start=1) if t in rel), None)
        rr.append(1 / first if first else 0.0)
    return {"R@5": float(np.mean(r5)), "R@10": float(np.mean(r10)), "MRR": float(np.mean(rr))}


def fmt(m: dict[str, float]) -> str:
    return " ".join(f"{k} {v:.3f}" for k, v in m.items())


def markdown_table(headers, rows) -> str:
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(["---"] + ["---:"] * (len(headers) - 1)) + " |"]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev")
    parser.add_argument("--set", default="conversations", help="a folder of docs/eval with dev/ and test/")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument(
        "--vectors",
        default="content,speaker,date,previous,next",
        help="comma-separated: what each turn's embedding is computed from",
    )
    args = parser.parse_args(argv)
    split = load_split(args.split, EVAL / args.set)
    print(f"{args.split}: {len(split.turns)} turns, {len(split.queries)} queries\n")
    qtexts = [q["query"] for q in split.queries]
    qvec = embed_cached(qtexts, args.cache)
    contents = [f"{t['speaker']} {t['content']}" for t in split.turns]
    turn_lex, query_lex = lexemes_from_postgres(contents, qtexts)

    def row(name, ranking):
        m = metrics(ranking, split.qrels)
        return [name, f"{m['R@5']:.3f}", f"{m['R@10']:.3f}", f"{m['MRR']:.3f}"]

    print("### What is embedded (vector branch alone)\n")
    vec = {}
    described = {
        "content": "the turn's text",
        "speaker": '"speaker: text" (the app\'s)',
        "date": '"date speaker: text"',
        "previous": 'the turn before it, then "speaker: text"',
        "next": '"speaker: text", then the turn after it',
    }
    turn_vectors = {}
    for how in args.vectors.split(","):
        turn_vectors[how] = embed_cached(turn_texts(split.turns, how), args.cache)
        vec[how] = vector_rankings(split, turn_vectors[how], qvec)
    if "speaker" in turn_vectors and "previous" in turn_vectors:
        # the neighbour as a smaller share of the vector instead of more text
        own = turn_vectors["speaker"]
        by_pos = {(t["user"], t["session"], t["turn"]): i for i, t in enumerate(split.turns)}
        prev = np.array([by_pos.get((t["user"], t["session"], t["turn"] - 1), i) for i, t in enumerate(split.turns)])
        mixed = own + 0.3 * own[prev]
        mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
        vec["mix"] = vector_rankings(split, mixed, qvec)
        described["mix"] = '"speaker: text" vector + 0.3 x the previous turn\'s vector'
    print(markdown_table(["embedded text", "R@5", "R@10", "MRR"], [row(described[h], r) for h, r in vec.items()]))

    print("\n### Text branch alone (lexemes of 'speaker content', english configuration)\n")
    text = {}
    for scope in ("user", "global"):
        for b in (0.75, 0.5, 0.25, 0.0):
            text[f"BM25, {scope} IDF, k1 1.2, b {b}, tf once"] = bm25_rankings(
                split, turn_lex, query_lex, idf_scope=scope, b=b
            )
    text["IDF sum (b 0), user IDF, recall words dropped (remind, remember, ...)"] = bm25_rankings(
        split, turn_lex, query_lex, b=0.0, stop=META_STOP
    )
    for cov in (0.2, 0.3, 0.5):
        text[f"IDF sum, only turns with >= {cov:.0%} of the query's IDF"] = bm25_rankings(
            split, turn_lex, query_lex, b=0.0, min_coverage=cov
        )
    text["IDF sum, 4 rarest query words (instead of 8)"] = bm25_rankings(split, turn_lex, query_lex, b=0.0, max_terms=4)
    for fraction in (0.2, 0.1, 0.05):
        text[f"IDF sum, words in > {fraction:.0%} of the user's turns dropped (unless the rarest)"] = bm25_rankings(
            split, turn_lex, query_lex, b=0.0, common_fraction=fraction
        )
    for fraction in (1.0, 0.1):
        dropped = ", words in > 10% of the user's turns dropped (unless the heaviest)" if fraction < 1 else ""
        text[f"English rarity + user IDF{dropped}"] = bm25_rankings(
            split, turn_lex, query_lex, b=0.0, common_fraction=fraction, english=True
        )
    text["English rarity + global IDF"] = bm25_rankings(
        split, turn_lex, query_lex, b=0.0, idf_scope="global", english=True
    )
    chosen_text = "English rarity + user IDF, words in > 10% of the user's turns dropped (unless the heaviest)"
    print(markdown_table(["text branch", "R@5", "R@10", "MRR"], [row(n, r) for n, r in text.items()]))

    print('\n### Fusion (vector "speaker: text", text English rarity + user IDF), weighted RRF, top 10\n')
    vchosen = vec.get("speaker") or next(iter(vec.values()))
    rows = []
    for wv, wt in ((0.7, 0.3), (0.6, 0.4), (0.5, 0.5), (0.4, 0.6)):
        for k in (1, 2, 5, 10, 20, 60):
            cells = [f"{wv:g} / {wt:g}", str(k)]
            for depth in (20, 40, 100):
                fused = {q: rrf(vchosen[q], text[chosen_text][q], wv, wt, k, depth) for q in split.qrels}
                m = metrics(fused, split.qrels)
                cells.append(f"{m['R@5']:.3f}" + (f" / {m['MRR']:.3f}" if depth == 40 else ""))
            rows.append(cells)
    print(markdown_table(["weights v / t", "k", "R@5, depth 20", "R@5 / MRR, depth 40", "R@5, depth 100"], rows))

    types = defaultdict(list)
    for q in split.queries:
        types[q["type"]].append(q["id"])
    fused = {q: rrf(vchosen[q], text[chosen_text][q], 0.5, 0.5, 2, 40) for q in split.qrels}
    print("\n### By question type, R@5 (defaults: 0.5 / 0.5, k 2, depth 40)\n")
    print(
        markdown_table(
            ["type", "questions", "vector", "text", "hybrid"],
            [
                [
                    t,
                    len(ids),
                    f"{metrics(vchosen, split.qrels, ids)['R@5']:.3f}",
                    f"{metrics(text[chosen_text], split.qrels, ids)['R@5']:.3f}",
                    f"{metrics(fused, split.qrels, ids)['R@5']:.3f}",
                ]
                for t, ids in sorted(types.items())
            ],
        )
    )

    print("\n### Text weight by coverage (0.5 / 0.5, k 2, depth 40)\n")
    coverage: dict[str, tuple[float, float]] = {}
    bm25_rankings(split, turn_lex, query_lex, b=0.0, common_fraction=0.1, english=True, coverage=coverage)
    chosen = text[chosen_text]

    def with_coverage(q, full, unsaid_too=True):
        return 0.5 * min(1.0, coverage[q][1 if unsaid_too else 0] / full) if full else 0.5

    rows = []
    for label, full, unsaid_too in (
        ("(always full)", 0.0, True),
        ("30% of the query weight", 0.3, True),
        ("50%", 0.5, True),
        ("70%", 0.7, True),
        ("50%, unsaid words left out of the query weight", 0.5, False),
    ):
        fused = {
            q: rrf_lists([(0.5, vchosen[q]), (with_coverage(q, full, unsaid_too), chosen[q])], 2, 40, vchosen[q])
            for q in split.qrels
        }
        rows.append(row(label, fused))
    print(markdown_table(["full weight from", "R@5", "R@10", "MRR"], rows))

    if "speaker" in turn_vectors:
        print("\n### The turn in context: a third list (text weight by coverage, 50%; k 2)\n")
        rows = []
        for depth in (20, 40):
            pool = {q: list(dict.fromkeys(vchosen[q][:depth] + chosen[q][:depth])) for q in split.qrels}
            for share in (0.7, 1.0):
                context = in_context(split, turn_vectors["speaker"], qvec, pool, share)
                for split_of_vector in (0.33, 0.5, 0.67):
                    fused = {
                        q: rrf_lists(
                            [
                                (0.5 * (1 - split_of_vector), vchosen[q]),
                                (0.5 * split_of_vector, context[q]),
                                (with_coverage(q, 0.5), chosen[q]),
                            ],
                            2,
                            depth,
                            vchosen[q],
                        )
                        for q in split.qrels
                    }
                    rows.append(
                        row(
                            f"depth {depth}, next turn x {share:g}, {split_of_vector:.0%} of w_vector in context", fused
                        )
                    )
        pool = {q: list(dict.fromkeys(vchosen[q][:40] + chosen[q][:40])) for q in split.qrels}
        before = in_context(split, turn_vectors["speaker"], qvec, pool, 1.0, step=-1)
        rows.append(
            row(
                "depth 40, the turn *before* x 1, 50% of w_vector in context",
                {
                    q: rrf_lists(
                        [(0.25, vchosen[q]), (0.25, before[q]), (with_coverage(q, 0.5), chosen[q])], 2, 40, vchosen[q]
                    )
                    for q in split.qrels
                },
            )
        )
        # the stricter comparison: the vector branch's own candidates re-ranked in context, no text
        own = {q: vchosen[q][:40] for q in split.qrels}
        context = in_context(split, turn_vectors["speaker"], qvec, own, 1.0)
        rows.append(
            row(
                "vector branch alone, its 40 candidates also ranked in context (no text)",
                {q: rrf_lists([(0.25, vchosen[q]), (0.25, context[q])], 2, 40, vchosen[q]) for q in split.qrels},
            )
        )
        print(markdown_table(["third list", "R@5", "R@10", "MRR"], rows))

        # today's defaults, every mode with the repeats folded (each list read 4 x 10 deep, as the app reads)
        print("\n### Repeats folded (today's defaults; each search keeps the first copy of a thing said)\n")
        hybrid_before = todays_hybrid(split, vchosen, chosen, coverage, turn_vectors["speaker"], qvec, None)
        hybrid = todays_hybrid(split, vchosen, chosen, coverage, turn_vectors["speaker"], qvec)
        rows = []
        for label, ranking in (
            ("vector", vchosen),
            ("text", chosen),
            ("hybrid, the vector weight always full", hybrid_before),
            ("hybrid (today: the vector weight by confidence)", hybrid),
        ):
            deep = {q: ranking[q][:40] for q in split.qrels}
            rows.append(row(f"{label}, every copy", {q: ids[:10] for q, ids in deep.items()}))
            rows.append(row(f"{label}, repeats folded", fold_repeats(split, deep)))
        print(markdown_table(["search", "R@5", "R@10", "MRR"], rows))

        print("\n### A weaker vector branch: today's hybrid without and with the vector weight by confidence\n")
        print(
            markdown_table(
                ["vector branch", "vector R@5", "text R@5", "hybrid, full weight", "margin", "hybrid, today", "margin"],
                weaker_vector_branches(split, chosen, coverage, turn_vectors["speaker"], qvec),
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
