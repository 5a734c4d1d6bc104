"""The learner's numbers at real-setup settings, on small stand-ins: temperature T < 1, a tokenizer
that adds BOS with a template that writes it too and ends turns with a token that is not EOS,
micro-batches, several ranks through the documented launcher, ZeRO-3.

Engines exercised: plain torch (the log-prob and loss functions the learner calls), vLLM (agreement,
stops), transformers generate (stops), DeepSpeed with 2 CPU ranks (slow tests).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from grpo_data.generation.engines import Completion
from grpo_train.config import AlgoConfig
from grpo_train.core_algos import LossNorm, compute_advantages
from grpo_train.groups import Group
from grpo_train.logprobs import token_logprobs
from grpo_train.sequences import (
    Sequence,
    flatten_groups,
    micro_batches,
    microbatch_loss,
    pad_batch,
    sequence_advantages,
)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    """Random (unconfident: temperature changes its log-probs a lot) 2-layer Qwen2 with the stand-in
    tokenizer: adds BOS, template writes BOS, turns end with <|eot|> (EOS is </s>)."""
    from grpo_train.tiny_policy import TinyModelConfig, build_model, build_standin_tokenizer

    out = tmp_path_factory.mktemp("standin")
    tok = build_standin_tokenizer()
    build_model(tok, TinyModelConfig(num_layers=2), seed=0).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def hf_model(path):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()


def random_sequences(seed: int, n: int, vocab: int, train_mask=None) -> list[Sequence]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        prompt = rng.integers(5, vocab, size=int(rng.integers(3, 8))).tolist()
        comp = rng.integers(5, vocab, size=int(rng.integers(1, 14))).tolist()
        out.append(Sequence(tuple(prompt + comp), len(prompt), float(i % 2), i // 4,
                            True if train_mask is None else bool(train_mask[i]), None))
    return out


def full_softmax_logprobs(model, batch, temperature):
    """The plain way (what the learner did before, plus temperature): (B, L, V) logits."""
    with torch.no_grad():
        logits = model(input_ids=batch.input_ids, attention_mask=batch.attention).logits.float() / temperature
    prev = (batch.positions - 1).clamp(min=0)
    step = logits.gather(1, prev[..., None].expand(-1, -1, logits.size(-1))).log_softmax(-1)  # (B, T, V)
    logp = step.gather(-1, batch.input_ids.gather(1, batch.positions)[..., None]).squeeze(-1)
    entropy = -(step.exp() * step).sum(-1)
    return logp * batch.token_mask, float((entropy * batch.token_mask).sum())


@pytest.mark.parametrize("temperature", [0.6, 1.0])
def test_chunked_logprobs_equal_the_full_softmax_at_the_temperature(standin, temperature):
    model = hf_model(standin)
    batch = pad_batch(random_sequences(0, 6, model.config.vocab_size), pad_id=0)
    ref, ref_entropy = full_softmax_logprobs(model, batch, temperature)
    for chunk in (None, 5, 1024):
        with torch.no_grad():
            logp, entropy = token_logprobs(model, batch, temperature, chunk, with_entropy=True)
        torch.testing.assert_close(logp, ref, atol=1e-5, rtol=1e-5)
        assert float(entropy.sum()) == pytest.approx(ref_entropy, rel=1e-5)
    if temperature != 1.0:  # the test can see a temperature bug: raw log-probs are far off
        raw, _ = full_softmax_logprobs(model, batch, 1.0)
        assert float((raw - ref).abs().sum() / batch.token_mask.sum()) > 0.05


def test_micro_batch_budget_packs_longest_first():
    assert micro_batches([3, 10, 4, 9], token_budget=20) == [[1, 3], [2, 0]]
    assert micro_batches([30, 2], token_budget=20) == [[0], [1]]  # too long alone: a batch of its own


@pytest.mark.parametrize(("aggregation", "variant"), [
    ("token_mean", {}), ("seq_mean", {}), ("seq_sum_norm", {}),
    ("token_mean", {"entropy_coef": 0.05}), ("seq_mean", {"ratio_level": "sequence", "clip_low": 0.01, "clip_high": 0.01})])
def test_micro_batched_step_equals_the_single_batch_step(standin, aggregation, variant):
    """Gradients summed over micro-batches (each its share of the global loss) equal one big batch's,
    with an answer masked out of the loss (overlong filtering) and logits in small chunks; also with
    the entropy bonus (its gradient recomputed chunk by chunk) and GSPO's sequence ratio."""
    model = hf_model(standin)
    mask = [True] * 12
    mask[3] = False
    seqs = random_sequences(1, 12, model.config.vocab_size, mask)
    algo = AlgoConfig(aggregation=aggregation, kl_beta=0.0, **variant)
    adv = compute_advantages("grpo", torch.tensor([s.reward for s in seqs]), torch.tensor([s.group for s in seqs]))
    norm = LossNorm(sum(s.completion_len for s in seqs if s.train), sum(s.train for s in seqs), 16)

    def grads(budget: int, chunk: int) -> dict[str, torch.Tensor]:
        model.zero_grad()
        for mb in micro_batches([len(s.ids) for s in seqs], budget):
            batch = pad_batch([seqs[i] for i in mb], pad_id=0)
            with torch.no_grad():
                old, _ = token_logprobs(model, batch, 0.6, chunk)
            logp, entropy = token_logprobs(model, batch, 0.6, chunk, with_entropy=True, entropy_grad=True)
            loss, _ = microbatch_loss(logp, batch, adv[mb], old - 0.05, None, norm, algo, entropy=entropy)
            loss.backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    whole, pieces = grads(10_000, 10_000), grads(24, 3)
    assert len(micro_batches([len(s.ids) for s in seqs], 24)) >= 4
    for name in whole:
        torch.testing.assert_close(pieces[name], whole[name], atol=1e-6, rtol=1e-4)
    assert any(float(g.abs().max()) > 1e-4 for g in whole.values())


def test_masked_answers_carry_no_loss_but_count_as_tokens():
    seqs = [Sequence((1, 2, 3, 4), 2, 1.0, 0, True, None), Sequence((1, 2, 5), 2, 0.0, 0, False, (-0.5,))]
    batch = pad_batch(seqs, pad_id=0)
    assert batch.mask.tolist() == [[1.0, 1.0], [0.0, 0.0]]
    assert batch.token_mask.tolist() == [[1.0, 1.0], [1.0, 0.0]]
    assert batch.rollout_logp[1, 0] == -0.5 and torch.isnan(batch.rollout_logp[0]).all()


def test_flatten_groups_keeps_logprobs_and_train_mask():
    comps = [Completion("a", (7, 8), "stop", (-0.1, -0.2)), Completion("b", (9,), "length", (-0.3,))]
    g = Group(0, [1, 2], comps, np.array([1.0, 0.0]), train_mask=np.array([True, False]))
    seqs = flatten_groups([g])
    assert [s.ids for s in seqs] == [(1, 2, 7, 8), (1, 2, 9)]
    assert [s.train for s in seqs] == [True, False]
    assert seqs[0].rollout_logp == (-0.1, -0.2)


def loop_step_loss(groups, logps, old_logps, algo: AlgoConfig, max_tokens: int) -> torch.Tensor:
    """The step's loss written out answer by answer and token by token: GRPO advantages from each
    group's own scored answers (sample std), the clipped surrogate, then the aggregation."""
    terms, n_tokens, n_seqs = [], 0, 0
    for g in groups:
        scored = [float(r) for r in g.rewards if np.isfinite(r)]
        mean = sum(scored) / len(scored)
        std = (sum((r - mean) ** 2 for r in scored) / max(len(scored) - 1, 1)) ** 0.5
        for j, r in enumerate(g.rewards):
            train = np.isfinite(r) and (g.train_mask is None or bool(g.train_mask[j]))
            if not train:
                continue
            adv = (float(r) - mean) / (std + algo.eps)
            per_token = []
            for lp, olp in zip(logps[len(terms)], old_logps[len(terms)], strict=True):
                ratio = torch.exp(lp - olp)
                clipped = torch.clamp(ratio, 1 - algo.clip_low, 1 + algo.clip_high)
                per_token.append(-torch.minimum(ratio * adv, clipped * adv))
            terms.append(per_token)
            n_tokens, n_seqs = n_tokens + len(per_token), n_seqs + 1
    if algo.aggregation == "token_mean":
        return sum(t for seq in terms for t in seq) / n_tokens
    if algo.aggregation == "seq_mean":
        return sum(sum(seq) / len(seq) for seq in terms) / n_seqs
    return sum(t for seq in terms for t in seq) / (n_seqs * max_tokens)


@pytest.mark.parametrize("aggregation", ["token_mean", "seq_mean", "seq_sum_norm"])
def test_unequal_groups_step_loss_and_gradient_equal_the_loop_reference(aggregation):
    """Groups of 2, 3, 5 and 8 answers (allocation sizes each problem), one unscored answer and one
    masked out of the loss, in micro-batches: the learner's loss and its gradient per token equal
    the loop's."""
    rng = np.random.default_rng(3)
    groups = []
    for gi, size in enumerate([2, 3, 5, 8]):
        rewards = rng.integers(0, 2, size).astype(float)
        rewards[0], rewards[1] = 1.0, 0.0  # every group informative
        comps = [Completion("x", tuple(rng.integers(5, 50, int(rng.integers(1, 7))).tolist()), "stop") for _ in range(size)]
        train = np.ones(size, dtype=bool)
        if size == 5:
            rewards[4] = np.nan  # no reward could score it: out of the stats and the loss
        if size == 8:
            train[2] = False  # overlong, masked: in the stats, out of the loss
        groups.append(Group(gi, [1, 2, 3], comps, rewards, train_mask=train))
    seqs = flatten_groups(groups)
    algo = AlgoConfig(aggregation=aggregation, kl_beta=0.0)
    lengths = [s.completion_len for s in seqs]
    logp_rows = [torch.tensor(rng.normal(-1.0, 0.3, n), dtype=torch.float32, requires_grad=True) for n in lengths]
    old_rows = [(r.detach() + torch.tensor(rng.normal(0, 0.2, r.numel()), dtype=torch.float32)) for r in logp_rows]
    adv = sequence_advantages(seqs, algo)
    norm = LossNorm(sum(n for s, n in zip(seqs, lengths, strict=True) if s.train), sum(s.train for s in seqs), 16)
    mbs = micro_batches([len(s.ids) for s in seqs], token_budget=30)
    assert len(mbs) >= 3
    total = torch.zeros(())
    for mb in mbs:
        batch = pad_batch([seqs[i] for i in mb], pad_id=0)
        shape = batch.mask.shape
        logp = torch.stack([torch.nn.functional.pad(logp_rows[i], (0, shape[1] - lengths[i])) for i in mb])
        old = torch.stack([torch.nn.functional.pad(old_rows[i], (0, shape[1] - lengths[i])) for i in mb])
        loss, _ = microbatch_loss(logp, batch, adv[mb], old, None, norm, algo)
        total = total + loss
    got = torch.autograd.grad(total, logp_rows)

    train_rows = [i for i, s in enumerate(seqs) if s.train]
    ref = loop_step_loss(groups, [logp_rows[i] for i in train_rows], [old_rows[i] for i in train_rows], algo, 16)
    want = torch.autograd.grad(ref, [logp_rows[i] for i in train_rows])
    assert float(total.detach()) == pytest.approx(float(ref.detach()), rel=1e-5, abs=1e-7)
    for k, i in enumerate(train_rows):
        torch.testing.assert_close(got[i], want[k], atol=1e-6, rtol=1e-5)
    for i in set(range(len(seqs))) - set(train_rows):  # the unscored and the masked answer get no gradient
        assert float(got[i].abs().sum()) == 0.0
    assert float(total.detach()) != 0.0


# ---------------------------------------------------------------- one tokenization path


class RecordingEngine:
    """Test double: records the prompts it is given; every answer is `\\boxed{1}`."""

    name = "recording"

    def __init__(self, tokenizer, model_path="recording"):
        self.tokenizer, self.model_path = tokenizer, model_path
        self.prompts, self.samplings = [], []

    def generate(self, prompts, n, sampling):
        self.prompts += [list(p) for p in prompts]
        self.samplings.append(sampling)
        return [[Completion("\\boxed{1}", (5, 2), "stop") for _ in range(n)] for _ in prompts]


def test_profiling_rollouts_and_evaluation_send_identical_ids_with_one_bos(tmp_path, pool, standin):
    import polars as pl
    from transformers import AutoTokenizer

    from grpo_data.generation.prompting import PromptConfig, SamplingConfig
    from grpo_data.generation.rollouts import RolloutSampler
    from grpo_data.profile_config import ProfileConfig
    from grpo_data.profiler import profile_problems
    from grpo_data.tables.problems import to_table, user_prompt
    from grpo_train.rollout import RolloutBatcher
    from grpo_train.trainer import evaluate

    tok = AutoTokenizer.from_pretrained(standin)
    table = to_table([{"id": "p0", "prompt": user_prompt("What is 3+5?"), "answer": "1", "source": "t", "level": 1}])
    prompt = PromptConfig(instruction_suffix="Box it.")
    sampling = SamplingConfig(temperature=0.6, max_tokens=8)

    prof = RecordingEngine(tok)
    profile_problems(table, prof, pool, ProfileConfig(k=2, sampling=sampling, prompt=prompt), tmp_path / "p.parquet",
                     progress=False)
    roll = RecordingEngine(tok)
    sched = type("S", (), {"sample": lambda self, b: np.zeros(b, dtype=int), "update": lambda self, *a: None})()
    RolloutBatcher(RolloutSampler(roll, pool, tok, prompt, sampling), sched, table["prompt"].to_list(),
                   table["answer"].to_list(), 2, 1, 1, False).next_batch()
    ev = RecordingEngine(tok)
    evaluate(RolloutSampler(ev, pool, tok, prompt, sampling), table, k=2)

    assert prof.prompts[0] == roll.prompts[0] == ev.prompts[0]
    ids = prof.prompts[0]
    assert ids[0] == tok.bos_token_id and ids.count(tok.bos_token_id) == 1
    # adding special tokens to the rendered text (the old path) would have given two
    text = tok.apply_chat_template(pl.Series(table["prompt"]).to_list()[0], tokenize=False, add_generation_prompt=True)
    assert tok(text)["input_ids"][:2] == [tok.bos_token_id, tok.bos_token_id]
    # every path stops at the template's end-of-turn token and EOS
    eot = tok.convert_tokens_to_ids("<|eot|>")
    for engine in (prof, roll, ev):
        assert set(engine.samplings[0].stop_token_ids) == {tok.eos_token_id, eot} and eot != tok.eos_token_id


def test_make_group_overlong_modes():
    from grpo_data.generation.rollouts import ScoredGroup
    from grpo_train.groups import Overlong, make_group

    comps = [Completion("\\boxed{1}", tuple(range(4)), "stop"), Completion("\\boxed{1}", tuple(range(16)), "length"),
             Completion("x", tuple(range(14)), "stop")]
    from grpo_data.verify.verdict import Verdict

    verdicts = [Verdict(c, "ok" if c else "wrong") for c in (True, True, False)]
    scored = ScoredGroup(comps, verdicts)
    keep = make_group(0, [1], scored, Overlong("keep", 16))
    assert keep.rewards.tolist() == [1.0, 1.0, 0.0] and keep.train_mask is None
    mask = make_group(0, [1], scored, Overlong("mask", 16))
    assert mask.train_mask.tolist() == [True, False, True] and mask.rewards.tolist() == [1.0, 1.0, 0.0]
    pen = make_group(0, [1], scored, Overlong("penalty", 16, buffer=4, penalty=1.0))
    assert pen.rewards.tolist() == pytest.approx([1.0, 0.0, -0.5])  # 16 tokens: -1; 14 of 16: -0.5
    assert pen.correct.tolist() == [1.0, 1.0, 0.0] and pen.informative
    # dropping looks at what trains: with the only wrong answer cut off and masked, the group trains as all right
    cut_wrong = ScoredGroup([comps[0], comps[0], Completion("x", tuple(range(16)), "length")], verdicts)
    assert make_group(0, [1], cut_wrong, Overlong("keep", 16)).informative
    assert not make_group(0, [1], cut_wrong, Overlong("mask", 16)).informative
    # judged on correctness, not reward variance: a length penalty alone does not make an all-right or an
    # all-wrong group informative (normalized, it would become full-size advantages on length alone)
    all_right = make_group(0, [1], ScoredGroup([comps[0], comps[1]], verdicts[:2]), Overlong("penalty", 16, 4, 1.0))
    assert all_right.rewards.tolist() == [1.0, 0.0] and not all_right.informative
    all_wrong = ScoredGroup([Completion("x", tuple(range(4)), "stop"), comps[2]], [verdicts[2]] * 2)
    assert not make_group(0, [1], all_wrong, Overlong("penalty", 16, buffer=4, penalty=1.0)).informative


def test_rank_quotas_fill_the_global_batch():
    from grpo_train.rollout import rank_quotas

    assert rank_quotas(np.array([20, 12]), 32).tolist() == [20, 12]
    assert rank_quotas(np.array([20, 12]), 16).tolist() == [8, 8]
    assert rank_quotas(np.array([20, 3]), 16).tolist() == [13, 3]
    assert rank_quotas(np.array([0, 0]), 16).tolist() == [0, 0]


# ---------------------------------------------------------------- real engines


def _agreement(standin, temperature: float) -> float:
    from grpo_data.generation.engines import EngineSettings, make_engine
    from grpo_data.generation.prompting import SamplingConfig, encode_prompt, resolve_stops

    engine = make_engine("vllm", str(standin), seed=0, settings=EngineSettings(dtype="float32"))
    try:
        tok = engine.tokenizer
        prompts = [encode_prompt(tok, [{"role": "user", "content": f"What is {i}+{i + 3}?"}]) for i in range(6)]
        sampling = resolve_stops(SamplingConfig(temperature=temperature, max_tokens=24, logprobs=True), tok)
        groups = engine.generate(prompts, 4, sampling)
    finally:
        engine.close()
    seqs = [Sequence(tuple(p) + c.token_ids, len(p), 0.0, 0, True, c.logprobs) for p, g in zip(prompts, groups) for c in g]
    assert all(s.rollout_logp is not None and len(s.rollout_logp) == s.completion_len for s in seqs)
    batch = pad_batch(seqs, pad_id=0)
    with torch.no_grad():
        logp, _ = token_logprobs(hf_model(standin), batch, temperature, chunk_tokens=64)
    have = batch.token_mask.bool()
    return float((logp - batch.rollout_logp)[have].abs().mean())


@pytest.mark.slow
@pytest.mark.parametrize("temperature", [0.6, 1.0])
def test_learner_logprobs_agree_with_vllm_sampling_distribution(standin, temperature):
    """vLLM's processed log-prob of each sampled token (temperature applied) and the learner's
    recomputation agree in fp32; on this unconfident model, ignoring T would be off by ~0.1/token."""
    assert _agreement(standin, temperature) < 0.02


@pytest.mark.slow
@pytest.mark.parametrize("engine_name", ["vllm", "hf"])
def test_stop_strings_and_stop_tokens_end_generation(standin, engine_name):
    from grpo_data.generation.engines import EngineSettings, make_engine
    from grpo_data.generation.prompting import SamplingConfig, encode_prompt

    stops = tuple("abcdefghijklmnopqrstuvwxyz0123456789")
    engine = make_engine(engine_name, str(standin), seed=0, settings=EngineSettings(dtype="float32"))
    try:
        tok = engine.tokenizer
        prompt = encode_prompt(tok, [{"role": "user", "content": "What is 3+5?"}])
        free = engine.generate([prompt], 16, SamplingConfig(temperature=1.0, max_tokens=48, stop_token_ids=(2,)))[0]
        cut = engine.generate([prompt], 16, SamplingConfig(temperature=1.0, max_tokens=48, stop=stops,
                                                           stop_token_ids=(2,)))[0]
        # every token of the vocabulary is a stop token: one token, finished by a stop
        every = engine.generate([prompt], 4, SamplingConfig(temperature=1.0, max_tokens=48,
                                                            stop_token_ids=tuple(range(len(tok)))))[0]
    finally:
        engine.close()
    assert sum(c.finish_reason == "length" for c in free) >= 8  # unconstrained, a random model runs on
    assert all(not any(s in c.text for s in stops) for c in cut)
    assert sum(c.finish_reason == "stop" for c in cut) >= 12 and max(len(c.token_ids) for c in cut if c.finish_reason == "stop") < 48
    assert all(len(c.token_ids) == 1 and c.finish_reason == "stop" for c in every)


def _launch(cmd: list[str], timeout: int = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
    env.pop("CUDA_VISIBLE_DEVICES", None)  # the launcher would turn it into --include
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-5000:])
    return proc


@pytest.mark.slow
@pytest.mark.parametrize(("zero_stage", "advantage"), [(0, "batch_norm"), (3, "window_norm")])
def test_two_ranks_make_the_update_of_one_rank_on_the_union(tmp_path, standin, zero_stage, advantage):
    """2 CPU ranks through DeepSpeed's launcher, unequal shares (one rank empty in a step), micro-
    batches: after 3 steps both ranks hold the same weights, equal to one process on the union. The
    estimators normalize over the whole batch or a window of groups: every rank's rewards count."""
    from grpo_train.rank_check import max_weight_difference

    launcher = shutil.which("deepspeed", path=os.path.dirname(sys.executable))
    extra = ["--zero-stage", str(zero_stage), "--advantage", advantage]
    _launch([launcher, "--num_gpus", "2", "--master_port", str(29650 + zero_stage), "--module", "grpo_train.rank_check",
             "--model", str(standin), "--out", str(tmp_path / "two"), *extra])
    _launch([sys.executable, "-m", "grpo_train.rank_check", "--model", str(standin), "--out", str(tmp_path / "one"),
             "--union", "2", *extra])
    r0, r1, one = (tmp_path / "two" / "weights-rank0.pt", tmp_path / "two" / "weights-rank1.pt",
                   tmp_path / "one" / "weights-rank0.pt")
    assert max_weight_difference(r0, r1) == 0.0
    start = hf_model(standin).state_dict()
    final = torch.load(one)
    assert max(float((final[k] - start[k]).abs().max()) for k in final) > 0.05  # the steps moved the weights
    assert max_weight_difference(r0, one) < 1e-5  # a loss normalized per rank instead shows as ~0.1


@pytest.mark.slow
def test_grpo_train_at_temperature_0_6_logs_the_rollout_logprob_difference(tmp_path, standin, world_tables):
    """`grpo train` end to end on an unconfident model (where T matters: ~0.1 per token if ignored)
    at rollout.temperature 0.6: the learner's old log-probs match vLLM's sampling log-probs."""
    import json

    train = tmp_path / "train.parquet"
    world_tables["train"].head(32).write_parquet(train)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "pipelines.cli", "train", "-o", f"model={standin}", "-o", f"data.train={train}",
           "-o", "data.heldout=null", "-o", f"run.out={out}", "-o", "run.steps=1", "-o", "run.save_every=0",
           "-o", "rollout.temperature=0.6", "-o", "rollout.max_tokens=24", "-o", "rollout.group_size=4",
           "-o", "rollout.batch_groups=4", "-o", "rollout.dynamic_resampling=false", "-o", "rollout.vllm.dtype=float32",
           "-o", "optim.micro_batch_tokens=64", "-o", "run.progress=false", "-o", "scheduler.name=uniform"]
    proc = _launch(cmd)
    assert "Failed to load weights" not in proc.stderr and "set_num_threads" not in proc.stderr
    record = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    assert record["loss_tokens"] > 0 and record["logprob_diff_rollout"] < 0.02
    assert 0 <= record["truncated_fraction"] <= 1 and record["train_tokens"] >= record["loss_tokens"]


# ---------------------------------------------------------------- engine settings and launch helpers


def test_engine_settings_per_device_kind_and_rank_sharing():
    from grpo_data.generation.engines import EngineSettings, engine_settings
    from grpo_data.generation.vllm_engine import engine_kwargs, ranks_per_device

    assert ranks_per_device(8, 8, 8) == 1 and ranks_per_device(16, 8, 8) == 1  # 2 nodes x 8 GPUs
    assert ranks_per_device(4, 4, 2) == 2 and ranks_per_device(1, 1, 0) == 1
    cpu = engine_kwargs(EngineSettings(), on_gpu=False, sharing=1)
    gpu = engine_kwargs(EngineSettings(gpu_memory_utilization=0.6, max_model_len=9216), on_gpu=True, sharing=1)
    assert cpu["enforce_eager"] and not cpu["enable_sleep_mode"]
    assert not gpu["enforce_eager"] and gpu["enable_sleep_mode"] and gpu["gpu_memory_utilization"] == 0.6
    assert gpu["max_model_len"] == 9216
    assert engine_kwargs(EngineSettings(), on_gpu=True, sharing=2)["gpu_memory_utilization"] == 0.25
    with pytest.raises(ValueError, match="unknown vllm setting"):
        engine_settings({"gpu_mem": 0.5})


def test_profiling_ranks_pin_their_own_gpu(monkeypatch):
    from grpo_data.generation.engines import pin_local_device

    monkeypatch.setenv("LOCAL_RANK", "2")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    pin_local_device()
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "6"


def test_profile_options_one_set_of_defaults_for_cli_and_pipeline():
    import argparse

    from grpo_data.profile_config import profile_options
    from pipelines.commands.profile import add_arguments, options_from_args

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    cli_cfg, cli_engine = profile_options(options_from_args(parser.parse_args(["--data", "d", "--model", "m", "--out", "o"])))
    pipe_cfg, pipe_engine = profile_options({})
    assert cli_cfg == pipe_cfg and cli_engine == pipe_engine
    cfg, engine = profile_options({"adaptive": True, "temperature": 0.6, "stop": ["\n\n"], "vllm": {"max_model_len": 512}})
    assert cfg.rule is not None and cfg.sampling.temperature == 0.6 and cfg.sampling.stop == ("\n\n",)
    assert engine["vllm"] == {"max_model_len": 512} and cfg.sampling.stop_token_ids is None
    with pytest.raises(ValueError, match="unknown profile option"):
        profile_options({"temprature": 0.6})


def test_entropy_gradient_equals_the_full_softmax_entropy_gradient(standin):
    """The entropy bonus's gradient through chunked, recomputed logits is the plain (B, L, V) one."""
    model = hf_model(standin)
    batch = pad_batch(random_sequences(2, 5, model.config.vocab_size), pad_id=0)

    def grad_of(entropy_sum):
        model.zero_grad()
        entropy_sum.backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    _, entropy = token_logprobs(model, batch, 0.6, 3, with_entropy=True, entropy_grad=True)
    chunked = grad_of((entropy * batch.token_mask).sum())
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention).logits.float() / 0.6
    prev = (batch.positions - 1).clamp(min=0)
    step = logits.gather(1, prev[..., None].expand(-1, -1, logits.size(-1))).log_softmax(-1)  # (B, T, V)
    plain = grad_of((-(step.exp() * step).sum(-1) * batch.token_mask).sum())
    assert chunked.keys() == plain.keys() and chunked
    for name in plain:
        torch.testing.assert_close(chunked[name], plain[name], atol=1e-5, rtol=1e-4)


def test_evaluate_reports_mean_pass_and_majority_at_k(pool, standin):
    """mean@4, pass@j (unbiased) and maj@4 by hand, on scripted answers judged by the real verifier."""
    from transformers import AutoTokenizer

    from grpo_data.generation.prompting import PromptConfig, SamplingConfig
    from grpo_data.generation.rollouts import RolloutSampler
    from grpo_data.tables.problems import to_table, user_prompt
    from grpo_train.trainer import evaluate

    scripted = [["\\boxed{4}", "\\boxed{5}", "\\boxed{4}", "\\boxed{5}"],  # 2 right; tie 4 vs 5: 4 came first
                ["\\boxed{8}", "\\boxed{8}", "\\boxed{7}", "no idea"],  # 1 right; the majority says 8
                ["\\boxed{3}"] * 4]  # none right

    class Scripted:
        def generate(self, prompts, n, sampling):
            assert len(prompts) == 3 and n == 4
            return [[Completion(t, (5, 2), "stop") for t in answers] for answers in scripted]

    tok = AutoTokenizer.from_pretrained(standin)
    table = to_table([{"id": f"p{i}", "prompt": user_prompt(f"Q{i}?"), "answer": a, "source": "t", "level": i + 1}
                      for i, a in enumerate(["4", "7", "2"])])
    out = evaluate(RolloutSampler(Scripted(), pool, tok, PromptConfig(), SamplingConfig(max_tokens=8)), table, k=4)
    assert out["heldout_accuracy"] == pytest.approx((0.5 + 0.25 + 0) / 3)
    assert out["heldout_accuracy_se"] == pytest.approx(np.std([0.5, 0.25, 0.0], ddof=1) / np.sqrt(3))
    assert out["heldout_pass_at_1"] == pytest.approx(0.25)
    assert out["heldout_pass_at_2"] == pytest.approx((5 / 6 + 0.5 + 0) / 3)  # 1 - C(n-c,2)/C(4,2)
    assert out["heldout_pass_at_4"] == pytest.approx(2 / 3)
    assert out["heldout_maj_at_4"] == pytest.approx(1 / 3)
    assert out["heldout_accuracy_level_1"] == 0.5 and out["heldout_accuracy_level_3"] == 0.0


@pytest.mark.parametrize("custom_root", [True, False])
def test_a_build_lock_left_by_a_killed_build_is_cleared_and_a_held_one_kept(tmp_path, monkeypatch, custom_root):
    """A process killed while DeepSpeed JIT-builds its CPU collectives op leaves torch's lock file;
    every later start would wait on it forever (seen as idle ranks until a 900 s timeout). A lock a
    live process holds open (a build in progress), and other extensions' locks, are kept."""
    import torch.utils.cpp_extension

    from grpo_train.learner import SHM_OP, clear_stale_build_locks

    if custom_root:  # torch's layouts: TORCH_EXTENSIONS_DIR/name, or DEFAULT_ROOT/py311_cpu/name
        monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
        op_dir = tmp_path / SHM_OP
    else:
        monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
        monkeypatch.setattr(torch.utils.cpp_extension, "get_default_build_root", lambda: str(tmp_path))
        op_dir = tmp_path / "py311_cpu" / SHM_OP
    other = op_dir.parent / "fused_adam" / "lock"
    for lock in (op_dir / "lock", other):
        lock.parent.mkdir(parents=True)
        lock.touch()
    holder = subprocess.Popen([sys.executable, "-c", f"import time; f = open({str(op_dir / 'lock')!r}); "
                               "print('open', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        assert clear_stale_build_locks() == [] and (op_dir / "lock").exists(), "a build in progress keeps its lock"
    finally:
        holder.kill()
        holder.wait()
    assert clear_stale_build_locks() == [op_dir / "lock"]  # its holder is gone: left over
    assert not (op_dir / "lock").exists() and other.exists()  # another extension's lock is not ours
    assert clear_stale_build_locks() == []
