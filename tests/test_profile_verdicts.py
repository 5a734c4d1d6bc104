"""The profile's verifier counts: no_answer apart from wrong in its metadata, and the format warning's
examples of final sentences the verifier could not read."""

import logging
from types import SimpleNamespace

import polars as pl

from grpo_data.profile_chunks import UNREAD_EXAMPLES, _Tally, keep_unread
from grpo_data.profile_parts import verdict_totals, warn_format
from grpo_data.verify.verdict import Verdict


def test_verdict_totals_count_no_answer_apart_from_wrong():
    table = pl.DataFrame({"n_ok": [3, 0], "n_wrong": [1, 2], "n_no_answer": [4, 6], "n_timeout": [0, 1]})
    assert verdict_totals(table) == {"ok": 3, "wrong": 3, "no_answer": 10, "timeout": 1}


def test_tally_keeps_a_few_unread_sentences():
    tally = _Tally()
    comps = [SimpleNamespace(text="t", token_ids=[1, 2], truncated=False)] * 5
    verdicts = [Verdict(False, "no_answer", f"sentence {i}") for i in range(4)] + [Verdict(False, "wrong", "3")]
    tally.add(comps, verdicts)
    assert tally.unread == ["sentence 0", "sentence 1", "sentence 2"]
    assert tally.reasons == {"no_answer": 4, "wrong": 1}


def test_a_run_keeps_only_the_few_unread_sentences_it_shows():
    unread: list[str] = []
    for chunk in range(1000):  # a long run: what is kept does not grow with the problems
        keep_unread(unread, ["Thus it can stay inside.", f"problem {chunk}", f"problem {chunk} again"])
    assert unread == ["Thus it can stay inside.", "problem 0", "problem 0 again"][:UNREAD_EXAMPLES]


def test_format_warning_shows_unread_final_sentences(caplog):
    with caplog.at_level(logging.WARNING, logger="grpo_data.profiler"):
        warn_format(0.1, "boxed", "this run's", ["Thus it can stay inside.", "Thus it can stay inside.", "It has no cycle."])
    assert "only 10%" in caplog.text
    assert caplog.text.count("unread final sentence: Thus it can stay inside.") == 1
    assert "unread final sentence: It has no cycle." in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="grpo_data.profiler"):
        warn_format(0.9, "boxed", "this run's", ["x"])
    assert caplog.text == ""


PROSE_ENDINGS = {"4": "Thus it can stay inside.", "5": "It has no cycle.", "6": "So the walk never ends.",
                 "7": "Hence the claim."}


class ProseEngine:
    """Test double: per problem, boxes the right answer ("right"), boxes a wrong one ("wrong") or ends
    in a sentence with no answer in it ("prose"); the problem's question names which."""

    name = "prose-test"
    model_path = "prose-test"

    def __init__(self):
        from grpo_train.tiny_policy import build_tokenizer

        self.tokenizer = build_tokenizer()

    def generate(self, prompts, n, sampling):
        from grpo_data.generation.engines import Completion

        out = []
        for p in prompts:
            kind, gold = self.tokenizer.decode(list(p)).split("user\n", 1)[1].split()[:2]
            text = {"right": f"so \\boxed{{{gold}}}", "wrong": f"so \\boxed{{{int(gold) + 1}}}",
                    "prose": PROSE_ENDINGS.get(gold, "")}[kind]
            out.append([Completion(text, (1, 2), "stop") for _ in range(n)])
        return out


def test_a_profile_counts_no_answer_apart_and_shows_what_it_could_not_read(tmp_path, pool, caplog):
    """End to end through the profiler and the killable verifier workers: the merged profile's metadata
    counts no_answer apart from wrong, and the run's format warning quotes the unread final sentences."""
    from grpo_data.generation.prompting import PromptConfig, SamplingConfig
    from grpo_data.profile_config import ProfileConfig
    from grpo_data.profile_parts import merge_parts
    from grpo_data.profiler import profile_problems
    from grpo_data.tables.problems import to_table, user_prompt
    from grpo_data.tables.profile_table import read_profile

    texts = ["right 1", "right 2", "wrong 3", "prose 4", "prose 5", "prose 6", "prose 7"]
    problems = to_table([{"id": f"id{i}", "source": "t", "prompt": user_prompt(t), "answer": t.split()[1], "level": None,
                          "meta": "{}"} for i, t in enumerate(texts)])
    cfg = ProfileConfig(k=4, sampling=SamplingConfig(max_tokens=8),
                        prompt=PromptConfig(instruction_suffix="Put the final answer in \\boxed{}."))
    out = tmp_path / "prof.parquet"
    with caplog.at_level(logging.WARNING, logger="grpo_data.profiler"):
        profile_problems(problems, ProseEngine(), pool, cfg, out, metadata={"config": cfg.to_dict()}, progress=False)
    warning = caplog.text
    merge_parts(out)
    table, meta = read_profile(out)
    assert {r: n for r, n in meta["verdicts"].items() if n} == {"ok": 8, "wrong": 4, "no_answer": 16}
    assert table.sort("id")["n_no_answer"].to_list() == [0, 0, 0, 4, 4, 4, 4]
    assert "only 43% of this run's completions gave the answer in the requested boxed format" in warning
    shown = [line.split("unread final sentence: ", 1)[1] for line in warning.splitlines() if "unread final sentence" in line]
    assert shown == [PROSE_ENDINGS[g] for g in ("4", "5", "6")]  # UNREAD_EXAMPLES of the four
