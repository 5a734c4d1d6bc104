"""The rollout batcher without engines: dynamic resampling, under-filled batches, group sizing
(allocation, sequential, SPEED screening, the variance schedule), lock step across ranks, and the
batch trace."""

import numpy as np
import pytest

from grpo_train.groups import Group
from grpo_train.metrics import coverage
from grpo_train.rollout import RolloutBatcher
from grpo_train.sequences import build_tensors


class FixedEngine:
    """Test double: group i answers correctly `pattern[i]` times out of G."""

    def __init__(self, patterns):
        self.patterns = patterns
        self.calls = 0

    def generate(self, prompts, n, sampling):
        from grpo_data.generation.engines import Completion

        out = []
        for _ in prompts:
            k = self.patterns[self.calls % len(self.patterns)]
            self.calls += 1
            out.append([Completion("\\boxed{1}" if j < k else "\\boxed{2}", (5, 6), "stop") for j in range(n)])
        return out


class RecordingScheduler:
    def __init__(self, n):
        self.n, self.updates, self.next = n, [], 0

    def sample(self, b):
        idx = (np.arange(b) + self.next) % self.n
        self.next += b
        return idx

    def update(self, idx, c, g):
        self.updates.append((idx.copy(), np.asarray(c).copy()))


def make_batcher(patterns, dynamic=True, batch_groups=4, max_rounds=3):
    from grpo_data.generation.prompting import PromptConfig, SamplingConfig
    from grpo_data.generation.rollouts import RolloutSampler
    from grpo_train.tiny_policy import build_tokenizer

    tok = build_tokenizer()
    n = 50
    prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(n)]
    sched = RecordingScheduler(n)
    from grpo_data.verify.verdict import Verdict

    def judge(golds, preds):
        return [Verdict(True, "ok") if x == "\\boxed{1}" else Verdict(False, "wrong") for x in preds]

    pool_stub = type("V", (), {"verify": staticmethod(judge)})
    sampler = RolloutSampler(FixedEngine(patterns), pool_stub, tok, PromptConfig(), SamplingConfig())
    return RolloutBatcher(sampler, sched, prompts, ["1"] * n, 4, batch_groups, max_rounds, dynamic), sched


def test_dynamic_resampling_drops_zero_variance_and_reports_every_group():
    batcher, sched = make_batcher([4, 0, 2, 1, 4, 3])  # of 4: all right, all wrong, mixed...
    batch = batcher.next_batch()
    assert len(batch.groups) == 4 and all(g.informative for g in batch.groups)
    assert batch.generated_groups == sum(len(i) for i, _ in sched.updates)
    reported = np.concatenate([c for _, c in sched.updates])
    assert set(reported.tolist()) >= {0, 4}, "dropped groups go back to the scheduler too"
    assert not batch.underfilled


def cut_off_wrong_answers(engine):
    """Make every wrong answer of a test engine one that hit max_tokens (finish reason `length`)."""
    from grpo_data.generation.engines import Completion

    inner = engine.generate

    def generate(prompts, n, sampling):
        return [[Completion(c.text, c.token_ids, "stop" if c.text == "\\boxed{1}" else "length") for c in g]
                for g in inner(prompts, n, sampling)]

    engine.generate = generate


def test_masked_answers_do_not_make_a_group_informative():
    """overlong=mask: a group whose wrong answers were all cut off trains as all right, so dynamic
    resampling drops it (judged on the answers that train); kept, the same groups teach."""
    from grpo_train.groups import Overlong

    batcher, sched = make_batcher([2], max_rounds=2)  # 2 right of 4 in every group
    cut_off_wrong_answers(batcher.sampler.engine)
    assert len(batcher.next_batch().groups) == 4  # overlong=keep: every group has a right and a wrong answer
    batcher.overlong = Overlong("mask", 16)
    batch = batcher.next_batch()
    assert batch.groups == [] and batch.underfilled and batch.informative_groups == 0 and batch.rounds == 2
    assert all((c == 2).all() for _, c in sched.updates)  # the scheduler still hears the right-answer counts


def test_a_pool_smaller_than_the_ranks_repeats_problems_and_keeps_each_outcome():
    """2 ranks, 1 problem: every rank still generates (data-parallel engines step in lock-step), so
    the round repeats the problem; each rank's outcome is its own, gathered in the round's order
    (keyed by problem id, one overwrote the other), and the scheduler hears both."""
    batcher, sched = make_batcher([4], max_rounds=1)  # this rank's group: 4 right of 4
    sched.n = 1

    def sample(b):
        return np.zeros(min(b, 1), dtype=np.int64)  # the pool holds one problem: at most 1, whatever is asked

    sched.sample = sample
    theirs = [(2, True)]  # rank 1's group of the same problem: 2 right of 4
    batcher.world_size, batcher.batch_groups = 2, 1
    batcher.all_gather = lambda local: [local, theirs] if isinstance(local, list) else [local, 1]
    batch = batcher.next_batch()
    idx, n_correct = sched.updates[0]
    assert idx.tolist() == [0, 0] and n_correct.tolist() == [4, 2]
    # this rank's all-right group is dropped; rank 1's is the batch's one informative group of the 2 wanted
    assert batch.groups == [] and batch.underfilled and batch.generated_rollouts == 4
    # layouts: two groups here (problems a, c), one on rank 1 (b); a fixed round is idx = [a, b, c]
    # (rank r holds idx[r::2]), an allocate round is rank 0's block, then rank 1's: [a, c, b]
    from grpo_train.groups import Group

    mine = [Group(7, [1], [None] * 4, np.ones(4)), Group(3, [1], [None] * 4, np.array([1.0, 0, 0, 0]))]
    batcher.all_gather = lambda local: [local, [(0, False)]]
    assert [a.tolist() for a in batcher._gather_outcomes(mine)] == [[4, 0, 1], [False, False, True]]
    assert [a.tolist() for a in batcher._gather_outcomes(mine, interleaved=False)] == [[4, 1, 0], [False, True, False]]


def test_underfilled_batch_trains_on_what_is_there(caplog):
    batcher, _ = make_batcher([4, 4, 4, 2], max_rounds=2)
    with caplog.at_level("WARNING"):
        batch = batcher.next_batch()
    assert batch.underfilled and 0 < len(batch.groups) < 4 and batch.rounds == 2
    assert "under-filled" in caplog.text
    batcher, _ = make_batcher([4], max_rounds=2)
    empty = batcher.next_batch()
    assert empty.underfilled and empty.groups == []


def test_without_dynamic_resampling_every_group_is_kept():
    batcher, _ = make_batcher([4, 0, 2, 1], dynamic=False)
    batch = batcher.next_batch()
    assert len(batch.groups) == 4 and batch.rounds == 1


def test_coverage_counts_problems_and_levels():
    times = np.array([2, 0, 1, 0, 1])
    levels = np.array([1.0, 1.0, 2.0, np.nan, 3.0])
    out = coverage(times, np.array([0, 2, 0, 4]), levels)
    assert out["distinct_problems_trained"] == 3 and out["pool_coverage"] == pytest.approx(0.6)
    assert out["times_trained_mean"] == pytest.approx(4 / 3)
    assert out["trained_level_mean"] == pytest.approx(7 / 4)
    assert (out["trained_groups_level_1"], out["trained_groups_level_2"], out["trained_groups_level_3"]) == (2, 1, 1)
    assert "trained_level_mean" not in coverage(times, np.array([0]), None)


def test_build_tensors_positions_and_masks():
    from grpo_data.generation.engines import Completion

    g = Group(0, [1, 2, 3], [Completion("a", (7, 8), "stop"), Completion("b", (9,), "stop")], np.array([1.0, 0.0]))
    ids, att, pos, mask, rewards, gids = build_tensors([g], pad_id=0)
    assert ids.tolist() == [[1, 2, 3, 7, 8], [1, 2, 3, 9, 0]]
    assert pos.tolist() == [[3, 4], [3, 0]] and mask.tolist() == [[1, 1], [1, 0]]
    assert rewards.tolist() == [1.0, 0.0] and gids.tolist() == [0, 0]


class ProblemEngine:
    """Answers by problem: problem i's j-th answer overall is right iff plan[i][j % len(plan[i])]."""

    def __init__(self, plans, prompt_of):
        self.plans, self.prompt_of, self.seen, self.calls = plans, prompt_of, {}, 0

    def generate(self, prompts, n, sampling):
        from grpo_data.generation.engines import Completion

        self.calls += 1
        out = []
        for p in prompts:
            i = self.prompt_of[tuple(p)]
            row = []
            for _ in range(n):
                j = self.seen.get(i, 0)
                self.seen[i] = j + 1
                plan = self.plans[i % len(self.plans)]
                row.append(Completion("\\boxed{1}" if plan[j % len(plan)] else "\\boxed{2}", (5, 6), "stop"))
            out.append(row)
        return out


class PosteriorScheduler(RecordingScheduler):
    """Offers problems in order; each is believed sure of pass rate rates[i] (a point posterior)."""

    def __init__(self, rates):
        super().__init__(len(rates))
        self.rates = np.asarray(rates, dtype=float)

    def posterior(self, idx):
        return np.ones((len(idx), 1)), self.rates[np.asarray(idx)][:, None]

    def update(self, idx, c, g):
        self.updates.append((np.asarray(idx).copy(), np.asarray(c).copy(), np.broadcast_to(g, np.shape(idx)).copy()))


def sized_batcher(mode, plans, rates, batch_groups=2, group_size=8, max_rounds=1, **sizing):
    from grpo_data.curriculum.allocation import Sizing
    from grpo_data.generation.prompting import PromptConfig, SamplingConfig
    from grpo_data.generation.rollouts import RolloutSampler
    from grpo_data.verify.verdict import Verdict
    from grpo_train.tiny_policy import build_tokenizer

    n = len(rates)
    prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(n)]
    sched = PosteriorScheduler(rates)

    def judge(golds, preds):
        return [Verdict(x == "\\boxed{1}", "") for x in preds]

    engine = ProblemEngine(plans, {})
    sampler = RolloutSampler(engine, type("V", (), {"verify": staticmethod(judge)}), build_tokenizer(), PromptConfig(),
                             SamplingConfig())
    batcher = RolloutBatcher(sampler, sched, prompts, ["1"] * n, group_size, batch_groups, max_rounds, True,
                             sizing=Sizing(mode, **sizing))
    engine.prompt_of.update({tuple(batcher.prompt_ids(i)): i for i in range(n)})
    return batcher, sched, engine


def test_allocated_groups_are_sized_by_the_posterior_within_the_step_budget():
    # point posteriors: p = 0.5 needs 4 answers for an 0.8 chance of a mix, p = 0.9 needs 16
    rates = [0.5, 0.9] * 4
    plans = [[1, 0], [1] * 9 + [0]]  # even problems alternate; odd ones fail once in 10
    batcher, sched, engine = sized_batcher("allocate", plans, rates, batch_groups=2, group_size=8, target=0.8,
                                           candidates=2.0, objective="target")
    batch = batcher.next_batch()
    idx, n_correct, sizes = sched.updates[0]
    assert engine.calls == 1  # one engine call whatever the sizes (ranks step together)
    # 4 offered (2 per G of the 16-answer budget): both p = 0.5 at 4, then a 16 does not fit in the 8 left
    assert dict(zip(idx.tolist(), sizes.tolist(), strict=True)) == {0: 4, 2: 4}
    assert batch.group_sizes == [4, 4] and batch.generated_rollouts == 8 and batch.informative_rollouts == 8
    assert batch.group_var_sum == pytest.approx(2 * 1 / 3)  # 2 of 4 right: sample variance (ddof 1) 1/3
    assert batch.baseline_var_sum == pytest.approx(2 * 1 / 3 / 4)  # the group mean's: var / 4
    assert batch.underfilled and n_correct.tolist() == [2, 2]
    batcher, sched, _ = sized_batcher("allocate", plans, rates, batch_groups=2, group_size=8, candidates=4.0,
                                      objective="target")
    batch = batcher.next_batch()
    idx, _, sizes = sched.updates[0]
    assert dict(zip(idx.tolist(), sizes.tolist(), strict=True)) == {0: 4, 2: 4, 4: 4, 6: 4}  # 8 offered: 16 spent
    assert not batch.underfilled and all(len(g.completions) == 4 for g in batch.groups)
    with pytest.raises(ValueError, match="scheduler.name=band"):
        RolloutBatcher(batcher.sampler, RecordingScheduler(8), batcher._prompts, ["1"] * 8, 8, 2, 1, True,
                       sizing=batcher.sizing)


def test_allocated_large_groups_reach_the_rare_failure():
    rates = [0.9] * 4
    plans = [[1] * 9 + [0]]  # one failure in 10 answers
    batcher, sched, _ = sized_batcher("allocate", plans, rates, batch_groups=2, group_size=16, target=0.8, n_max=32,
                                      objective="target")
    batch = batcher.next_batch()
    idx, n_correct, sizes = sched.updates[0]
    assert sizes.tolist() == [16, 16] and n_correct.tolist() == [15, 15]  # 16 answers reach the 10th, a failure
    assert all(g.informative for g in batch.groups) and batch.informative_rollouts == 32


def test_marginal_allocation_spends_the_round_on_every_offered_problem():
    rates = [0.5, 0.9] * 4
    batcher, sched, engine = sized_batcher("allocate", [[1, 0], [1] * 9 + [0]], rates, batch_groups=2, group_size=8)
    batch = batcher.next_batch()
    idx, _, sizes = sched.updates[0]
    got = dict(zip(idx.tolist(), sizes.tolist(), strict=True))
    # 4 offered, 16 answers: each p = 0.5 gets 4 (its gains then fall below p = 0.9's), each 0.9 gets 4
    assert got == {0: 4, 1: 4, 2: 4, 3: 4} and sizes.sum() == 16 and engine.calls == 1
    assert batch.generated_rollouts == 16


def test_sequential_sampling_stops_each_problem_at_its_first_mix():
    rates = [0.5] * 12
    # problem 0: right, wrong -> mixed after one round of 2; problem 1: always right -> stops at the cap;
    # problem 2: right x3 then wrong -> mixed after two rounds
    plans = [[1, 0], [1], [1, 1, 1, 0]]
    batcher, sched, _ = sized_batcher("sequential", plans, rates, batch_groups=2, group_size=8, round_size=2, n_max=6)
    batch = batcher.next_batch()
    idx, n_correct, sizes = sched.updates[0]
    got = dict(zip(idx.tolist(), zip(sizes.tolist(), n_correct.tolist(), strict=True), strict=True))
    assert got[0] == (2, 1) and got[1] == (6, 6) and got[2] == (4, 3)
    assert sizes.sum() <= 16 and batch.generated_rollouts == sizes.sum()
    assert sorted(g.problem for g in batch.groups) == sorted(i for i, (n, c) in got.items() if 0 < c < n)


def test_sequential_sampling_stops_on_the_answers_that_train():
    """Every wrong answer is cut off at max_tokens. Kept (overlong=keep), a problem stops at its first
    right-and-wrong pair; masked (overlong=mask), its trained answers are all right, so it samples on
    to the cap and is then dropped: the stopping rule and the dropping rule judge the same answers."""
    from grpo_train.groups import Overlong

    for mode, first, kept in (("keep", (2, 1), 4), ("mask", (4, 2), 0)):
        batcher, sched, engine = sized_batcher("sequential", [[1, 0]], [0.5] * 8, batch_groups=1, group_size=8,
                                               round_size=2, n_max=4)
        cut_off_wrong_answers(engine)
        batcher.overlong = Overlong(mode, 16)
        batch = batcher.next_batch()
        idx, n_correct, sizes = sched.updates[0]
        assert (sizes[0], n_correct[0]) == first and sizes.sum() == 8, mode
        assert len(batch.groups) == kept and batch.informative_rollouts == 2 * kept, mode


class ThreadGather:
    """all_gather for ranks run as threads of one process (a test double for the learner's)."""

    def __init__(self, world):
        import threading

        self.barrier, self.slots = threading.Barrier(world, timeout=60), [None] * world

    def of(self, rank):
        def gather(obj):
            self.slots[rank] = obj
            self.barrier.wait()
            out = list(self.slots)
            self.barrier.wait()
            return out

        return gather


def test_sequential_sampling_on_two_ranks_keeps_them_in_lock_step():
    """2 ranks (threads): even problems mix at their first pair, odd ones never. The 8 starting
    problems are dealt 0, 2, 4, 6 / 1, 3, 5, 7, so rank 0 has nothing to continue: each round it starts
    a fresh problem while rank 1 continues, both make one engine call per round (data-parallel vLLM
    generates together), the schedulers hear the same outcomes, and the 32 answers hold over both."""
    import threading

    ranks, gather = [], ThreadGather(2)
    for rank in range(2):
        batcher, sched, engine = sized_batcher("sequential", [[1, 0], [1]], [0.5] * 12, batch_groups=2,
                                               group_size=8, round_size=2, n_max=6)
        batcher.rank, batcher.world_size, batcher.all_gather = rank, 2, gather.of(rank)
        ranks.append((batcher, sched, engine))
    batches = [None, None]

    def step(rank):
        batches[rank] = ranks[rank][0].next_batch()

    threads = [threading.Thread(target=step, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert batches[0] is not None and batches[1] is not None
    (_, s0, e0), (_, s1, e1) = ranks
    assert e0.calls == e1.calls == 3  # start, then two rounds of continuations (rank 0: problems 8, then 9)
    (idx, n_correct, sizes), other = s0.updates[0], s1.updates[0]
    assert [a.tolist() for a in other] == [idx.tolist(), n_correct.tolist(), sizes.tolist()]
    assert dict(zip(idx.tolist(), sizes.tolist(), strict=True)) == {0: 2, 2: 2, 4: 2, 6: 2, 8: 2, 9: 2,  # rank 0
                                                                    1: 6, 3: 6, 5: 4, 7: 4}  # rank 1: cap, or out of budget
    assert dict(zip(idx.tolist(), n_correct.tolist(), strict=True)) == {0: 1, 2: 1, 4: 1, 6: 1, 8: 1, 9: 2,
                                                                        1: 6, 3: 6, 5: 4, 7: 4}
    assert sizes.sum() == 32 and batches[0].generated_rollouts + batches[1].generated_rollouts == 32
    assert sorted(g.problem for b in batches for g in b.groups) == [0, 2, 4, 6, 8]


def reference_sequential(batcher, budget):
    """The one-rank sequential loop as first written (correctness over every answer, overlong=keep):
    the reference the lock-step version must equal on one rank. Returns (problems, sizes)."""
    import math

    from grpo_data.generation.rollouts import ScoredGroup
    from grpo_train.groups import RolloutBatch

    r, cap = batcher.sizing.round_size, batcher.sizing.n_max
    problems, groups, left = [], [], budget
    start = max(1, math.ceil(budget / (2 * r)))
    while left >= r:
        c = np.array([int(g.correct.sum()) for g in groups], dtype=int)
        n = np.array([len(g.completions) for g in groups], dtype=int)
        more = np.flatnonzero(((c == 0) | (c == n)) & (n < cap - r + 1))[: left // r]
        if more.size:
            for j, sg in zip(more, batcher._sample(np.array(problems)[more], RolloutBatch(), r), strict=True):
                groups[j] = ScoredGroup.concat([groups[j], sg])
            left -= more.size * r
            continue
        fresh = [i for i in dict.fromkeys(batcher.scheduler.sample(min(start, left // r)).tolist()) if i not in problems]
        if not fresh:
            break
        problems += fresh
        groups += batcher._sample(np.array(fresh), RolloutBatch(), r)
        left -= len(fresh) * r
    return problems, [len(g.completions) for g in groups]


def random_sequential_setup(rng):
    pool = int(rng.integers(1, 12))
    plans = [rng.integers(0, 2, size=int(rng.integers(1, 6))).tolist() for _ in range(pool)]
    round_size = int(rng.integers(1, 5))
    return plans, {"round_size": round_size, "n_max": int(rng.integers(max(2, round_size), 13))}, int(rng.integers(4, 60))


def test_sequential_sampling_on_one_rank_is_the_plain_loop():
    """On random plans, pools, rounds, caps and budgets, the lock-step loop on one rank samples the
    same problems, sizes and engine calls as the plain one-rank loop (`reference_sequential`)."""
    from grpo_train.groups import RolloutBatch

    rng = np.random.default_rng(0)
    for case in range(25):
        plans, sizing, budget = random_sequential_setup(rng)
        got, sched, engine = sized_batcher("sequential", plans, [0.5] * len(plans), **sizing)
        idx, sizes, mine, _ = got._sequential(budget, RolloutBatch())
        ref, _, ref_engine = sized_batcher("sequential", plans, [0.5] * len(plans), **sizing)
        problems, ref_sizes = reference_sequential(ref, budget)
        assert (idx.tolist(), sizes.tolist(), engine.calls) == (problems, ref_sizes, ref_engine.calls), (case, sizing)
        assert mine.tolist() == idx.tolist() and sizes.sum() <= budget


def test_sequential_sampling_on_several_ranks_stays_in_lock_step_on_random_setups():
    """2-3 ranks as threads on random setups: every rank makes the same engine calls, draws the same
    problems from its scheduler and returns the same round; the budget and the cap hold."""
    import threading

    from grpo_train.groups import RolloutBatch

    rng = np.random.default_rng(1)
    for case in range(20):
        plans, sizing, budget = random_sequential_setup(rng)
        world = int(rng.integers(2, 4))
        budget = max(budget, world * sizing["round_size"])
        gather, ranks, out = ThreadGather(world), [], [None] * world
        for rank in range(world):
            batcher, sched, engine = sized_batcher("sequential", plans, [0.5] * len(plans), **sizing)
            batcher.rank, batcher.world_size, batcher.all_gather = rank, world, gather.of(rank)
            ranks.append((batcher, sched, engine))

        def run(rank, ranks=ranks, out=out, budget=budget):
            out[rank] = ranks[rank][0]._sequential(budget, RolloutBatch())

        threads = [threading.Thread(target=run, args=(r,)) for r in range(world)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert all(o is not None for o in out), case
        assert len({e.calls for _, _, e in ranks}) == 1 and len({s.next for _, s, _ in ranks}) == 1, case
        assert all(o[0].tolist() == out[0][0].tolist() and o[1].tolist() == out[0][1].tolist() for o in out), case
        idx, sizes = out[0][0], out[0][1]
        assert sizes.sum() <= budget and (sizes <= sizing["n_max"]).all(), case
        assert idx.tolist() == [i for o in out for i in o[2].tolist()], case  # rank blocks, in rank order
        assert all(o[2].size >= 1 for o in out), case  # every rank generated


def test_the_variance_schedule_moves_g_and_keeps_the_answers_per_step():
    from grpo_data.curriculum.allocation import reachable_group_sizes
    from grpo_train.config import RolloutConfig

    ro = RolloutConfig(group_size=8, batch_groups=16, g_schedule="variance", g_window=2, g_high=0.2, g_min=4, g_max=16)
    s = ro.variance_schedule()
    assert [s.observe(0.25), s.observe(0.25)] == [8, 16]
    assert reachable_group_sizes(8, 2, 64) == [2, 4, 8, 16, 32, 64] and reachable_group_sizes(6, 2, 12) == [3, 6, 12]
    assert ro.most_groups_per_step() == 128 // 4  # at g_min the same 128 answers make 32 groups
    with pytest.raises(ValueError, match="does not divide"):
        RolloutConfig(group_size=8, batch_groups=3, g_schedule="variance", g_min=2, g_max=16)  # 24 answers, G = 16
    with pytest.raises(ValueError, match="sizing=fixed"):
        RolloutConfig(g_schedule="variance", sizing="allocate")
    with pytest.raises(ValueError, match="choose one of"):
        RolloutConfig(sizing="knapsack")


# ---------------------------------------------------------------------------- SPEED screening, the trace
def test_screen_continues_only_mixed_screens_and_charges_every_answer():
    """SPEED (sizing=screen): 4 answers screen each problem; only a mixed screen gets the other 4 of
    its G = 8, its screen joining the group; the stopped screens are charged (screen_rollouts) and
    reported to the scheduler at their own size."""
    plans = [[1], [0], [1, 0]]  # problem i % 3: always right, always wrong, alternating
    batcher, sched, engine = sized_batcher("screen", plans, [0.5] * 6, batch_groups=2, group_size=8, round_size=4,
                                           candidates=3.0)
    batch = batcher.next_batch()
    idx, n_correct, sizes = sched.updates[0]
    assert idx.tolist() == [0, 1, 2, 3, 4, 5] and engine.calls == 2  # one call for screens, one for continuations
    assert sizes.tolist() == [4, 4, 8, 4, 4, 8] and n_correct.tolist() == [4, 0, 4, 4, 0, 4]
    assert [g.problem for g in batch.groups] == [2, 5] and all(len(g.completions) == 8 for g in batch.groups)
    assert batch.generated_rollouts == 6 * 4 + 2 * 4 and batch.screen_rollouts == 4 * 4
    assert (batch.groups_all_right, batch.groups_all_wrong, batch.informative_groups) == (2, 2, 2)
    assert batch.groups_in_band == 2 and not batch.underfilled  # 4 of 8 right: in [0.2, 0.8]


def test_screen_needs_a_smaller_screen_than_g_and_resampling():
    from grpo_train.config import RolloutConfig

    with pytest.raises(ValueError, match="size_round < group_size"):
        RolloutConfig(sizing="screen", size_round=8, group_size=8)
    with pytest.raises(ValueError, match="dynamic_resampling=true"):
        RolloutConfig(sizing="screen", size_round=4, group_size=8, dynamic_resampling=False)
    assert RolloutConfig(sizing="screen", size_round=4, group_size=8).most_groups_per_step() == 16


def test_group_kinds_and_step_trace_add_up():
    from grpo_train.groups import Group, group_kind
    from grpo_train.metrics import step_trace

    right, wrong, mixed = Group(0, [1], [None] * 4, np.ones(4)), Group(1, [1], [None] * 4, np.zeros(4)), \
        Group(2, [1], [None] * 4, np.array([1.0, 0, 0, 1]))
    masked = Group(3, [1], [None] * 2, np.array([1.0, 0.0]), train_mask=np.array([True, False]))  # trains as all right
    none_trains = Group(4, [1], [None] * 2, np.array([0.0, 0.0]), train_mask=np.array([False, False]))
    assert [group_kind(g) for g in (right, wrong, mixed, masked, none_trains)] == \
        ["all_right", "all_wrong", "mixed", "all_right", "all_wrong"]
    counts = {"generated_groups": 8, "informative_groups": 3, "groups_all_right": 4, "groups_all_wrong": 1,
              "groups_in_band": 2, "screen_rollouts": 12, "groups_level_1": 6, "groups_level_3": 2}
    trace = step_trace(counts, by_level=True)
    assert trace["groups_all_right_share"] + trace["groups_all_wrong_share"] + trace["groups_mixed_share"] == 1.0
    assert (trace["groups_mixed_share"], trace["groups_in_band_share"]) == (3 / 8, 2 / 8)
    assert (trace["level_share_1"], trace["level_share_3"], trace["screen_rollouts"]) == (0.75, 0.25, 12)
    assert "level_share_1" not in step_trace(counts, by_level=False)


def test_the_batch_trace_counts_levels_and_the_band():
    batcher, _ = make_batcher([4, 0, 2, 1], batch_groups=2, max_rounds=2)  # of 4: all right, all wrong, mixed, mixed
    batcher.levels = np.arange(50) % 3
    batch = batcher.next_batch()  # round 1: problems 0, 1 (4/4, 0/4); round 2: 2, 3, 4 (2/4, 1/4, 4/4)
    assert (batch.groups_all_right, batch.groups_all_wrong, batch.informative_groups) == (2, 1, 2)
    assert batch.level_groups == {"0": 2, "1": 2, "2": 1}
    assert batch.groups_in_band == 2  # band [0.2, 0.8]: 2/4 and 1/4 are in, 4/4 and 0/4 are out


def test_the_trace_keys_levels_and_survives_problems_without_one():
    from grpo_train.groups import level_key

    assert [level_key(v) for v in (3.0, 2.5, float("nan"), 7)] == ["3", "2.5", "none", "7"]
    batcher, _ = make_batcher([2], batch_groups=2, max_rounds=1)
    batcher.levels = np.where(np.arange(50) % 2 == 0, np.nan, 4.0)
    assert batcher.next_batch().level_groups == {"none": 1, "4": 1}


def test_scheduler_sized_groups_take_sgpos_sizes_in_its_order_to_the_step_budget():
    """rollout.sizing=scheduler (arm SG): sGPO's sizes, about 1/p within [n_min, n_max], its problems
    easy to hard, until the round's budget is spent; resampling keeps the mixed groups; a scheduler
    that sizes nothing is refused."""
    from grpo_data.curriculum.allocation import Sizing
    from grpo_data.curriculum.posterior_samplers import SgpoScheduler
    from grpo_data.generation.prompting import PromptConfig, SamplingConfig
    from grpo_data.generation.rollouts import RolloutSampler
    from grpo_data.verify.verdict import Verdict
    from grpo_train.tiny_policy import build_tokenizer

    # profile: p = 0.5, 0.25, 0.75, 1.0 (trivial: dropped); order 2, 0, 1; sizes 2, 2, 4
    sched = SgpoScheduler(4, (np.array([2, 1, 3, 4]), np.array([4, 4, 4, 4])))
    prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(4)]
    engine = ProblemEngine([[1, 0]], {})  # every problem alternates right, wrong: every group mixed

    def judge(golds, preds):
        return [Verdict(x == "\\boxed{1}", "") for x in preds]

    sampler = RolloutSampler(engine, type("V", (), {"verify": staticmethod(judge)}), build_tokenizer(), PromptConfig(),
                             SamplingConfig())
    batcher = RolloutBatcher(sampler, sched, prompts, ["1"] * 4, 4, 2, 1, True,
                             sizing=Sizing("scheduler", n_min=2, n_max=8))
    engine.prompt_of.update({tuple(batcher.prompt_ids(i)): i for i in range(4)})
    batch = batcher.next_batch()  # budget 2 groups x 4 = 8 answers: 2 + 2 + 4
    assert [g.problem for g in batch.groups] == [2, 0, 1] and batch.group_sizes == [2, 2, 4]
    assert engine.calls == 1 and batch.generated_rollouts == 8 and not batch.underfilled
    assert [(d.problem, d.predicted, d.size) for d in batch.draws] == [(2, 0.75, 2), (0, 0.5, 2), (1, 0.25, 4)]
    with pytest.raises(ValueError, match="scheduler.name=sgpo"):
        RolloutBatcher(sampler, RecordingScheduler(4), prompts, ["1"] * 4, 4, 2, 1, True, sizing=batcher.sizing)
