"""Mixtures, decontamination and the format rate: on files written here, through the library and the CLI."""

import json
import logging
import subprocess
import sys

import numpy as np
import polars as pl
import pytest

from grpo_data.generation.engines import Completion
from grpo_data.tables.decontam import DecontamConfig, decontaminate, match_text_expr, ngram_hashes
from grpo_data.tables.loaders import DataError, read_provenance
from grpo_data.tables.mixture import build_mixture, mixture_counts, parse_mixture
from grpo_data.tables.problems import to_table, user_prompt

WORDS = [f"w{i}" for i in range(4000)]


def sentence(rng, n=30):
    return " ".join(rng.choice(WORDS, size=n))


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def table_of(texts):
    return to_table([{"id": f"p{i}", "source": "s", "prompt": user_prompt(t), "answer": "1", "level": None, "meta": "{}"}
                     for i, t in enumerate(texts)])


def evals_of(texts, name="eval"):
    return pl.DataFrame({"eval_file": name, "eval_row": list(range(len(texts))),
                         "eval_id": [f"e{i}" for i in range(len(texts))], "text": texts})


# ---------------------------------------------------------------- mixtures


def test_mixture_counts_follow_weights_caps_and_availability():
    assert mixture_counts([100, 100], None, [None, 30], None) == [100, 30]
    assert mixture_counts([1000, 100], [0.5, 0.5], [None, None], None) == [100, 100]  # the smaller source limits
    assert mixture_counts([1000, 1000], [3, 1], [None, None], 400) == [300, 100]
    assert mixture_counts([1000, 50], [0.5, 0.5], [None, None], 200) == [100, 50]  # short by 50
    assert mixture_counts([1000, 1000], [1, 1, ], [None, 10], None) == [10, 10]


def test_mixture_dedups_across_sources_and_keeps_each_rows_source(tmp_path, pool):
    rng = np.random.default_rng(0)
    a = [{"question": sentence(rng), "answer": f"#### {i}"} for i in range(60)]
    b = [{"problem": sentence(rng), "answer": str(i)} for i in range(40)]
    b += [{"problem": a[i]["question"] + "  ", "answer": str(i)} for i in range(10)]  # in both sources
    spec = parse_mixture({"seed": 1, "sources": [
        {"data": write_jsonl(tmp_path / "a.jsonl", a), "preset": "gsm8k", "weight": 0.5},
        {"data": write_jsonl(tmp_path / "b.jsonl", b), "preset": "problem_answer", "weight": 0.5}]})
    result, report = build_mixture(spec, verifier=pool)
    assert [r["available"] for r in report] == [60, 50] and [r["wanted"] for r in report] == [50, 50]
    shared_taken_by_a = sum(1 for i in range(10) if result.table.filter(
        pl.col("source") == "a")["prompt"].list.first().struct.field("content").is_in([a[i]["question"]]).any())
    assert report[1]["already_taken_from_earlier"] == shared_taken_by_a > 0
    assert report[1]["taken"] == 50 - shared_taken_by_a and report[1]["short_by"] == shared_taken_by_a
    contents = result.table["prompt"].list.first().struct.field("content").str.strip_chars()
    assert contents.n_unique() == result.table.height == 100 - shared_taken_by_a  # no problem twice
    assert result.table["source"].value_counts().sort("source")["count"].to_list() == [50, 50 - shared_taken_by_a]
    again, _ = build_mixture(spec, verifier=pool)
    assert again.table["id"].to_list() == result.table["id"].to_list()  # seeded


def test_overlap_with_an_earlier_small_share_costs_only_what_it_took(tmp_path, pool):
    shared = [{"problem": f"problem number {i} about things", "answer": str(i)} for i in range(800)]
    a = shared + [{"problem": f"a-only {i}", "answer": "1"} for i in range(200)]
    b = shared + [{"problem": f"b-only {i}", "answer": "2"} for i in range(200)]
    spec = parse_mixture({"seed": 0, "total": 500, "sources": [
        {"data": write_jsonl(tmp_path / "a.jsonl", a), "preset": "problem_answer", "weight": 0.1},
        {"data": write_jsonl(tmp_path / "b.jsonl", b), "preset": "problem_answer", "weight": 0.9}]})
    result, report = build_mixture(spec, verifier=pool)
    assert result.table.height == 500 and [r["taken"] for r in report] == [50, 450]


def test_a_sources_prior_field_survives_the_mixture(tmp_path, pool):
    """`prior: bigmath` on a source keeps its llama8b_solve_rate in the mixed pool, where the prior
    reads it; a source without the field gives NaN (unprofiled), and a bad spec names the entry."""
    from grpo_data.curriculum.priors import frame_columns, read_prior

    rng = np.random.default_rng(2)
    big = [{"problem": sentence(rng), "answer": str(i), "llama8b_solve_rate": i / 10} for i in range(10)]
    plain = [{"problem": sentence(rng), "answer": f"-{i + 1}"} for i in range(5)]
    spec = parse_mixture({"sources": [
        {"data": write_jsonl(tmp_path / "big.jsonl", big), "preset": "problem_answer", "prior": "bigmath"},
        {"data": write_jsonl(tmp_path / "plain.jsonl", plain), "preset": "problem_answer"}]})
    result, _ = build_mixture(spec, verifier=pool)
    prior = read_prior("bigmath", frame_columns(result.table), weight=4)
    rate = dict(zip(result.table["answer"].to_list(), prior.rate.tolist()))
    assert result.table.height == 15
    assert [rate[str(i)] for i in range(10)] == pytest.approx([i / 10 for i in range(10)])
    assert np.isnan(prior.rate[(result.table["source"] == "plain").to_numpy()]).all()
    assert np.isfinite(prior.rate[(result.table["source"] == "big").to_numpy()]).all()
    unkept = parse_mixture({"sources": [{"data": str(tmp_path / "big.jsonl"), "preset": "problem_answer"}]})
    with pytest.raises(Exception, match="llama8b_solve_rate"):  # without `prior:` the field is not kept
        read_prior("bigmath", frame_columns(build_mixture(unkept, verifier=pool)[0].table))
    with pytest.raises(DataError, match=r"sources\[0\]: prior: prior 'rate:x'.*FIELD\[:SCALE"):
        parse_mixture({"sources": [{"data": "a", "preset": "gsm8k", "prior": "rate:x"}]})


def test_mixture_spec_errors_name_the_entry():
    with pytest.raises(DataError, match=r"sources\[1\]: unknown key\(s\) \['wieght'\]"):
        parse_mixture({"sources": [{"data": "a", "preset": "gsm8k"}, {"data": "b", "preset": "gsm8k", "wieght": 1}]})
    with pytest.raises(DataError, match=r"sources\[0\]: cap must be an integer >= 0, got 1.7"):
        parse_mixture({"sources": [{"data": "a", "preset": "gsm8k", "cap": 1.7}]})
    with pytest.raises(DataError, match="total must be an integer > 0, got -3"):
        parse_mixture({"total": -3, "sources": [{"data": "a", "preset": "gsm8k", "weight": 1}]})
    with pytest.raises(DataError, match="every source a weight, or none"):
        parse_mixture({"sources": [{"data": "a", "preset": "gsm8k", "weight": 1}, {"data": "b", "preset": "gsm8k"}]})


# ---------------------------------------------------------------- decontamination


def test_ngram_hashes_equal_a_slow_loop_and_stay_inside_rows():
    rng = np.random.default_rng(3)
    lengths = np.array([5, 0, 2, 9, 3])
    flat = rng.integers(0, 2**63, size=lengths.sum(), dtype=np.uint64)
    h, row = ngram_hashes(flat, lengths, 3)
    expected, start = [], 0
    for r, n in enumerate(lengths):
        for i in range(n - 2):
            w = [int(x) for x in flat[start + i : start + i + 3]]
            expected.append(((w[0] * 1_000_003**2 + w[1] * 1_000_003 + w[2]) % 2**64, r))
        start += n
    assert list(zip(h.tolist(), row.tolist(), strict=True)) == expected


def test_planted_overlaps_are_found_and_near_misses_kept():
    rng = np.random.default_rng(1)
    evals = [sentence(rng) for _ in range(30)] + ["Is 9+6 even?"]
    pool = [sentence(rng) for _ in range(500)]
    pool[10] = evals[0]                                             # verbatim
    pool[20] = "Answer this. " + evals[1].upper().replace(" ", "  ") + "!"   # case, spacing, a prefix
    words = evals[2].split()
    pool[30] = " ".join(words[:12] + ["zz"] + words[13:25])          # longest shared run: 12 words
    pool[40] = "is 9 + 6 even"                                       # short: exact text after normalization
    pool[50] = "Is 9-6 even?"                                        # an operator differs: not the same problem
    result = decontaminate(table_of(pool), evals_of(evals))
    removed = dict(zip(result.removed["id"].to_list(), result.removed["eval_id"].to_list(), strict=True))
    assert removed == {"p10": "e0", "p20": "e1", "p40": "e30"}
    assert result.kept.height == 497 and result.summary()["removed_exact"] == 2  # p10 and p40
    strict = decontaminate(table_of(pool), evals_of(evals), DecontamConfig(ngram=8, min_shared=5))
    assert set(strict.removed["id"].to_list()) == {"p10", "p20", "p30", "p40"}  # 8-grams inside the 12-run: 5
    # 30 words share 18 13-grams: below a threshold of 19 only the whole-text matches remain
    assert decontaminate(table_of(pool), evals_of(evals), DecontamConfig(min_shared=19)).removed["id"].to_list() == [
        "p10", "p40"]


def test_match_text_keeps_operators_and_drops_punctuation_and_latex_markup():
    texts = pl.Series(["What is 9+6?", "Hello, World!! x^2 = 4.", "ＡＢ ３", "Find $\\dfrac{1}{2}$.",
                       "Find \\(\\frac{1}{2}\\)", "\\left( x \\right)\\,"]).to_frame("t")
    assert texts.select(match_text_expr(pl.col("t")))["t"].to_list() == [
        "what is 9 + 6", "hello world x ^ 2 = 4", "ab 3", "find frac 1 2", "find frac 1 2", "( x )"]


TEMPLATE = " Let's think step by step and output the final answer within \\boxed{}."


def test_a_shared_prompt_template_is_not_contamination():
    rng = np.random.default_rng(4)
    evals = [sentence(rng, 20) + TEMPLATE for _ in range(40)]
    pool = [sentence(rng, 20) + TEMPLATE for _ in range(300)]
    pool[5] = evals[7]
    result = decontaminate(table_of(pool), evals_of(evals))
    assert result.removed["id"].to_list() == ["p5"]
    assert result.summary()["boilerplate_ignored"]["ngrams_common_in_eval"] == 1  # the 13-word template
    # the pool side alone also finds it: one evaluation row carrying the template, a pool full of it
    one = decontaminate(table_of(pool), evals_of([evals[7], sentence(rng, 20)]))
    assert one.removed["id"].to_list() == ["p5"] and one.summary()["boilerplate_ignored"]["ngrams_common_in_pool"] >= 1


def test_latex_variants_and_short_evaluation_rows_are_found():
    rng = np.random.default_rng(5)
    long_eval = "Let " + sentence(rng, 14) + " and compute $\\dfrac{3}{4} + x^2$ for every " + sentence(rng, 10)
    short_eval = "Compute $\\dbinom{16}{5} + 2$ exactly."  # 7 words: shorter than a 13-gram
    tiny_eval = "Find $x$."  # 2 words: only the exact test
    pool = [sentence(rng) for _ in range(200)]
    pool[1] = "Solve this. " + long_eval.replace("$\\dfrac{3}{4} + x^2$", "\\(\\frac{3}{4}+x^{2}\\)")
    pool[2] = "Problem: compute \\(\\binom{16}{5}+2\\) exactly. Show your work."
    pool[3] = "Find x"
    pool[4] = "Compute binom 16 5 + 3 exactly"  # one word differs: not contained
    result = decontaminate(table_of(pool), evals_of([long_eval, short_eval, tiny_eval]))
    how = dict(zip(result.removed["id"].to_list(), result.removed["how"].to_list(), strict=True))
    assert how == {"p1": "ngram", "p2": "contained", "p3": "exact"}


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "pipelines.cli", "--log-level", "WARNING", *args],
                          capture_output=True, text=True, timeout=300)


def test_grpo_mix_decontaminate_shards_and_card(tmp_path):
    rng = np.random.default_rng(2)
    evals = [{"problem": sentence(rng), "answer": "1"} for _ in range(20)]
    a = [{"question": sentence(rng), "answer": f"#### {i}"} for i in range(50)]
    a[7]["question"] = evals[4]["problem"]
    b = [{"problem": sentence(rng), "answer": "Yes" if i % 2 else "(B)"} for i in range(30)]
    write_jsonl(tmp_path / "eval.jsonl", evals)
    write_jsonl(tmp_path / "a.jsonl", a)
    write_jsonl(tmp_path / "b.jsonl", b)
    (tmp_path / "mix.yaml").write_text("seed: 0\nsources:\n  - {data: a.jsonl, preset: gsm8k}\n"
                                       "  - {data: b.jsonl, preset: problem_answer, cap: 20}\n")
    proc = run_cli("mix", "--spec", str(tmp_path / "mix.yaml"), "--out", str(tmp_path / "pool.parquet"))
    assert proc.returncode == 0, proc.stderr
    assert "b.jsonl: 20 of 30 taken" in proc.stdout
    proc = run_cli("decontaminate", "--data", str(tmp_path / "pool.parquet"), "--against", str(tmp_path / "eval.jsonl"),
                   "--out", str(tmp_path / "clean.parquet"))
    assert proc.returncode == 2 and "--against-preset" in proc.stderr
    proc = run_cli("decontaminate", "--data", str(tmp_path / "pool.parquet"), "--against", str(tmp_path / "eval.jsonl"),
                   "--against-preset", "problem_answer", "--out", str(tmp_path / "clean.parquet"))
    assert proc.returncode == 0, proc.stderr
    assert "removed 1 (1 by exact text, 0 containing" in proc.stdout
    rejects = [json.loads(line) for line in (tmp_path / "clean.rejects.jsonl").read_text().splitlines()]
    assert len(rejects) == 1 and rejects[0]["reason"] == "contaminated" and rejects[0]["eval_row"] == 4
    assert json.loads(rejects[0]["raw"])["prompt"][0]["content"] == evals[4]["problem"]
    clean = pl.read_parquet(tmp_path / "clean.parquet")
    assert clean.height == 69
    prov = read_provenance(tmp_path / "clean.parquet")
    assert prov["decontamination"]["removed"] == 1 and prov["rejected"] == {"contaminated": 1}
    assert [s["taken"] for s in prov["mixture"]["sources"]] == [50, 20]
    # shards + card carry the mixture and the decontamination counts (a scripted profile stands in)
    profile = clean.select("id").with_columns(
        pl.lit(4).alias("k"), pl.lit(2).alias("n_correct"), pl.lit(0.5).alias("pass_rate"), pl.lit(1.5).alias("post_a"),
        pl.lit(1.5).alias("post_b"), pl.lit(0.5).alias("post_mean"), pl.lit(0.2).alias("ci_low"), pl.lit(0.8).alias("ci_high"),
        pl.lit(3.0).alias("mean_completion_tokens"), pl.lit(0.0).alias("truncation_rate"),
        *[pl.lit(0).alias(f"n_{r}") for r in ("ok", "wrong", "no_answer", "timeout", "error", "unparseable_gold")])
    profile.write_parquet(tmp_path / "profile.parquet")
    proc = run_cli("shards", "--data", str(tmp_path / "clean.parquet"), "--profile", str(tmp_path / "profile.parquet"),
                   "--out", str(tmp_path / "shards"))
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("card", "--shards", str(tmp_path / "shards"), "--name", "mixed", "--out", str(tmp_path / "card.md"))
    assert proc.returncode == 0, proc.stderr
    card = (tmp_path / "card.md").read_text()
    assert "## Mixture" in card and "| 30 | 20 |" in card
    assert "Removed: 1 (1 by exact text)" in card and "| contaminated | 1 |" in card
    # every problem went 2 of 4: one pool prior (no levels), one estimate, all in the middle bucket
    assert "| 4 | 69 |" in card and "Mean samples per problem: 4.00 (276 in all)." in card
    assert "| 2 | [0.30, 0.70) | 69 | 4.0 |" in card and "one for the whole set" in card
    assert "No training band was given to the card" in card  # `grpo card` is not told the band


# ---------------------------------------------------------------- format rate


class FormatEngine:
    """Boxes its (correct) answer for problems whose question starts with "boxed", writes a bare number otherwise."""

    name = "format-test"
    model_path = "format-test"

    def __init__(self):
        from grpo_train.tiny_policy import build_tokenizer

        self.tokenizer = build_tokenizer()

    def generate(self, prompts, n, sampling):
        out = []
        for p in prompts:
            q = self.tokenizer.decode(list(p)).split("user\n", 1)[1]
            gold = q.split()[1]
            text = f"so \\boxed{{{gold}}}" if q.startswith("boxed") else f"the answer is {gold}"
            out.append([Completion(text, (1, 2), "stop") for _ in range(n)])
        return out


def test_format_rate_is_counted_per_problem_and_per_run(tmp_path, pool, caplog):
    from grpo_data.generation.prompting import PromptConfig, SamplingConfig
    from grpo_data.profile_config import ProfileConfig
    from grpo_data.profile_parts import merge_parts
    from grpo_data.profiler import profile_problems
    from grpo_data.tables.profile_table import read_profile

    texts = [f"boxed {i}" for i in range(3)] + [f"bare {i}" for i in range(7)]
    problems = to_table([{"id": f"id{i}", "source": "t", "prompt": user_prompt(t), "answer": t.split()[1], "level": None,
                          "meta": "{}"} for i, t in enumerate(texts)])
    cfg = ProfileConfig(k=4, sampling=SamplingConfig(max_tokens=8),
                        prompt=PromptConfig(instruction_suffix="Put the final answer in \\boxed{}."))
    out = tmp_path / "prof.parquet"
    with caplog.at_level(logging.WARNING, logger="grpo_data.profiler"):
        stats = profile_problems(problems, FormatEngine(), pool, cfg, out, metadata={"config": cfg.to_dict()},
                                 progress=False)
    assert stats["format_rate"] == pytest.approx(0.3)
    assert "only 30% of this run's completions gave the answer in the requested boxed format" in caplog.text
    merge_parts(out)
    table, meta = read_profile(out)
    assert table.sort("id")["n_formatted"].to_list() == [4, 4, 4, 0, 0, 0, 0, 0, 0, 0]
    assert table["n_ok"].sum() == 40  # the bare answers are still judged (and right): formatting is reported apart
    assert meta["format"] == {"requested": "boxed", "rate": pytest.approx(0.3), "problems_below_half": 7}
    plain = ProfileConfig(k=2, sampling=SamplingConfig(max_tokens=8))
    stats = profile_problems(problems, FormatEngine(), pool, plain, tmp_path / "plain.parquet", progress=False)
    assert stats["format_rate"] is None


def test_evaluation_sets_that_read_as_nothing_are_errors(tmp_path):
    from pipelines.stages import decontaminate_file

    rng = np.random.default_rng(6)
    aime = write_jsonl(tmp_path / "aime.jsonl", [{"Problem": sentence(rng), "Answer": 7} for _ in range(5)])
    pool = table_of([sentence(rng) for _ in range(20)])
    pool.write_parquet(tmp_path / "pool.parquet")
    with pytest.raises(DataError, match="aime.jsonl: no evaluation question could be read with field 'problem' "
                                        "\\(missing_question: 5\\); name the question field"):
        decontaminate_file(tmp_path / "pool.parquet", [aime], tmp_path / "out.parquet", DecontamConfig(),
                           preset="problem_answer")
    summary = decontaminate_file(tmp_path / "pool.parquet", [aime], tmp_path / "out.parquet", DecontamConfig(),
                                 question_field="Problem")
    assert summary["eval_rows"] == 5
    # a canonical table is recognized even when a preset is named for the other sets
    summary = decontaminate_file(tmp_path / "pool.parquet", [str(tmp_path / "pool.parquet")], tmp_path / "o2.parquet",
                                 DecontamConfig(), preset="problem_answer")
    assert summary["eval_rows"] == 20 and summary["removed"] == 20
    with pytest.raises(ValueError, match="another file than its input"):
        decontaminate_file(tmp_path / "pool.parquet", [aime], tmp_path / "pool.parquet", DecontamConfig(),
                           question_field="Problem")


def test_format_detection_reads_the_problems_own_instruction():
    from grpo_data.generation.prompting import PromptConfig, detect_format

    verl_style = [[{"role": "user", "content": "1+1? Let's think step by step and output the final answer within "
                                               "\\boxed{}."}]] * 3
    plain = [[{"role": "user", "content": "1+1?"}]] * 3
    assert detect_format(PromptConfig(), verl_style) == "boxed"
    assert detect_format(PromptConfig(), plain) is None
    assert detect_format(PromptConfig(instruction_suffix="Put it in \\boxed{}."), plain) == "boxed"
    assert detect_format(PromptConfig(), verl_style, "none") is None
    with pytest.raises(ValueError, match="answer format must be one of auto, boxed, none"):
        detect_format(PromptConfig(), plain, "latex")


def test_repeated_evaluation_rows_and_near_copies_in_the_pool_stay_contamination():
    rng = np.random.default_rng(7)
    problems = [sentence(rng, 25) for _ in range(30)]
    evals = [p + TEMPLATE for p in problems for _ in range(32)]  # DAPO's AIME copy: each problem 32 times
    pool = [sentence(rng, 25) + TEMPLATE for _ in range(300)]
    pool[0], pool[1] = problems[3], "Problem: " + problems[4]
    for i, prefix in enumerate(["A.", "B.", "Solve:", "Now", "Next:"]):  # five near-copies of one problem
        pool[10 + i] = f"{prefix} {problems[5]} Show work."
    result = decontaminate(table_of(pool), evals_of(evals))
    assert set(result.removed["id"].to_list()) == {"p0", "p1", "p10", "p11", "p12", "p13", "p14"}


def test_a_short_problem_inside_a_template_is_matched_by_its_own_words():
    rng = np.random.default_rng(8)
    evals = ["Compute $\\dbinom{31}{28}$ for us." + TEMPLATE] + [sentence(rng, 20) + TEMPLATE for _ in range(40)]
    pool = [sentence(rng, 20) for _ in range(100)] + ["Compute \\(\\binom{31}{28}\\) for us. Answer in a box."]
    result = decontaminate(table_of(pool), evals_of(evals))
    assert result.removed["id"].to_list() == ["p100"] and result.removed["how"].to_list() == ["contained"]
