"""Decontamination: remove training problems that overlap the evaluation sets they will be scored on.

    evals = read_eval_rows("data/math500.jsonl", resolve_preset("problem_answer"))   # grpo_data.tables.loaders
    result = decontaminate(pool, evals, DecontamConfig(ngram=13))
    result.kept, result.removed     # removed rows name the evaluation row they match

A pool row is contaminated when, with one evaluation row, it
  - shares at least `min_shared` word n-grams (default 13-grams, the GPT-3 paper's choice), or
  - contains the whole evaluation row, when that row is shorter than n words (AIME and MATH-500
    one-liners; GPT-3 did the same) but at least `min_words` long, or
  - has the same whole normalized text (`exact`).

Matching text: NFKC, lower case, LaTeX delimiters (`$`, `\\(`, `\\[`), braces, backslashes, `\\left`/
`\\right` and spacing commands dropped, `\\dfrac`/`\\tfrac` read as `\\frac` (and `\\dbinom` as `\\binom`),
prose punctuation (`.,;:!?` and quotes) dropped; every other symbol is a word of its own, so `9+6`
and `9-6` differ.

Boilerplate. A prompt template shared by training and evaluation rows ("Let's think step by step
and output the final answer within \\boxed{}.") would match every row. An n-gram (or a short
evaluation row) is boilerplate when it occurs in at least `boilerplate_share` of the distinct
evaluation texts (and at least 3: an evaluation set that repeats each problem 32 times, as DAPO's
AIME copy does, has one text per problem), or in that share of the pool rows (at least 5) that share
only a few n-grams with its evaluation row (five near-copies of one contaminated problem share most
of them, and stay contamination). Words inside boilerplate n-grams are boilerplate words: an
evaluation n-gram made mostly of them (a problem's last word and the template's first twelve) is
ignored as well, and an evaluation problem whose words outside the template are fewer than n is
matched by containment of those words (a MATH-500 one-liner in verl's prompt format).
How many were ignored is reported.

How it scales: words are hashed in polars; n-grams are 64-bit polynomial hashes, all lengths 1..n
computed incrementally in numpy for a block of rows at once; membership goes through a 2 MB bit
table of low bits before a binary search in the sorted evaluation hashes. A million pool rows of
~50 words take about ten seconds. Hash collisions (2^-64 per pair) are not checked for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from grpo_data.tables.problems import problem_text_expr

# a word: a run of letters/digits, or one symbol that is not punctuation or LaTeX markup
TOKEN = r"[\p{L}\p{N}]+|[^\p{L}\p{N}\s.,;:!?\"'`$\\{}]"
_LATEX_NOISE = r"\\(?:[()\[\]]|left|right|displaystyle|limits|quad|qquad|[,;:! ])"
BITMAP_BITS = 24  # membership prefilter: a 2 MB bit table of the evaluation hashes' low bits
_MASK = np.uint64((1 << BITMAP_BITS) - 1)
_P = np.uint64(1_000_003)  # multiplier of the n-gram hash
_SEED = 17  # polars word-hash seed: one value for both sides, within one run
BLOCK = 50_000  # pool rows per block: bounds the (words,) arrays alive at once


@dataclass(frozen=True)
class DecontamConfig:
    """ngram: words per n-gram. min_shared: n-grams a pool row must share with one evaluation row to
    be removed. min_words: evaluation rows shorter than ngram but at least this long are matched by
    containment. exact: also remove rows whose whole normalized text equals an evaluation row's.
    boilerplate_share / boilerplate_min_eval_rows / boilerplate_min_pool_rows: see the module
    docstring (the pool's floor is higher: two near-copies of one contaminated problem must not
    hide each other)."""

    ngram: int = 13
    min_shared: int = 1
    min_words: int = 4
    exact: bool = True
    boilerplate_share: float = 0.01
    boilerplate_min_eval_rows: int = 3
    boilerplate_min_pool_rows: int = 5

    def __post_init__(self) -> None:
        if self.ngram < 1 or self.min_shared < 1 or self.min_words < 1:
            raise ValueError(f"ngram, min_shared and min_words must be >= 1, got {self.ngram}, {self.min_shared}, "
                             f"{self.min_words}")
        if not 0 < self.boilerplate_share <= 1:
            raise ValueError(f"boilerplate_share must be in (0, 1], got {self.boilerplate_share}")


def match_tokens_expr(text: pl.Expr) -> pl.Expr:
    """The words contamination is judged on (see the module docstring)."""
    nfkc = pl.when(text.str.contains(r"[^\x00-\x7F]")).then(text.str.normalize("NFKC")).otherwise(text)
    plain = nfkc.str.to_lowercase().str.replace_all(_LATEX_NOISE, " ").str.replace_all(r"\\[dt](frac|binom)", r"\$1")
    return plain.str.extract_all(TOKEN)


def match_text_expr(text: pl.Expr) -> pl.Expr:
    """The matching words as one single-spaced string (what `exact` compares)."""
    return match_tokens_expr(text).list.join(" ")


def _hashes(texts: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of raw texts: flat uint64 word hashes of every row, each row's word count, and each row's
    whole-text hash (of its words, single-spaced)."""
    tokens = texts.to_frame("t").select(match_tokens_expr(pl.col("t")))["t"]
    lengths = tokens.list.len().fill_null(0).to_numpy().astype(np.int64)
    flat = tokens.explode().drop_nulls().hash(seed=_SEED).to_numpy()
    full = tokens.list.join(" ").hash(seed=_SEED).to_numpy()
    return flat, lengths, full


def rolling_hashes(flat: np.ndarray, lengths: np.ndarray, upto: int):
    """Yield (m, hashes, row, start) for m = 1..upto: the hash of every m-word window that lies inside
    one row, its row and the index in `flat` of its first word; hash = sum_j w[i+j] * P^(m-1-j) mod
    2^64, each length from the previous one in one pass.

    flat: (W,) uint64 word hashes of all rows back to back; lengths: (R,) words per row."""
    total = int(lengths.sum())
    row_of = np.repeat(np.arange(len(lengths)), lengths)  # (W,) row of each word
    offset = np.arange(total) - np.concatenate([[0], np.cumsum(lengths)[:-1]])[row_of]  # (W,) position in its row
    room = lengths[row_of] - offset  # (W,) words from here to the row's end
    h = np.zeros(0, np.uint64)
    with np.errstate(over="ignore"):
        for m in range(1, min(upto, total) + 1):
            h = flat.copy() if m == 1 else h[:-1] * _P + flat[m - 1:]  # (W-m+1,) windows of m words
            inside = room[: total - m + 1] >= m
            yield m, h[inside], row_of[: total - m + 1][inside], np.flatnonzero(inside)


def ngram_hashes(flat: np.ndarray, lengths: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(hashes, row) of every n-gram that lies inside one row (see rolling_hashes)."""
    for m, h, row, _ in rolling_hashes(flat, lengths, n):
        if m == n:
            return h, row
    return np.zeros(0, np.uint64), np.zeros(0, np.int64)


@dataclass
class Lookup:
    """A sorted set of hashes, each with the evaluation row it came from, and its bit-table prefilter."""

    hashes: np.ndarray  # (G,) uint64, sorted, unique
    rows: np.ndarray  # (G,) evaluation row of each
    bitmap: np.ndarray  # (2^BITMAP_BITS,) bool

    @staticmethod
    def of(h: np.ndarray, rows: np.ndarray) -> Lookup:
        order = np.argsort(h, kind="stable")
        h, rows = h[order], rows[order]
        keep = np.concatenate([[True], h[1:] != h[:-1]]) if len(h) else np.zeros(0, bool)
        bitmap = np.zeros(1 << BITMAP_BITS, dtype=bool)
        bitmap[(h & _MASK).astype(np.int64)] = True
        return Lookup(h[keep], rows[keep], bitmap)

    def find(self, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions in h that are in the set, their index in the set)."""
        if not len(self.hashes) or not len(h):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        maybe = np.flatnonzero(self.bitmap[(h & _MASK).astype(np.int64)])  # cheap and cache-friendly
        pos = np.clip(np.searchsorted(self.hashes, h[maybe]), 0, len(self.hashes) - 1)
        hit = self.hashes[pos] == h[maybe]
        return maybe[hit], pos[hit]


def covered_words(h: np.ndarray, start: np.ndarray, total: int, n: int, common: np.ndarray) -> np.ndarray:
    """(total,) True for words inside some n-word window (hashes h starting at word `start`) that is common."""
    is_common = np.isin(h, common)
    edges = np.zeros(total + 1, np.int64)
    np.add.at(edges, start[is_common], 1)
    np.add.at(edges, start[is_common] + n, -1)
    return np.cumsum(edges[:-1]) > 0


def mostly_boilerplate(h: np.ndarray, start: np.ndarray, total: int, n: int, common: np.ndarray) -> np.ndarray:
    """(G,) True for n-word windows that are a common n-gram or have more than n/2 of their words
    inside common n-grams."""
    run = np.concatenate([[0], np.cumsum(covered_words(h, start, total, n, common))])
    return np.isin(h, common) | ((run[start + n] - run[start]) > n // 2)


def sequence_hash(words: np.ndarray) -> np.uint64:
    """The rolling hash of a word-hash sequence (as rolling_hashes gives it for its whole length)."""
    out = np.uint64(0)
    with np.errstate(over="ignore"):
        for w in words:
            out = out * _P + w
    return out


@dataclass
class EvalIndex:
    grams: Lookup  # n-grams (evaluation-side boilerplate already dropped)
    short: dict[int, Lookup]  # words -> whole-text hashes of evaluation rows that short
    exact: dict[int, int]  # full-text hash -> evaluation row
    rows: pl.DataFrame  # eval_file, eval_row, eval_id, text
    boilerplate_ngrams: int  # distinct n-grams dropped as evaluation-side boilerplate
    windows: tuple[np.ndarray, np.ndarray, int]  # (hash, start) of every evaluation n-gram kept, words in all

    def boilerplate_grams(self, common: np.ndarray, n: int) -> np.ndarray:
        """Indices into `grams` of n-grams that are mostly boilerplate once `common` (hashes, e.g. found
        common in the pool) are boilerplate too."""
        h, start, total = self.windows
        bad = np.unique(h[mostly_boilerplate(h, start, total, n, common)])
        _, pos = self.grams.find(bad)
        return pos


def build_index(evals: pl.DataFrame, cfg: DecontamConfig) -> EvalIndex:
    """evals: columns eval_file, eval_row, eval_id, text (raw question text)."""
    flat, lengths, full = _hashes(evals["text"])
    h, row, start = np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    for m, hm, rm, sm in rolling_hashes(flat, lengths, cfg.ngram):
        if m == cfg.ngram:
            h, row, start = hm, rm, sm
    # boilerplate on the evaluation side: an n-gram that many distinct evaluation texts share, and
    # the n-grams made mostly of its words
    limit = max(cfg.boilerplate_min_eval_rows, cfg.boilerplate_share * len(np.unique(full)))
    common = _common(h.view(np.int64), full.view(np.int64)[row], limit).view(np.uint64)
    keep = ~mostly_boilerplate(h, start, len(flat), cfg.ngram, common)
    # short problems, matched by containment: the words of a row outside boilerplate (all its words
    # when it has none), when they are fewer than n
    covered = covered_words(h, start, len(flat), cfg.ngram, common)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    short_h: dict[int, list] = {}
    short_rows: dict[int, list] = {}
    for r, (s0, n_words) in enumerate(zip(starts.tolist(), lengths.tolist(), strict=True)):
        rest = flat[s0:s0 + n_words][~covered[s0:s0 + n_words]]
        if cfg.min_words <= len(rest) < cfg.ngram:
            short_h.setdefault(len(rest), []).append(sequence_hash(rest))
            short_rows.setdefault(len(rest), []).append(r)
    short = {m: Lookup.of(np.array(short_h[m], np.uint64), np.array(short_rows[m], np.int64)) for m in short_h}
    exact = {}
    for i, (value, n) in enumerate(zip(full.tolist(), lengths.tolist(), strict=True)):
        if n:
            exact.setdefault(value, i)
    return EvalIndex(Lookup.of(h[keep], row[keep]), short, exact, evals, int(len(common)),
                     (h[keep], start[keep], len(flat)))


def _block_hits(texts: pl.Series, index: EvalIndex, cfg: DecontamConfig) -> tuple[np.ndarray, ...]:
    """For one block: n-gram hits (pool row, gram index), containment hits (pool row, eval row, words)
    and exact hits (pool row, eval row)."""
    flat, lengths, full = _hashes(texts)
    gram_rows, gram_idx, short_rows, short_eval, short_words = [], [], [], [], []
    for m, h, row, _ in rolling_hashes(flat, lengths, cfg.ngram):
        if m in index.short:
            at, pos = index.short[m].find(h)
            short_rows.append(row[at])
            short_eval.append(index.short[m].rows[pos])
            short_words.append(np.full(len(at), m))
        if m == cfg.ngram:
            at, pos = index.grams.find(h)
            gram_rows.append(row[at])
            gram_idx.append(pos)
    exact = [(i, index.exact[v]) for i, v in enumerate(full.tolist()) if v in index.exact] if cfg.exact else []
    cat = lambda xs: np.concatenate(xs) if xs else np.zeros(0, np.int64)  # noqa: E731
    return (cat(gram_rows), cat(gram_idx), cat(short_rows), cat(short_eval), cat(short_words),
            np.array([e[0] for e in exact], np.int64), np.array([e[1] for e in exact], np.int64))


def _common(keys: np.ndarray, rows: np.ndarray, limit: float) -> np.ndarray:
    """The keys that at least `limit` distinct rows hit."""
    if not len(keys):
        return keys
    pairs = np.unique(np.stack([keys, rows]), axis=1)
    values, counts = np.unique(pairs[0], return_counts=True)
    return values[counts >= limit]


def _pool_boilerplate(index: EvalIndex, g_row: np.ndarray, g_idx: np.ndarray, s_row: np.ndarray,
                      s_eval: np.ndarray, pool_rows: int, cfg: DecontamConfig) -> tuple[np.ndarray, np.ndarray]:
    """(n-gram indices, short evaluation rows) that are boilerplate on the pool side: an n-gram that
    many pool rows contain while sharing little else with its evaluation row (near-copies of a
    contaminated problem share most of its n-grams), with the evaluation n-grams made mostly of its
    words; a short evaluation row contained in many pool rows.

    g_row, g_idx: (hits,) pool row and n-gram index of every n-gram hit; s_row, s_eval: the same for
    containment hits."""
    limit = max(cfg.boilerplate_min_pool_rows, cfg.boilerplate_share * pool_rows)
    g_eval = index.grams.rows[g_idx]  # (hits,) evaluation row of each hit
    shared = pl.DataFrame({"r": g_row, "e": g_eval}).select(pl.len().over("r", "e"))["len"].to_numpy()  # (hits,)
    eval_grams = np.bincount(index.grams.rows, minlength=index.rows.height)  # (E,) n-grams each evaluation row has
    template_like = shared < 0.5 * eval_grams[g_eval]
    common_grams = _common(g_idx[template_like], g_row[template_like], limit)
    if len(common_grams):
        common_grams = np.union1d(common_grams, index.boilerplate_grams(index.grams.hashes[common_grams], cfg.ngram))
    common_short = _common(s_eval, s_row, max(4 * cfg.boilerplate_min_pool_rows, cfg.boilerplate_share * pool_rows))
    return common_grams, common_short


MATCH_SCHEMA = {"_pool_row": pl.Int64, "_eval_idx": pl.Int64, "shared_ngrams": pl.Int64, "how": pl.String}


@dataclass
class DecontamResult:
    kept: pl.DataFrame
    removed: pl.DataFrame  # the removed rows + eval_file, eval_row, eval_id, shared_ngrams, how
    config: DecontamConfig
    eval_rows: int
    boilerplate: dict  # {"ngrams_common_in_eval", "ngrams_common_in_pool", "short_rows_common_in_pool"}

    def summary(self) -> dict:
        by_eval = (self.removed.group_by("eval_file").len().sort("eval_file").iter_rows()
                   if self.removed.height else [])
        how = dict(self.removed.group_by("how").len().iter_rows()) if self.removed.height else {}
        return {"ngram": self.config.ngram, "min_shared": self.config.min_shared, "min_words": self.config.min_words,
                "exact": self.config.exact, "eval_rows": self.eval_rows, "checked": self.kept.height + self.removed.height,
                "removed": self.removed.height, "removed_exact": how.get("exact", 0),
                "removed_contained": how.get("contained", 0), "removed_ngram": how.get("ngram", 0),
                "removed_by_eval_set": dict(by_eval), "boilerplate_ignored": self.boilerplate}


def decontaminate(pool: pl.DataFrame, evals: pl.DataFrame, cfg: DecontamConfig = DecontamConfig()) -> DecontamResult:
    """Split a canonical problem table into kept rows and rows that overlap `evals` (module docstring)."""
    index = build_index(evals, cfg)
    texts = pool.select(problem_text_expr(pl.col("prompt")).alias("t"))["t"]
    parts: list[list[np.ndarray]] = [[] for _ in range(7)]
    for start in range(0, pool.height, BLOCK):
        for k, x in enumerate(_block_hits(texts.slice(start, BLOCK), index, cfg)):
            parts[k].append(x + start if k in (0, 2, 5) else x)  # pool rows: block-relative -> table rows
    g_row, g_idx, s_row, s_eval, s_words, x_row, x_eval = (np.concatenate(p) for p in parts)
    common_grams, common_short = _pool_boilerplate(index, g_row, g_idx, s_row, s_eval, pool.height, cfg)
    keep_g, keep_s = ~np.isin(g_idx, common_grams), ~np.isin(s_eval, common_short)
    g_row, g_eval = g_row[keep_g], index.grams.rows[g_idx[keep_g]]
    s_row, s_eval, s_words = s_row[keep_s], s_eval[keep_s], s_words[keep_s]

    found = [pl.DataFrame({"_pool_row": x_row, "_eval_idx": x_eval, "shared_ngrams": np.zeros(len(x_row), np.int64),
                           "how": "exact"}, schema=MATCH_SCHEMA),
             pl.DataFrame({"_pool_row": s_row, "_eval_idx": s_eval, "shared_ngrams": s_words, "how": "contained"},
                          schema=MATCH_SCHEMA)]
    if len(g_row):
        grams = pl.DataFrame({"_pool_row": g_row, "_eval_idx": g_eval}).group_by("_pool_row", "_eval_idx").len()
        found.append(grams.filter(pl.col("len") >= cfg.min_shared).select(
            "_pool_row", "_eval_idx", pl.col("len").cast(pl.Int64).alias("shared_ngrams"), pl.lit("ngram").alias("how")))
    # one match per pool row: exact first, then containment, then the most shared n-grams
    rank = pl.col("how").replace_strict({"exact": 0, "contained": 1, "ngram": 2}, return_dtype=pl.Int64)
    matches = (pl.concat(found).sort(rank, -pl.col("shared_ngrams"), "_eval_idx")
               .unique("_pool_row", keep="first", maintain_order=True))
    numbered = pool.with_row_index("_pool_row").with_columns(pl.col("_pool_row").cast(pl.Int64))
    eval_rows = index.rows.select("eval_file", "eval_row", "eval_id").with_row_index("_eval_idx").with_columns(
        pl.col("_eval_idx").cast(pl.Int64))
    removed = numbered.join(matches, on="_pool_row", how="inner").join(eval_rows, on="_eval_idx", how="left")
    kept = numbered.join(matches, on="_pool_row", how="anti").drop("_pool_row")
    boilerplate = {"ngrams_common_in_eval": index.boilerplate_ngrams, "ngrams_common_in_pool": int(len(common_grams)),
                   "short_rows_common_in_pool": int(len(common_short))}
    return DecontamResult(kept, removed.sort("_pool_row").drop("_eval_idx"), cfg, evals.height, boilerplate)


def removed_as_rejects(removed: pl.DataFrame, label: str | None, ngram: int) -> pl.DataFrame:
    """Rejects-file rows (reason `contaminated`) for removed rows of the table read from `label` (its
    row number), or with `label` None of the files the rows were loaded from (file and row from
    `meta`): the evaluation row each matches, and the canonical row as `raw`."""
    if removed.height == 0:
        return pl.DataFrame(schema={"file": pl.String, "row": pl.Int64, "reason": pl.String, "detail": pl.String,
                                    "raw": pl.String, "eval_file": pl.String, "eval_row": pl.Int64, "eval_id": pl.String})
    detail = (pl.when(pl.col("how") == "exact").then(pl.format("same text as {} row {}", "eval_file", "eval_row"))
              .when(pl.col("how") == "contained").then(pl.format("contains all {} words of {} row {}", "shared_ngrams",
                                                                 "eval_file", "eval_row"))
              .otherwise(pl.format("{} shared {}-grams with {} row {}", "shared_ngrams", pl.lit(ngram), "eval_file",
                                   "eval_row")))
    raw = pl.struct("id", "source", "prompt", "answer", "level").struct.json_encode()
    if label is None:
        file, row = pl.col("meta").str.json_path_match("$.file"), pl.col("meta").str.json_path_match("$.row").cast(pl.Int64)
    else:
        file, row = pl.lit(label), pl.col("_pool_row")
    return removed.select(file.alias("file"), row.alias("row"), pl.lit("contaminated").alias("reason"),
                          detail.alias("detail"), raw.alias("raw"), "eval_file", pl.col("eval_row").cast(pl.Int64),
                          pl.col("eval_id").cast(pl.String))
