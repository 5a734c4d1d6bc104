"""Exact resume on the HF engine (#34 item 5), beside the vLLM real-kill test in test_profiler.py:
`HFEngine.reseed` restarts the generator each batch's torch seed is drawn from, and a batch is cut
from one call's prompts alone, so a chunk resumed from its first round draws the tokens an
uninterrupted run draws for it. Holds on one machine and thread count (the batched CPU kernels are
then deterministic); a chunk's batch padding is the same in both runs because chunks are cut from
the full id list (`chunk_plan`)."""

import pytest
from test_priors import BoxedVerifier

from grpo_data.curriculum.stats import StoppingRule
from grpo_data.generation.engines import make_engine
from grpo_data.generation.rollouts import SamplingConfig
from grpo_data.generation.seeding import SEEDING, seeding_scheme
from grpo_data.profile_config import ProfileConfig
from grpo_data.profile_parts import merge_parts
from grpo_data.profiler import profile_problems


class Recording:
    """An engine that records, per question, every token sequence it returned (in order)."""

    def __init__(self, engine):
        self.engine, self.tokens = engine, {}

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def generate(self, prompts, n, sampling):
        out = self.engine.generate(prompts, n, sampling)
        for p, group in zip(prompts, out, strict=True):
            self.tokens.setdefault(tuple(p), []).extend(c.token_ids for c in group)
        return out


class Stop(Exception):
    pass


@pytest.mark.slow
@pytest.mark.parametrize("rule", [None, StoppingRule(confidence=0.9, screen_k=2, step_k=2, max_k=6)],
                         ids=["fixed", "adaptive"])
def test_an_hf_profile_resumed_after_a_crash_equals_an_uninterrupted_one(tmp_path, world_tables, untrained_policy, rule):
    """An HF profile stopped after its second chunk and resumed with a fresh engine (a new process's
    state: model loaded again, generator at its start seed) writes the rows an uninterrupted run
    writes, and the resumed chunks drew the very tokens the uninterrupted run drew for them. The
    untrained policy's sampled tokens differ from seed to seed, so equal tokens are equal samples."""
    problems = world_tables["train"].sort("id").head(40)
    cfg = ProfileConfig(k=3, rule=rule, chunk_size=8, seed=4, prior_groups="none",
                        sampling=SamplingConfig(temperature=1.0, max_tokens=8))

    def engine():
        return Recording(make_engine("hf", str(untrained_policy), seed=0, threads=1))

    def stop_after_two(chunk_no):
        if chunk_no == 1:
            raise Stop

    whole_engine = engine()
    assert seeding_scheme(whole_engine) == SEEDING
    profile_problems(problems, whole_engine, BoxedVerifier(), cfg, tmp_path / "whole.parquet", progress=False)
    whole = merge_parts(tmp_path / "whole.parquet").sort("id")

    out = tmp_path / "resumed.parquet"
    with pytest.raises(Stop):
        profile_problems(problems, engine(), BoxedVerifier(), cfg, out, progress=False, on_chunk=stop_after_two)
    again = engine()
    stats = profile_problems(problems, again, BoxedVerifier(), cfg, out, progress=False)
    assert stats["skipped"] == 16 and stats["problems"] == 24
    resumed = merge_parts(out).sort("id")
    assert resumed.equals(whole)
    assert len(again.tokens) == 24 and all(whole_engine.tokens[p] == t for p, t in again.tokens.items())
    samples = [t for ts in whole_engine.tokens.values() for t in ts]
    assert len(set(samples)) > len(samples) // 2  # samples differ from one another: equal tokens mean equal draws
    if rule is None:
        assert resumed["k"].to_list() == [3] * 40
