"""A DART-Math export counts the samples its profile drew, and nothing else (#34): started from a
prior (a column or an earlier profile), its n_samples_list / n_corrects_list / tot_n_* / pass_rate
hold no pseudo-count of that prior, in `grpo export` and in the card's export beside a shard set that
carries the prior; resumed after a crash, no round is listed twice and the lost chunk's samples are
not listed at all. The scripted engine tallies what it really drew, per problem, to compare with."""

import numpy as np
import polars as pl
import pytest
from test_priors import BoxedVerifier, canonical_with_prior
from test_priors_wiring import write_profile
from test_profiler import ReseedableEngine

from grpo_data.curriculum.prior_profile import read_profile_prior
from grpo_data.curriculum.priors import frame_columns, read_prior
from grpo_data.curriculum.stats import StoppingRule
from grpo_data.profile_config import ProfileConfig
from grpo_data.profile_parts import merge_parts
from grpo_data.profiler import profile_problems
from grpo_data.tables.exports import export_profile, read_export
from grpo_data.tables.profile_table import read_profile

N = 48
RULE = StoppingRule(confidence=0.9, screen_k=2, step_k=2, max_k=12, prior_screen_k=2)  # rounds alike


class Crash(Exception):
    pass


class TallyEngine(ReseedableEngine):
    """Tallies every completion it returns per question, and which were right (`\\boxed{gold}`);
    with `crash_at`, raises on that generate call (0-based), as a kill in the middle of a chunk."""

    def __init__(self, rates, seed=0, crash_at=None):
        super().__init__(rates, seed)
        self.drawn, self.right, self.crash_at = {}, {}, crash_at

    def generate(self, prompts, n, sampling):
        if self.crash_at is not None and self.calls == self.crash_at:
            raise Crash
        out = super().generate(prompts, n, sampling)
        for p, group in zip(prompts, out, strict=True):
            q = self.question(p)
            gold = self.rates[q][0]
            self.drawn[q] = self.drawn.get(q, 0) + len(group)
            self.right[q] = self.right.get(q, 0) + sum(c.text == f"\\boxed{{{gold}}}" for c in group)
        return out


def problems_and_rates(n=N):
    """Canonical rows p0..p{n-1} (question q{i}, gold i) carrying Big-Math's solve rate in meta, and the
    scripted engine's true rates: another model 1 logit stronger wrote the column."""
    true = np.random.default_rng(3).choice([0.0, 0.1, 0.5, 0.9, 1.0], n)
    clipped = np.clip(true, 0.01, 0.99)
    stronger = 1 / (1 + np.exp(-(np.log(clipped / (1 - clipped)) + 1.0)))
    problems = canonical_with_prior([None if i % 8 == 0 else float(r) for i, r in enumerate(stronger)])
    return problems, {f"q{i}": (i, float(r)) for i, r in enumerate(true)}


def as_drawn(engine: TallyEngine, ids) -> tuple[list[int], list[int]]:
    """The engine's samples and right answers per problem id p{i}, in `ids` order."""
    qs = [f"q{int(i[1:])}" for i in ids]
    return [engine.drawn.get(q, 0) for q in qs], [engine.right.get(q, 0) for q in qs]


def assert_own_counts(dart: pl.DataFrame, engine: TallyEngine, rule: StoppingRule) -> None:
    """Each row's counts are the engine's draws for that problem: no pseudo-sample of a prior in the
    totals, the lists or the rate, and every round one the engine served (screen, then steps)."""
    drawn, right = as_drawn(engine, dart["query_id"].to_list())
    assert dart["tot_n_samples"].to_list() == drawn and dart["tot_n_corrects"].to_list() == right
    assert [sum(x) for x in dart["n_samples_list"].to_list()] == drawn
    assert [sum(x) for x in dart["n_corrects_list"].to_list()] == right
    assert all(r[0] == rule.screen_k and all(x == rule.step_k for x in r[1:]) for r in dart["n_samples_list"].to_list())
    assert dart["tot_n_samples"].dtype.is_integer() and dart["n_samples_list"].dtype == pl.List(pl.Int64)
    np.testing.assert_allclose(dart["pass_rate"].to_numpy(), np.array(right) / np.array(drawn))


@pytest.mark.parametrize("source", ["column", "profile"])
def test_a_dart_export_of_a_profile_started_from_a_prior_holds_its_own_samples_only(tmp_path, source):
    """An adaptive profile started from a column prior (bigmath) or an earlier profile (16 samples a
    problem, counted as 4 pseudo-samples): the prior changed where it stopped (other samples than
    without it), and its DART export lists exactly the samples the engine drew, problem by problem."""
    problems, rates = problems_and_rates()
    ids = problems["id"].to_list()
    if source == "column":
        prior = read_prior("bigmath", frame_columns(problems), weight=4, ids=ids)
    else:
        base = tmp_path / "base.parquet"
        counts = {i: (int(round(16 * rates[f"q{int(i[1:])}"][1])), 16) for i in ids}
        write_profile(base, counts, {"model": "base", "weights_hash": "b0"})
        prior = read_profile_prior(base, ids, weight=4)
    cfg = ProfileConfig(rule=RULE, chunk_size=16, prior_groups="none", seed=2)
    runs = {}
    for name, given in (("with", prior), ("without", None)):
        engine, out = TallyEngine(rates), tmp_path / f"{name}.parquet"
        stats = profile_problems(problems, engine, BoxedVerifier(), cfg, out, progress=False, prior=given,
                                 metadata={"model": "scripted", "weights_hash": "s0", "config": cfg.to_dict()})
        merge_parts(out)
        runs[name] = (engine, out, stats)
    engine, out, stats = runs["with"]
    assert stats["samples"] != runs["without"][2]["samples"]  # the prior did change where the profile stopped
    table, meta = read_profile(out)
    assert meta["prior"]["weight"] == 4.0 and meta["samples"] == stats["samples"] == sum(engine.drawn.values())
    record = export_profile(table, meta, tmp_path / "with.dart.parquet", "dart", problems=problems)
    dart = pl.read_parquet(tmp_path / "with.dart.parquet")
    assert_own_counts(dart, engine, RULE)
    assert dart["tot_n_samples"].sum() == stats["samples"]
    assert record["card"]["prior"]["spec"] == prior.source.name  # the record names the prior; the counts hold none of it
    back, _ = read_export(tmp_path / "with.dart.parquet")
    assert back.select("id", "k", "n_correct").equals(table.select("id", "k", "n_correct"))


def test_the_cards_export_beside_a_shard_set_with_a_prior_lists_the_profiles_own_counts(tmp_path):
    """The shard set weighs the prior's moved pseudo-counts in its estimates (p_est); the card copies
    those estimates into its DART export, never the pseudo-counts into the sample columns."""
    from grpo_data.tables.cards import write_card
    from grpo_data.tables.shards import read_shards, write_shards

    problems, rates = problems_and_rates()
    prior = read_prior("bigmath", frame_columns(problems), weight=4, ids=problems["id"].to_list())
    cfg = ProfileConfig(rule=RULE, chunk_size=16, prior_groups="none", seed=2)
    engine, out = TallyEngine(rates), tmp_path / "p.parquet"
    profile_problems(problems, engine, BoxedVerifier(), cfg, out, progress=False, prior=prior,
                     metadata={"model": "scripted", "weights_hash": "s0", "config": cfg.to_dict()})
    table = merge_parts(out)
    _, meta = read_profile(out)
    manifest = write_shards(problems, table, tmp_path / "shards", [0, 0.1, 0.3, 0.7, 0.9, 1], "native",
                            profile_meta=meta, prior=prior)
    assert manifest["prior"]["spec"] == "bigmath" and manifest["prior"]["alone"] == 0
    card = write_card(tmp_path / "shards", "t", tmp_path / "card" / "t.md", profile=out)
    dart = pl.read_parquet(card.with_suffix(".dart.parquet")).sort("query_id")
    assert_own_counts(dart, engine, RULE)
    shards = read_shards(tmp_path / "shards").sort("id")
    assert dart["p_est"].to_list() == shards["p_est"].to_list()  # the set's estimates, prior included
    # the estimates did take the prior: fitted on own counts alone they would differ
    from grpo_data.curriculum.estimates import with_estimates

    alone = with_estimates(table.sort("id").select("n_correct", "k", pl.lit(None, pl.Int64).alias("level")), False)
    assert not np.allclose(alone["p_est"].to_numpy(), dart["p_est"].to_numpy())


@pytest.mark.parametrize("with_prior", [True, False], ids=["prior", "no-prior"])
def test_a_profile_resumed_after_a_crash_lists_each_round_once(tmp_path, with_prior):
    """A crash in the middle of the third chunk (its screen drawn and judged, a later round not): the
    chunk's samples so far are lost, and the rerun draws the chunk again from its first round. The
    resumed export equals the uninterrupted one row for row (lists, totals, rates) and counts the
    samples of the finished chunks and the rerun only, never the crashed chunk's."""
    problems, rates = problems_and_rates()
    prior = read_prior("bigmath", frame_columns(problems), weight=4) if with_prior else None
    cfg = ProfileConfig(rule=RULE, chunk_size=16, prior_groups="none", seed=5)
    meta = {"model": "scripted", "weights_hash": "s0", "config": cfg.to_dict()}

    def export(out, name):
        table, info = read_profile(out)
        export_profile(table, info, tmp_path / f"{name}.dart.parquet", "dart", problems=problems)
        return pl.read_parquet(tmp_path / f"{name}.dart.parquet")

    whole_engine = TallyEngine(rates)
    profile_problems(problems, whole_engine, BoxedVerifier(), cfg, tmp_path / "whole.parquet", progress=False,
                     prior=prior, metadata=meta)
    merge_parts(tmp_path / "whole.parquet")
    whole = export(tmp_path / "whole.parquet", "whole")

    # generate calls per chunk: the screen and each step round; find the third chunk's second call
    calls, chunk_calls = [], []
    probe = TallyEngine(rates)
    profile_problems(problems, probe, BoxedVerifier(), cfg, tmp_path / "probe.parquet", progress=False, prior=prior,
                     metadata=meta, on_chunk=lambda c: chunk_calls.append(probe.calls))
    calls = [0, *chunk_calls]
    crash_at = calls[2] + 1
    assert calls[3] - calls[2] >= 2, "the third chunk must take a round after its screen"
    first = TallyEngine(rates, crash_at=crash_at)
    out = tmp_path / "resumed.parquet"
    with pytest.raises(Crash):
        profile_problems(problems, first, BoxedVerifier(), cfg, out, progress=False, prior=prior, metadata=meta)
    done = merge_parts_ids(out)
    assert len(done) == 32  # two chunks written; the third lost with the screen it drew
    lost = {q: first.drawn[q] for q in first.drawn if f"p{q[1:]}" not in done}
    assert len(lost) == 16 and all(v == RULE.screen_k for v in lost.values())
    second = TallyEngine(rates)
    profile_problems(problems, second, BoxedVerifier(), cfg, out, progress=False, prior=prior, metadata=meta)
    merge_parts(out, expected_ids=set(problems["id"].to_list()))
    resumed = export(out, "resumed")
    assert resumed.equals(whole)
    drawn = {q: first.drawn.get(q, 0) + second.drawn.get(q, 0) - lost.get(q, 0) for q in rates}
    assert resumed["tot_n_samples"].sum() == sum(drawn.values())
    assert resumed["tot_n_samples"].to_list() == [drawn[f"q{int(i[1:])}"] for i in resumed["query_id"]]
    assert not set(second.drawn) & {f"q{int(i[1:])}" for i in done}  # finished chunks are not drawn again


def merge_parts_ids(out) -> set[str]:
    """Ids in the parts a run left (without merging: the run did not finish)."""
    from grpo_data.profile_parts import finished_parts

    return set(finished_parts(out)["id"].to_list())

