"""Decontamination: remove training problems that overlap the evaluation sets they will be scored on.

    evals = eval_texts(["data/math_test.jsonl"], preset=resolve_preset("math"))
    result = decontaminate(pool, evals, DecontamConfig(ngram=13))
    result.kept, result.removed     # removed rows name the evaluation row they match

A pool row is contaminated when it shares at least `min_shared` word n-grams (default 13-grams, the
GPT-3 paper's choice) with one evaluation row, or, with `exact`, when its whole normalized text equals
an evaluation row's. Text is normalized for matching: NFKC, lower case, prose punctuation (`.,;:!?` and
quotes) dropped, every other symbol a word of its own (`9+6` is `9 + 6`: math operators matter). Evaluation rows shorter than n words have no n-gram and
are matched by the exact test only.

How it scales: words are hashed in polars; each row's n-grams are 64-bit polynomial hashes of n word
hashes, computed for a block of rows at once in numpy (n vectorized passes); membership is a binary
search in the sorted evaluation hashes. A million pool rows of ~50 words take a few seconds and
memory bounded by the block size. Hash collisions (2^-64 per pair) are not checked for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

# a word: a run of letters/digits, or one symbol that is not prose punctuation (.,;:!? and quotes
# are dropped; 9+6 and 9-6 must differ)
TOKEN = r"[\p{L}\p{N}]+|[^\p{L}\p{N}\s.,;:!?\"'`]"
BITMAP_BITS = 24  # membership prefilter: a 2 MB bit table of the evaluation n-grams' low bits
_P = np.uint64(1_000_003)  # multiplier of the n-gram hash
_SEED = 17  # polars word-hash seed: one value for both sides, within one run
BLOCK = 200_000  # pool rows per block


@dataclass(frozen=True)
class DecontamConfig:
    """ngram: words per n-gram. min_shared: n-grams a pool row must share with one evaluation row to
    be removed. exact: also remove rows whose whole normalized text equals an evaluation row's."""

    ngram: int = 13
    min_shared: int = 1
    exact: bool = True

    def __post_init__(self) -> None:
        if self.ngram < 1 or self.min_shared < 1:
            raise ValueError(f"ngram and min_shared must be >= 1, got {self.ngram}, {self.min_shared}")


def match_tokens_expr(text: pl.Expr) -> pl.Expr:
    """The words contamination is judged on: NFKC, lower case, runs of letters and digits, and every
    other symbol but prose punctuation as a word of its own (one regex pass)."""
    nfkc = pl.when(text.str.contains(r"[^\x00-\x7F]")).then(text.str.normalize("NFKC")).otherwise(text)
    return nfkc.str.to_lowercase().str.extract_all(TOKEN)


def match_text_expr(text: pl.Expr) -> pl.Expr:
    """The matching words as one single-spaced string (what `exact` compares)."""
    return match_tokens_expr(text).list.join(" ")


def problem_text_expr(prompt: pl.Expr) -> pl.Expr:
    """The text of a canonical `prompt` column that contamination is judged on: its user messages."""
    return prompt.list.eval(pl.element().filter(pl.element().struct.field("role") == "user")
                            .struct.field("content")).list.join(" ")


def _hashes(texts: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of raw texts: flat uint64 word hashes of every row, each row's word count, and each row's
    whole-text hash (of its words, single-spaced)."""
    tokens = texts.to_frame("t").select(match_tokens_expr(pl.col("t")))["t"]
    lengths = tokens.list.len().fill_null(0).to_numpy().astype(np.int64)
    flat = tokens.explode().drop_nulls().hash(seed=_SEED).to_numpy()
    full = tokens.list.join(" ").hash(seed=_SEED).to_numpy()
    return flat, lengths, full


def ngram_hashes(flat: np.ndarray, lengths: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(hashes, row) of every n-gram that lies inside one row: hash = sum_j w[i+j] * P^(n-1-j) mod 2^64.

    flat: (W,) uint64 word hashes of all rows back to back; lengths: (R,) words per row."""
    total = int(lengths.sum())
    if total < n:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    m = total - n + 1
    h = np.zeros(m, dtype=np.uint64)  # (m,) one per window start
    with np.errstate(over="ignore"):
        for j in range(n):
            h = h * _P + flat[j:j + m]
    row = np.repeat(np.arange(len(lengths)), lengths)[:m]  # (m,) row of each window start
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    inside = (np.arange(m) - starts[row]) <= (lengths[row] - n)  # the window ends in the same row
    return h[inside], row[inside]


@dataclass
class EvalIndex:
    """Sorted n-gram hashes of the evaluation rows (with the row each came from) and their full-text hashes."""

    grams: np.ndarray  # (G,) uint64, sorted, unique
    gram_row: np.ndarray  # (G,) evaluation row of each
    bitmap: np.ndarray  # (2^BITMAP_BITS,) bool: some evaluation n-gram has these low bits
    exact: dict[int, int]  # full-text hash -> evaluation row
    rows: pl.DataFrame  # eval_file, eval_row, eval_id, text


def build_index(evals: pl.DataFrame, cfg: DecontamConfig) -> EvalIndex:
    """evals: columns eval_file, eval_row, eval_id, text (raw question text)."""
    flat, lengths, full = _hashes(evals["text"])
    h, row = ngram_hashes(flat, lengths, cfg.ngram)
    order = np.argsort(h, kind="stable")
    h, row = h[order], row[order]
    keep = np.concatenate([[True], h[1:] != h[:-1]]) if len(h) else np.zeros(0, bool)
    exact = {}
    for i, (value, n) in enumerate(zip(full.tolist(), lengths.tolist(), strict=True)):
        if n:
            exact.setdefault(value, i)
    bitmap = np.zeros(1 << BITMAP_BITS, dtype=bool)
    bitmap[(h & np.uint64((1 << BITMAP_BITS) - 1)).astype(np.int64)] = True
    return EvalIndex(h[keep], row[keep], bitmap, exact, evals)


def _block_matches(texts: pl.Series, index: EvalIndex, cfg: DecontamConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For one block: (pool row, eval row, shared n-grams, exact) of every contaminated row."""
    flat, lengths, full = _hashes(texts)
    h, row = ngram_hashes(flat, lengths, cfg.ngram)
    rows_out, evals_out, shared_out, exact_out = [], [], [], []
    if len(h) and len(index.grams):
        maybe = index.bitmap[(h & np.uint64((1 << BITMAP_BITS) - 1)).astype(np.int64)]  # cheap, cache-friendly
        h, row = h[maybe], row[maybe]
        pos = np.clip(np.searchsorted(index.grams, h), 0, len(index.grams) - 1)
        hit = index.grams[pos] == h
        pairs = np.stack([row[hit], index.gram_row[pos[hit]]], axis=1)  # (hits, 2) pool row, eval row
        uniq, counts = np.unique(pairs, axis=0, return_counts=True)  # (pairs, 2), (pairs,)
        ok = counts >= cfg.min_shared
        uniq, counts = uniq[ok], counts[ok]
        if len(uniq):
            # one match per pool row: the evaluation row it shares most with
            order = np.lexsort((-counts, uniq[:, 0]))
            uniq, counts = uniq[order], counts[order]
            first = np.concatenate([[True], uniq[1:, 0] != uniq[:-1, 0]])
            rows_out.append(uniq[first, 0])
            evals_out.append(uniq[first, 1])
            shared_out.append(counts[first])
            exact_out.append(np.zeros(int(first.sum()), bool))
    if cfg.exact and index.exact:
        seen = set(np.concatenate(rows_out).tolist()) if rows_out else set()
        ex = [(i, index.exact[v]) for i, v in enumerate(full.tolist()) if v in index.exact and i not in seen]
        if ex:
            rows_out.append(np.array([i for i, _ in ex]))
            evals_out.append(np.array([e for _, e in ex]))
            shared_out.append(np.zeros(len(ex), np.int64))
            exact_out.append(np.ones(len(ex), bool))
    if not rows_out:
        z = np.zeros(0, np.int64)
        return z, z, z, np.zeros(0, bool)
    return tuple(np.concatenate(x) for x in (rows_out, evals_out, shared_out, exact_out))


MATCH_SCHEMA = {"_pool_row": pl.Int64, "_eval_idx": pl.Int64, "shared_ngrams": pl.Int64, "exact": pl.Boolean}


@dataclass
class DecontamResult:
    kept: pl.DataFrame
    removed: pl.DataFrame  # the removed rows + eval_file, eval_row, eval_id, shared_ngrams, exact
    config: DecontamConfig
    eval_rows: int

    def summary(self) -> dict:
        by_eval = (self.removed.group_by("eval_file").len().sort("eval_file").iter_rows()
                   if self.removed.height else [])
        return {"ngram": self.config.ngram, "min_shared": self.config.min_shared, "exact": self.config.exact,
                "eval_rows": self.eval_rows, "checked": self.kept.height + self.removed.height,
                "removed": self.removed.height, "removed_exact": int(self.removed["exact"].sum()) if self.removed.height else 0,
                "removed_by_eval_set": dict(by_eval)}


def decontaminate(pool: pl.DataFrame, evals: pl.DataFrame, cfg: DecontamConfig = DecontamConfig()) -> DecontamResult:
    """Split a canonical problem table into kept rows and rows that overlap `evals` (see build_index)."""
    index = build_index(evals, cfg)
    texts = pool.select(problem_text_expr(pl.col("prompt")).alias("t"))["t"]
    found = []
    for start in range(0, pool.height, BLOCK):
        r, e, s, x = _block_matches(texts.slice(start, BLOCK), index, cfg)
        found.append(pl.DataFrame({"_pool_row": r + start, "_eval_idx": e, "shared_ngrams": s, "exact": x},
                                  schema=MATCH_SCHEMA))
    matches = pl.concat(found) if found else pl.DataFrame(schema=MATCH_SCHEMA)
    numbered = pool.with_row_index("_pool_row").with_columns(pl.col("_pool_row").cast(pl.Int64))
    eval_rows = index.rows.select("eval_file", "eval_row", "eval_id").with_row_index("_eval_idx").with_columns(
        pl.col("_eval_idx").cast(pl.Int64))
    removed = numbered.join(matches, on="_pool_row", how="inner").join(eval_rows, on="_eval_idx", how="left")
    kept = numbered.join(matches, on="_pool_row", how="anti").drop("_pool_row")
    return DecontamResult(kept, removed.sort("_pool_row").drop("_eval_idx"), cfg, evals.height)


def removed_as_rejects(removed: pl.DataFrame, label: str | None, ngram: int) -> pl.DataFrame:
    """Rejects-file rows (reason `contaminated`) for removed rows of the table read from `label` (its
    row number), or with `label` None of the files the rows were loaded from (file and row from
    `meta`): the evaluation row each matches, and the canonical row as `raw`."""
    if removed.height == 0:
        return pl.DataFrame(schema={"file": pl.String, "row": pl.Int64, "reason": pl.String, "detail": pl.String,
                                    "raw": pl.String, "eval_file": pl.String, "eval_row": pl.Int64, "eval_id": pl.String})
    detail = pl.when(pl.col("exact")).then(pl.format("same text as {} row {}", "eval_file", "eval_row")).otherwise(
        pl.format("{} shared {}-grams with {} row {}", "shared_ngrams", pl.lit(ngram), "eval_file", "eval_row"))
    raw = pl.struct("id", "source", "prompt", "answer", "level").struct.json_encode()
    if label is None:
        file, row = pl.col("meta").str.json_path_match("$.file"), pl.col("meta").str.json_path_match("$.row").cast(pl.Int64)
    else:
        file, row = pl.lit(label), pl.col("_pool_row")
    return removed.select(file.alias("file"), row.alias("row"), pl.lit("contaminated").alias("reason"),
                          detail.alias("detail"), raw.alias("raw"), "eval_file", pl.col("eval_row").cast(pl.Int64),
                          pl.col("eval_id").cast(pl.String))
