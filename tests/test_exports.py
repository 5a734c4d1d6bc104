"""Reusable profiles: DART-Math and avg@K exports by hand, lossless read-back, the prior readers, cards, errors."""

import json
import math
import re

import numpy as np
import polars as pl
import pytest

from grpo_data.curriculum.estimates import with_estimates
from grpo_data.curriculum.priors import frame_columns, read_prior
from grpo_data.curriculum.stats import StoppingRule, grid_mean_std, level_posteriors
from grpo_data.generation.engines import Completion
from grpo_data.profile_chunks import summarize_problem as row
from grpo_data.profile_config import ProfileConfig
from grpo_data.profile_metadata import run_metadata
from grpo_data.profile_parts import merge_parts, parts_dir
from grpo_data.profiler import profile_problems
from grpo_data.tables.cards import profile_column, read_card_record, write_card
from grpo_data.tables.exports import (
    DART_COLUMNS,
    EXPORT_KEY,
    ROUND_SCHEMA,
    ExportError,
    card_record,
    export_profile,
    export_table,
    read_export,
    read_problem_table,
    sidecar,
    unknown_fields,
)
from grpo_data.tables.profile_table import read_profile
from grpo_data.tables.shards import read_shards, write_shards
from grpo_data.verify.judge import verdict_fingerprint

# three problems sampled in rounds of 2: (samples per round, successes per round)
ROUNDS = {"a": ([2], [0]), "b": ([2, 2, 2], [1, 0, 2]), "c": ([2, 2], [2, 1])}
META = {"model": "runs/Qwen2.5-Math-1.5B", "weights_hash": "0123456789abcdef", "config": {"prior_groups": "level"}}


def three_problems() -> pl.DataFrame:
    rows = [{"id": i, **row(sum(c), sum(k), [5] * sum(k), 0, {"ok": sum(c)}, rounds=(k, c))} for i, (k, c) in ROUNDS.items()]
    return pl.DataFrame(rows, schema_overrides={"n_formatted": pl.Int64, "max_tokens": pl.Int64, **ROUND_SCHEMA})


def test_dart_export_by_hand():
    table, info = export_table(three_problems(), META, "dart")
    assert table.columns[:11] == ["query_id", "level", "n_samples_list", "n_corrects_list", "rounds_recorded",
                                  *DART_COLUMNS[4:], "p_est", "p_std"]
    assert table["rounds_recorded"].to_list() == [True] * 3
    assert table["query_id"].to_list() == ["a", "b", "c"]
    assert table["n_samples_list"].to_list() == [[2], [2, 2, 2], [2, 2]]
    assert table["n_corrects_list"].to_list() == [[0], [1, 0, 2], [2, 1]]
    assert table["tot_n_samples"].to_list() == [2, 6, 4] and table["tot_n_corrects"].to_list() == [0, 3, 3]
    assert table["pass_rate"].to_list() == [0.0, 0.5, 0.75]
    # sqrt(p (1 - p) / n): 0 of 2, 3 of 6, 3 of 4
    assert table["pass_rate_bernoulli_std"].to_list() == pytest.approx([0.0, math.sqrt(0.25 / 6), math.sqrt(0.1875 / 4)],
                                                                       rel=1e-15)
    assert table["level"].null_count() == 3
    # the spread is the grid empirical-Bayes posterior shards and the adaptive profiler use (one prior: no levels)
    mean, std = grid_mean_std(level_posteriors(np.array([0, 3, 3]), np.array([2, 6, 4])))
    assert table["p_est"].to_list() == pytest.approx(mean, rel=1e-12) and table["p_std"].to_list() == pytest.approx(std)
    assert info == {"format": "dart", "rows": 3, "rounds_recorded": True,
                    "estimate": {"columns": ["p_est", "p_std"], "prior": "pool", "grid_points": 41,
                                 "from": "this profile's counts"},
                    "ids": {"scheme": "unknown: exported without the problem table (--data)", "columns": ["id"]}}


def test_avg_export_by_hand_states_k():
    """avg@K claims K samples per row (verl's mean@N, published avg@K): K is the fewest any row has, never more."""
    table, info = export_table(three_problems(), META, "avg")
    assert table.columns[:10] == ["id", "avg@2_qwen2.5-math-1.5b", "k", "n_correct", "k_rounds", "n_correct_rounds",
                                  "rounds_recorded", "level", "p_est", "p_std"]
    assert table["avg@2_qwen2.5-math-1.5b"].to_list() == [0.0, 0.5, 0.75] and table["k"].to_list() == [2, 6, 4]
    assert info["k"] == 2 and info["column"] == "avg@2_qwen2.5-math-1.5b"
    assert (info["k_min"], info["k_max"], info["more_than_k"]) == (2, 6, 2)
    table, info = export_table(three_problems(), META, "avg", k=1)  # a smaller K under-claims: allowed
    assert table.columns[1] == "avg@1_qwen2.5-math-1.5b" and info["more_than_k"] == 3
    # a K above a problem's samples would claim samples it does not have
    with pytest.raises(ExportError, match=r"row 0 \(id 'a'\): `k` = 2 samples, fewer than the K = 4 .* give K <= 2"):
        export_table(three_problems(), META, "avg", k=4)


def test_levels_give_per_level_estimates_unless_the_profile_pooled():
    levels = pl.DataFrame({"id": ["c", "b", "a"], "level": [2, 1, 1]})
    table, info = export_table(three_problems(), META, "dart", problems=levels)
    assert table["level"].to_list() == [1, 1, 2] and info["estimate"]["prior"] == "per level"
    est = with_estimates(pl.DataFrame({"n_correct": [0, 3, 3], "k": [2, 6, 4], "level": [1, 1, 2]}), per_level=True)
    assert table["p_est"].to_list() == est["p_est"].to_list() and table["p_std"].to_list() == est["p_std"].to_list()
    pooled, info = export_table(three_problems(), {"config": {"prior_groups": "none"}}, "dart", problems=levels)
    assert info["estimate"]["prior"] == "pool" and pooled["level"].to_list() == [1, 1, 2]


@pytest.mark.parametrize("fmt", ["dart", "avg"])
def test_round_trip_is_lossless(tmp_path, fmt):
    profile = three_problems()
    out = tmp_path / f"p.{fmt}.parquet"
    record = export_profile(profile, META, out, fmt)
    back, read = read_export(out)
    assert back.select(profile.columns).equals(profile)  # every profile column, the rounds' lists included
    assert back.columns[-3:] == ["level", "p_est", "p_std"]
    assert read == record == json.loads(sidecar(out).read_text())
    assert read["profile"] == META and read["card"] == card_record(META)
    # exporting what was read back writes the same table
    again = tmp_path / f"again.{fmt}.parquet"
    export_profile(back, META, again, fmt)
    assert pl.read_parquet(again).equals(pl.read_parquet(out))


def random_profile(n: int, seed: int) -> pl.DataFrame:
    """n problems sampled in rounds of 1-4 samples (a fifth of them without recorded rounds), ids out of order."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in rng.permutation(n):
        k_rounds = rng.integers(1, 5, size=rng.integers(1, 6)).tolist()
        c_rounds = [int(rng.integers(0, k + 1)) for k in k_rounds]
        r = row(sum(c_rounds), sum(k_rounds), [int(x) for x in rng.integers(1, 50, sum(k_rounds))], 0,
                {"ok": sum(c_rounds), "wrong": sum(k_rounds) - sum(c_rounds)}, rounds=(k_rounds, c_rounds))
        if rng.random() < 0.2:
            r["k_rounds"] = r["n_correct_rounds"] = None
        rows.append({"id": f"p{i:03d}", **r, "n_formatted": None if i % 3 else int(rng.integers(0, 3)),
                     "max_tokens": 256})
    return pl.DataFrame(rows, schema_overrides={"n_formatted": pl.Int64, "max_tokens": pl.Int64, **ROUND_SCHEMA})


@pytest.mark.parametrize("fmt", ["dart", "avg"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_round_trip_of_a_larger_unsorted_profile_with_unrecorded_rounds(tmp_path, fmt, seed):
    profile = random_profile(60, seed)
    assert profile["k_rounds"].null_count() > 0 and not profile["id"].is_sorted()
    left = pl.DataFrame({"id": ["q1", "q2"], "reason": ["prompt_over_context"] * 2, "detail": ["900 > 512", "700 > 512"]})
    out = tmp_path / f"p.{fmt}.parquet"
    record = export_profile(profile, META, out, fmt, left_out=left)
    back, read = read_export(out)
    assert back.select(profile.columns).equals(profile)  # the rows in their order, null rounds kept null
    assert read["export"]["rounds_recorded"] is False
    assert read["export"]["left_out"] == {"rows": 2, "problems": left.to_dicts()} == record["export"]["left_out"]
    again = tmp_path / f"again.{fmt}.parquet"
    export_profile(back, META, again, fmt)
    assert pl.read_parquet(again).equals(pl.read_parquet(out))


def test_a_profile_merged_from_old_and_new_parts_reads_back_with_the_old_rows_rounds_unrecorded(tmp_path):
    new = three_problems()
    old = pl.DataFrame([{"id": "d", **row(1, 4, [5] * 4, 0, {"ok": 1})}],
                       schema_overrides={"n_formatted": pl.Int64, "max_tokens": pl.Int64}).drop(*ROUND_SCHEMA)
    out = tmp_path / "profile.parquet"
    parts_dir(out).mkdir()
    new.write_parquet(parts_dir(out) / "shard0000-of-0001-a.parquet")
    old.write_parquet(parts_dir(out) / "shard0000-of-0001-d.parquet")  # written before rounds were recorded
    merge_parts(out)
    profile, meta = read_profile(out)
    assert profile["k_rounds"].to_list() == [[2], [2, 2, 2], [2, 2], None]
    export_profile(profile, meta, tmp_path / "p.dart.parquet", "dart")
    assert pl.read_parquet(tmp_path / "p.dart.parquet")["n_samples_list"].to_list()[3] == [4]  # DART readers sum it
    back, _ = read_export(tmp_path / "p.dart.parquet")
    assert back["k_rounds"].to_list() == [[2], [2, 2, 2], [2, 2], None]
    assert back.select(profile.columns).equals(profile)


@pytest.mark.parametrize(("fmt", "spec"), [("dart", "dart"), ("avg", "avg")])
def test_prior_presets_read_the_exports_back_to_the_same_rates(tmp_path, fmt, spec):
    out = tmp_path / f"p.{fmt}.parquet"
    export_profile(three_problems(), META, out, fmt)
    table = pl.read_parquet(out)
    prior = read_prior(spec, frame_columns(table, str(out)), weight=4)
    assert prior.rate.tolist() == [0.0, 0.5, 0.75]
    # each problem's own samples: dart sums its lists, avg reads its `k` (not K = 2 for every row)
    assert prior.samples.tolist() == [2.0, 6.0, 4.0]
    if fmt == "avg":  # read back beside the very profile it was exported from: the same samples twice
        from grpo_data.curriculum.priors import PriorError, merge_offline

        with pytest.raises(PriorError, match="would count the same samples twice"):
            merge_offline((table["n_correct"].to_numpy(), table["k"].to_numpy()), prior)


def test_the_avg_prior_reads_each_rows_samples_where_the_table_states_them():
    from grpo_data.curriculum.priors import PriorError, record_columns

    rows = [{"avg@4_m": 0.5, "k": 8}, {"avg@4_m": 0.25, "k": None}, {"avg@4_m": None, "k": 4}]
    assert read_prior("avg", record_columns(rows)).samples.tolist()[:2] == [8.0, 4.0]  # no `k`: K
    assert read_prior("avg@4_m", record_columns(rows)).samples.tolist()[:2] == [8.0, 4.0]
    verl = [{"avg@4_m": 0.5, "extra_info": {"k": 16}}]
    assert read_prior("avg", record_columns(verl)).samples.tolist() == [16.0]
    assert read_prior("avg", record_columns([{"avg@4_m": 0.5}])).samples.tolist() == [4.0]  # published: K
    # a top-level `k` without a value (a trl shard's unprofiled rows) gives way to verl's `extra_info.k`
    both = [{"avg@4_m": 0.5, "k": None, "extra_info": {"k": 16}}]
    assert read_prior("avg", record_columns(both)).samples.tolist() == [16.0]
    with pytest.raises(PriorError, match=r"row 0: `avg@4_m` = 0.5 is read with `k` = 0, not a sample count"):
        read_prior("avg", record_columns([{"avg@4_m": 0.5, "k": 0}]))


class ScriptedEngine:
    """Test double for the generation engine: problem i answers correctly with the rate `rates[i]`."""

    name, model_path, context_length = "scripted", "runs/scripted-policy", None

    def __init__(self, rates: list[float]):
        from grpo_train.tiny_policy import build_tokenizer

        self.rates, self.rng, self.tokenizer = rates, np.random.default_rng(0), build_tokenizer()

    def generate(self, prompts, n, sampling):
        out = []
        for p in prompts:
            i = int(self.tokenizer.decode(list(p)).split("user\nq", 1)[1].split("<|im_end|>", 1)[0])
            out.append([Completion(f"\\boxed{{{i if self.rng.random() < self.rates[i] else i + 1}}}", (1, 2), "stop")
                        for _ in range(n)])
        return out


def test_an_adaptive_profile_exports_its_rounds_and_record_and_reads_back(tmp_path, pool):
    """Engine: ScriptedEngine (test double); profile -> export -> read back, with the run's real metadata."""
    from grpo_data.tables.problems import to_table, user_prompt

    rates = [0.0, 0.5, 1.0, 0.5, 0.3, 0.7] * 4
    problems = to_table([{"id": f"id{i:02d}", "source": "t", "prompt": user_prompt(f"q{i}"), "answer": str(i),
                          "level": i % 2, "meta": "{}"} for i in range(len(rates))])
    engine = ScriptedEngine(rates)
    cfg = ProfileConfig(rule=StoppingRule(screen_k=2, step_k=2, max_k=8), chunk_size=12, seed=3)
    meta = run_metadata(engine, cfg, "t", pool.config.verdict_settings())
    out = tmp_path / "profile.parquet"
    profile_problems(problems, engine, pool, cfg, out, metadata=meta, progress=False)
    merge_parts(out)
    profile, meta = read_profile(out)
    assert profile["k"].max() > 2  # some problems took more than the screen
    export = tmp_path / "profile.dart.parquet"
    export_profile(profile, meta, export, "dart", problems=problems.select("id", "level"))
    back, record = read_export(export)
    assert back.select(profile.columns).equals(profile)
    assert all(sum(k) == n for k, n in zip(back["k_rounds"].to_list(), back["k"].to_list(), strict=True))
    card = record["card"]
    assert card["model"] == "runs/scripted-policy" and card["weights_hash"] == "hub:runs/scripted-policy"
    assert card["sampling"]["temperature"] == 1.0 and card["sampling"]["seed"] == 3
    assert card["samples"]["rule"]["screen_k"] == 2 and len(card["prompt"]["template_hash"]) == 16
    assert card["verifier"]["library"] == "math-verify" and len(card["verifier"]["rules_hash"]) == 16
    assert card["verifier"]["version"] == meta["versions"]["math-verify"] and card["prior"] is None
    # every verdict-changing setting of the pool, the judging libraries' versions and the verdict fingerprint
    assert {k: card["verifier"][k] for k in pool.config.verdict_settings()} == pool.config.verdict_settings()
    assert card["verifier"]["sympy"] and card["verifier"]["latex2sympy2_extended"]
    assert card["verifier"]["fingerprint"] == verdict_fingerprint(pool.config.pred_tail_chars)
    assert unknown_fields(card) == []
    assert record["export"]["estimate"]["prior"] == "per level"


def shard_set(tmp_path, profile, meta):
    from grpo_data.tables.problems import to_table, user_prompt

    problems = to_table([{"id": i, "source": "t", "prompt": user_prompt(i), "answer": "1", "level": 1, "meta": "{}"}
                         for i in profile["id"].to_list()])
    write_shards(problems, profile, tmp_path / "s", fmt="verl", profile_meta=meta)
    return tmp_path / "s"


def test_a_card_writes_its_profile_beside_it_and_both_read_back(tmp_path):
    profile = three_problems()
    path = tmp_path / "profile.parquet"
    profile.write_parquet(path, metadata={"grpo_profile": json.dumps(META)})
    shards = shard_set(tmp_path, profile, META)
    card = write_card(shards, "three", tmp_path / "cards" / "three.md", profile=path)
    text = card.read_text()
    assert "`three.dart.parquet` beside this card" in text and "judging rules sha256 `unknown`" in text
    record = read_card_record(card)
    assert record["card"] == card_record(META) and record["estimate"] == {"column": "p_est", "prior": "per level"}
    assert record["ids"]["scheme"] == "the dataset's own id column" and record["ids"]["dataset"] == 3
    back, exported = read_export(tmp_path / "cards" / "three.dart.parquet")
    assert back.select(profile.columns).equals(profile) and back["level"].to_list() == [1, 1, 1]
    assert exported["card"] == record["card"]
    # a card without its profile says where the counts are instead
    assert "grpo export --profile PROFILE" in write_card(shards, "three", tmp_path / "bare.md").read_text()
    # another profile than the set's is refused
    other = tmp_path / "other.parquet"
    profile.write_parquet(other, metadata={"grpo_profile": json.dumps({**META, "weights_hash": "ffff"})})
    with pytest.raises(ExportError, match="other.parquet: `weights_hash` = 'ffff', but the shard set was built"):
        write_card(shards, "three", tmp_path / "x.md", profile=other)
    (tmp_path / "old.md").write_text(text.split("## Reuse")[0])
    with pytest.raises(ExportError, match="old.md: no `## Reuse` section"):
        read_card_record(tmp_path / "old.md")


@pytest.mark.parametrize("fmt", ["native", "verl"])
def test_a_cards_counts_carry_the_estimates_of_the_shards_beside_it(tmp_path, fmt):
    """The set drops profile rows its problem table lacks and fits its per-level prior on the rest: the export
    beside the card copies the set's p_est/p_std (null where the set has no row) instead of fitting its own."""
    from grpo_data.tables.problems import to_table, user_prompt

    counts = {"a": (0, 2), "b": (1, 2), "c": (2, 2), "d": (5, 8), "e": (0, 2), "f": (2, 2), "g": (1, 4)}
    profile = pl.DataFrame([{"id": i, **row(c, n, [5] * n, 0, {"ok": c})} for i, (c, n) in counts.items()],
                           schema_overrides={"n_formatted": pl.Int64, "max_tokens": pl.Int64, **ROUND_SCHEMA})
    path = tmp_path / "profile.parquet"
    profile.write_parquet(path, metadata={"grpo_profile": json.dumps(META)})
    kept = {"a": 1, "b": 1, "c": 2, "d": 2, "g": 3}  # e and f are not in the set's problem table
    problems = to_table([{"id": i, "source": "t", "prompt": user_prompt(i), "answer": "1", "level": lvl, "meta": "{}"}
                         for i, lvl in kept.items()])
    write_shards(problems, profile, tmp_path / "s", fmt=fmt, profile_meta=META)
    card = write_card(tmp_path / "s", "seven", tmp_path / "seven.md", profile=path)
    shards = read_shards(tmp_path / "s")
    set_est = dict(zip(profile_column(shards, "id").to_list(), profile_column(shards, "p_est").to_list(), strict=True))
    back, record = read_export(card.with_suffix(".dart.parquet"))
    assert back["id"].to_list() == list(counts)
    assert dict(zip(back["id"].to_list(), back["p_est"].to_list(), strict=True)) == {**set_est, "e": None, "f": None}
    assert back.filter(pl.col("id").is_in(["e", "f"]))["p_std"].null_count() == 2
    estimate = record["export"]["estimate"]
    assert estimate["prior"] == "per level" and estimate["rows_without"] == 2 and "shard set s" in estimate["from"]


@pytest.mark.parametrize("fmt", ["dart", "avg"])
def test_with_the_problem_table_an_export_carries_the_question_source_and_id_scheme(tmp_path, fmt):
    """A hashed id is opaque to another team: the export adds the question (`query`), source and meta (file, row)."""
    from grpo_data.tables.problems import problem_id, to_table, user_prompt

    questions = {"a": "What is 1+1?", "b": "What is 2+3?", "c": "Solve x+1=2."}
    hashed = {name: problem_id(user_prompt(q)) for name, q in questions.items()}
    profile = three_problems().with_columns(pl.col("id").replace(hashed))
    problems = to_table([{"id": hashed[n], "source": "math.jsonl", "prompt": user_prompt(q), "answer": "1", "level": 1,
                          "meta": json.dumps({"file": "math.jsonl", "row": i})} for i, (n, q) in enumerate(questions.items())])
    data = tmp_path / "problems.parquet"
    problems.write_parquet(data)
    out = tmp_path / f"p.{fmt}.parquet"
    record = export_profile(profile, META, out, fmt, problems=read_problem_table(data))
    table = pl.read_parquet(out)
    assert table["query"].to_list() == list(questions.values())  # the profile's row order
    assert table["source"].to_list() == ["math.jsonl"] * 3 and json.loads(table["meta"][0])["file"] == "math.jsonl"
    ids = record["export"]["ids"]
    assert (ids["hashed"], ids["dataset"]) == (3, 0) and ids["scheme"].startswith("sha1 of the normalized prompt text")
    assert ids["columns"] == ["id", "source", "meta", "query"]
    back, _ = read_export(out)
    assert back.columns[-6:] == ["query", "source", "meta", "level", "p_est", "p_std"]
    assert back.select(profile.columns).equals(profile)
    again = tmp_path / f"again.{fmt}.parquet"  # a read-back export keeps them
    export_profile(back, META, again, fmt)
    assert pl.read_parquet(again).equals(table)
    # the dataset's own ids
    own = export_table(three_problems(), META, fmt, problems=problems.with_columns(pl.Series("id", list(questions))))[1]
    assert (own["ids"]["hashed"], own["ids"]["dataset"]) == (0, 3) and own["ids"]["scheme"] == "the dataset's own id column"


def test_a_profile_without_rounds_exports_one_round_per_problem():
    profile = three_problems().drop("k_rounds", "n_correct_rounds")
    table, info = export_table(profile, META, "dart")
    assert table["n_samples_list"].to_list() == [[2], [6], [4]] and table["n_corrects_list"].to_list() == [[0], [3], [3]]
    assert info["rounds_recorded"] is False


def test_bad_profiles_are_refused_naming_the_field_and_row():
    bad = three_problems().with_columns(pl.Series("k_rounds", [[2], [2, 2, 4], [2, 2]]))
    with pytest.raises(ExportError, match=r"p.parquet: row 1 \(id 'b'\): `k_rounds` = \[2, 2, 4\] does not sum to `k`"):
        export_table(bad, META, "dart", where="p.parquet")
    over = three_problems().with_columns(pl.Series("n_correct_rounds", [[0], [1, 0, 2], [3, 0]]))
    with pytest.raises(ExportError, match=r"row 2 \(id 'c'\): `n_correct_rounds` = \[3, 0\] has more successes"):
        export_table(over, META, "dart")
    with pytest.raises(ExportError, match="unknown export format 'csv'; choose one of: dart, avg"):
        export_table(three_problems(), META, "csv")


def test_bad_exports_are_refused_naming_the_file_field_and_row(tmp_path):
    out = tmp_path / "p.dart.parquet"
    export_profile(three_problems(), META, out, "dart")
    footer = {EXPORT_KEY: pl.read_parquet_metadata(out)[EXPORT_KEY]}
    table = pl.read_parquet(out)
    cases = {
        "counts": (table.with_columns(pl.Series("tot_n_corrects", [0, 4, 3])),
                   r"row 1 \(id 'b'\): `n_corrects_list` = \[1, 0, 2\] does not sum to `tot_n_corrects`"),
        "rate": (table.with_columns(pl.Series("pass_rate", [0.0, 0.5, 0.7])),
                 r"row 2 \(id 'c'\): `pass_rate` = 0.7 is not `tot_n_corrects` / `tot_n_samples` = 3 / 4"),
        "column": (table.drop("n_samples_list"), r"a DART-Math export without column\(s\) \['n_samples_list'\]"),
    }
    for name, (frame, message) in cases.items():
        path = tmp_path / f"{name}.parquet"
        frame.write_parquet(path, metadata=footer)
        with pytest.raises(ExportError, match=f"{name}.parquet: {message}"):
            read_export(path)
    table.write_parquet(tmp_path / "plain.parquet")  # a published DART table: no record
    with pytest.raises(ExportError, match=r"plain.parquet: no `grpo_card` record .*\(--prior dart / avg\)"):
        read_export(tmp_path / "plain.parquet")
    avg = tmp_path / "p.avg.parquet"
    export_profile(three_problems(), META, avg, "avg")
    frame = pl.read_parquet(avg).with_columns(pl.Series("avg@2_qwen2.5-math-1.5b", [0.0, 0.4, 0.75]))
    frame.write_parquet(tmp_path / "avg.parquet", metadata={EXPORT_KEY: pl.read_parquet_metadata(avg)[EXPORT_KEY]})
    with pytest.raises(ExportError, match=r"row 1 \(id 'b'\): `avg@2_qwen2.5-math-1.5b` = 0.4 is not `n_correct` / `k`"):
        read_export(tmp_path / "avg.parquet")


def test_grpo_export_command(tmp_path, capsys):
    from pipelines.cli import main

    path = tmp_path / "profile.parquet"
    three_problems().write_parquet(path, metadata={"grpo_profile": json.dumps(META)})
    levels = tmp_path / "problems.parquet"
    pl.DataFrame({"id": ["a", "b", "c"], "level": [1, 1, 2]}).write_parquet(levels)
    assert main(["export", "--profile", str(path), "--format", "avg", "--k", "1", "--data", str(levels),
                 "--out", str(tmp_path / "e.parquet")]) == 0
    said = capsys.readouterr().out
    assert ("3 problems (avg; rounds recorded; estimate prior per level; column avg@1_qwen2.5-math-1.5b (K = 1: every "
            "rate averages at least K samples, 3 problems more, up to 6") in said
    back, record = read_export(tmp_path / "e.parquet")
    assert back["level"].to_list() == [1, 1, 2] and record["export"]["k"] == 1
    assert main(["export", "--profile", str(path), "--format", "avg", "--k", "8", "--out", str(tmp_path / "e8")]) == 2
    assert "fewer than the K = 8" in capsys.readouterr().err
    assert main(["export", "--profile", str(path), "--format", "dart", "--k", "8", "--out", str(tmp_path / "d")]) == 2
    assert "--k states the K of avg@K" in capsys.readouterr().err
    assert main(["export", "--profile", str(tmp_path / "none.parquet"), "--format", "dart",
                 "--out", str(tmp_path / "d")]) == 2
    assert "none.parquet: no such profile" in capsys.readouterr().err


@pytest.mark.parametrize("out", ["profile.parquet", "profile.json", "profile.inputs.parquet", "./sub/../profile.parquet",
                                 "problems.parquet"])
def test_an_export_never_overwrites_its_profile_or_data(tmp_path, capsys, out):
    """--out naming the profile (or a name whose .json sidecar is the profile's .json or .inputs.json) would destroy it."""
    from pipelines.cli import main

    path = tmp_path / "profile.parquet"
    three_problems().write_parquet(path, metadata={"grpo_profile": json.dumps(META)})
    (tmp_path / "profile.json").write_text(json.dumps(META))
    (tmp_path / "profile.inputs.json").write_text("{}")
    (tmp_path / "sub").mkdir()
    data = tmp_path / "problems.parquet"
    pl.DataFrame({"id": ["a", "b", "c"], "level": [1, 1, 2]}).write_parquet(data)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert main(["export", "--profile", str(path), "--format", "dart", "--data", str(data),
                 "--out", str(tmp_path / out)]) == 2
    assert "would overwrite" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    with pytest.raises(ExportError, match="would overwrite"):
        export_profile(three_problems(), META, tmp_path / out, "dart", inputs=[path, data])


def test_bad_inputs_to_grpo_export_stop_naming_the_file_column_and_row(tmp_path, capsys):
    from pipelines.cli import main

    profile = three_problems().with_columns(pl.Series("id", ["1", "2", "3"]))
    path = tmp_path / "profile.parquet"
    profile.write_parquet(path, metadata={"grpo_profile": json.dumps(META)})

    def export(data: pl.DataFrame | None, profile_path=path) -> int:
        args = ["export", "--profile", str(profile_path), "--format", "dart", "--out", str(tmp_path / "e.parquet")]
        if data is not None:
            data.write_parquet(tmp_path / "data.parquet")
            args += ["--data", str(tmp_path / "data.parquet")]
        return main(args)

    # a dataset's integer ids are read as text, MATH's "Level 5" as 5
    assert export(pl.DataFrame({"id": [1, 2, 3], "level": ["Level 1", "Level 5", None]})) == 0
    back, record = read_export(tmp_path / "e.parquet")
    assert back["level"].to_list() == [1, 5, None] and record["export"]["ids"]["not_in_problem_table"] == 0
    capsys.readouterr()
    cases = [
        (pl.DataFrame({"id": ["1", "2", "2"], "level": [1, 1, 1]}), r"data.parquet: row 1: `id` is duplicated \(id '2'"),
        (pl.DataFrame({"id": ["1", "2", "3"], "level": ["Level 1", "hard", "3"]}),
         r"data.parquet: row 1: `level` holds no level number \(id '2', level 'hard'"),
        (pl.DataFrame({"id": [1.0, 2.0, 3.0], "level": [1, 1, 1]}), r"data.parquet: column `id` is Float64"),
        (pl.DataFrame({"id": ["1", None, "3"], "level": [1, 1, 1]}), r"data.parquet: row 1: `id` is null"),
    ]
    for data, message in cases:
        assert export(data) == 2
        assert re.search(message, capsys.readouterr().err)
    (tmp_path / "text.parquet").write_text("id,k\n1,2\n")
    assert export(None, tmp_path / "text.parquet") == 2
    assert "text.parquet: cannot be read as a profile" in capsys.readouterr().err
    # profiled problems the table lacks: said, counted, their columns null
    assert export(pl.DataFrame({"id": ["1", "3", "9"], "level": [1, 2, 3]})) == 0  # the CLI logs to stderr
    assert "1 of 3 profiled problems are not in the problem table (e.g. '2')" in capsys.readouterr().err
    back, record = read_export(tmp_path / "e.parquet")
    assert back["level"].to_list() == [1, None, 2] and record["export"]["ids"]["not_in_problem_table"] == 1


def test_a_null_inside_a_round_list_and_a_duplicated_problem_are_refused():
    bad = three_problems().with_columns(pl.Series("k_rounds", [[2], [2, None, 2], [2, 2]], dtype=pl.List(pl.Int64)))
    with pytest.raises(ExportError, match=r"row 1 \(id 'b'\): `k_rounds` = \[2, None, 2\] holds a null count"):
        export_table(bad, META, "dart")
    dup = pl.DataFrame({"id": ["a", "b", "b"], "level": [1, 1, 2]})
    with pytest.raises(ExportError, match="the problem table holds id 'b' more than once"):
        export_table(three_problems(), META, "dart", problems=dup)


def test_an_export_without_levels_of_a_per_level_profile_warns(caplog):
    with caplog.at_level("WARNING", logger="grpo_data.tables.exports"):
        export_table(three_problems(), META, "dart", where="p.parquet")
    assert "p.parquet: the profile weighs per-level priors (prior_groups: level), but no level is given" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="grpo_data.tables.exports"):
        export_table(three_problems(), {"config": {"prior_groups": "none"}}, "dart")
        export_table(three_problems(), META, "dart", problems=pl.DataFrame({"id": ["a", "b", "c"], "level": [1, 1, 2]}))
    assert "per-level priors" not in caplog.text
