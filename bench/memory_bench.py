"""Memory benchmark (`grpo bench memory`): peak resident memory of one learner step as the batch grows.

One `DeepSpeedLearner.update` (old log-probs, the reference's when `kl_beta` > 0, forward/backward,
optimizer step) on 1x, 4x and 16x the sequences (8, 32, 128) at a fixed micro-batch, on a Qwen2 with
a 151,936-token vocabulary and a tiny decoder (so the head's logits dominate), completions of 256
tokens. Goal: 16x the sequences costs at most 1.25x the peak of 1x. Beside it, the pre-change path
(one forward over the whole batch, (B, L, V) logits; `old_completion_logprobs`): measured where it
fits in memory, computed (`old_path_logit_bytes`) where it would not.

    grpo bench memory [--quick]          # -> bench/results/memory.json

Each configuration runs in a fresh process (`python -m bench.memory_bench --child SPEC --out FILE`).
Peaks are that process's own VmHWM (/proc/self/status), not `ru_maxrss`: a child's `ru_maxrss` starts
at its parent's high-water mark (Linux carries it over `exec`), so it is reported beside, raw.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
VOCAB = 151_936
GROUP_SIZE = 8
PROMPT_TOKENS = 32
MIB = 2**20
OLD_PATH_MEASURE_LIMIT = 16 * 2**30  # measure the old path only where its predicted peak stays below this
# fp32 (B, L, V) / (B, T, V) tensors alive at the old path's peak: see old_path_logit_bytes
OLD_PATH_TENSORS = "1 x (B, L, V) logits + 4 x (B, T, V): gathered logits, log_softmax, 2 entropy temporaries"


def build_model(folder: Path, hidden: int = 64, layers: int = 2, seed: int = 0) -> Path:
    """A Qwen2 with Qwen's vocabulary size and a tiny decoder, plus the tiny tokenizer, saved in `folder`."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from grpo_train.tiny_policy import build_tokenizer

    tokenizer = build_tokenizer()
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=VOCAB, hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=1024, tie_word_embeddings=True, rope_theta=10000.0,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    Qwen2ForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def synthetic_groups(sequences: int, completion_tokens: int, seed: int = 0) -> list:
    """sequences / 8 groups of 8 answers: random prompt and completion ids over the whole vocabulary,
    rewards alternating 0/1 so every advantage is non-zero."""
    from grpo_data.generation.engines import Completion
    from grpo_train.groups import Group

    rng = np.random.default_rng(seed)
    groups = []
    for g in range(sequences // GROUP_SIZE):
        completions = [Completion("", tuple(int(t) for t in rng.integers(0, VOCAB, completion_tokens)),
                                  "length") for _ in range(GROUP_SIZE)]
        groups.append(Group(problem=g, prompt_ids=[int(t) for t in rng.integers(0, VOCAB, PROMPT_TOKENS)],
                            completions=completions, rewards=np.arange(GROUP_SIZE, dtype=np.float64) % 2))
    return groups


def old_completion_logprobs(model, input_ids, attention, positions, mask, with_entropy: bool = False):
    """The pre-change learner's log-probs, kept verbatim for measurement: one forward over the whole
    batch, (B, L, V) logits, (B, T, V) log_softmax. Log-prob of each completion token under `model`:
    (B, T) (0 where masked), and the mean entropy of the predictive distributions at those positions."""
    import torch

    logits = model(input_ids=input_ids, attention_mask=attention).logits.float()  # (B, L, V)
    prev = (positions - 1).clamp(min=0)  # (B, T) position whose logits predict each token
    step_logits = logits.gather(1, prev[..., None].expand(-1, -1, logits.size(-1)))  # (B, T, V)
    logp_all = torch.log_softmax(step_logits, dim=-1)  # (B, T, V)
    tokens = input_ids.gather(1, positions)  # (B, T)
    logp = logp_all.gather(-1, tokens[..., None]).squeeze(-1) * mask  # (B, T)
    entropy = None
    if with_entropy:
        with torch.no_grad():
            ent = -(logp_all.exp() * logp_all).sum(-1)  # (B, T)
            entropy = float((ent * mask).sum() / mask.sum().clamp(min=1))
    return logp, entropy


def old_path_logit_bytes(sequences: int, seq_len: int, completion_len: int, vocab: int = VOCAB) -> int:
    """fp32 bytes of the vocabulary-sized tensors alive at the old path's peak (the entropy, under
    grad): the model's (B, L, V) logits and the gathered (B, T, V) ones are still referenced, the
    log_softmax output is saved for backward, and `-(exp(logp) * logp)` holds two more (B, T, V)
    temporaries at once. The backward pass holds fewer (about 3 x (B, T) + 1 x (B, L) at most)."""
    return 4 * vocab * sequences * (seq_len + 4 * completion_len)


# ------------------------------------------------------------------ measuring (in the child)
def _status_mib(key: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(f"{key} not in /proc/self/status")


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux `clear_refs` 5), so it then holds the step's own peak."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def measured_step(step) -> dict:
    """Run `step()` and return its memory figures (MiB) and wall time."""
    setup_peak, before = _status_mib("VmHWM"), _status_mib("VmRSS")
    reset = _reset_peak()
    start = time.monotonic()
    info = step()
    seconds = time.monotonic() - start
    step_peak = _status_mib("VmHWM")
    return {"pre_step_rss_mib": before, "peak_rss_mib": max(setup_peak, step_peak),
            "step_peak_rss_mib": step_peak if reset else None,
            "step_increment_mib": step_peak - before, "setup_peak_rss_mib": setup_peak,
            "ru_maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "seconds": seconds, **info}


def new_path_step(model: str, sequences: int, completion_tokens: int, micro_batch_tokens: int,
                  kl_beta: float) -> dict:
    from grpo_train.config import AlgoConfig, DeepSpeedSection, OptimConfig
    from grpo_train.learner import DeepSpeedLearner

    learner = DeepSpeedLearner(model, OptimConfig(lr=1e-5, micro_batch_tokens=micro_batch_tokens,
                                                  logit_chunk_tokens=1024),
                               DeepSpeedSection(), AlgoConfig(kl_beta=kl_beta), seed=0, temperature=0.6,
                               max_tokens=completion_tokens)
    groups = synthetic_groups(sequences, completion_tokens)

    def step() -> dict:
        m = learner.update(groups)
        return {"loss_tokens": m["loss_tokens"], "optimizer_steps": m["optimizer_steps"]}

    return measured_step(step)


def old_path_step(model: str, sequences: int, completion_tokens: int) -> dict:
    """One pre-change step in plain torch: old log-probs without grad, then forward with grad,
    token-mean -(logp * adv), backward, AdamW step (DeepSpeed adds nothing to the logits' memory)."""
    import torch
    from transformers import AutoModelForCausalLM

    from grpo_train.core_algos import compute_advantages
    from grpo_train.sequences import build_tensors

    torch.manual_seed(0)
    policy = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-5)
    ids, att, pos, mask, rewards, gids = build_tensors(synthetic_groups(sequences, completion_tokens),
                                                       policy.config.pad_token_id)
    adv = compute_advantages("grpo", rewards, gids)  # (B,)

    def step() -> dict:
        policy.eval()
        with torch.no_grad():
            old_completion_logprobs(policy, ids, att, pos, mask)
        policy.train()
        logp, _ = old_completion_logprobs(policy, ids, att, pos, mask, with_entropy=True)  # (B, T)
        loss = -(logp * adv[:, None]).sum() / mask.sum()
        loss.backward()
        optimizer.step()
        return {"loss_tokens": int(mask.sum()), "optimizer_steps": 1}

    return measured_step(step)


def _child(spec: dict) -> dict:
    kind = spec.pop("kind")
    return new_path_step(**spec) if kind == "new" else old_path_step(**spec)


# ------------------------------------------------------------------ the benchmark (in the parent)
def measure(spec: dict) -> dict:
    """Run one configuration in a fresh process and return its figures."""
    with tempfile.TemporaryDirectory(prefix="memory-bench-") as tmp:
        out = Path(tmp) / "result.json"
        proc = subprocess.run([sys.executable, "-m", "bench.memory_bench", "--child", json.dumps(spec),
                               "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"memory bench child {spec} failed (exit {proc.returncode}):\n"
                               f"{(proc.stdout + proc.stderr)[-4000:]}")
        return json.loads(out.read_text())


def old_path_rows(model: str, multiples: list[int], completion_tokens: int) -> list[dict]:
    """The old path at each size: measured at 1x (and wherever its prediction fits), computed elsewhere
    as the measured 1x peak with its logits swapped for the larger batch's."""
    seq_len = PROMPT_TOKENS + completion_tokens
    rows: list[dict] = []
    for k in multiples:
        n = GROUP_SIZE * k
        logits = old_path_logit_bytes(n, seq_len, completion_tokens)
        row = {"sequences": n, "logit_bytes_computed": logits, "logit_mib_computed": logits / MIB,
               "tensors_assumed": OLD_PATH_TENSORS}
        if rows:  # the measured 1x peak, its logits swapped for this batch's
            base = rows[0]["peak_rss_mib"] - rows[0]["logit_mib_computed"]
            row["peak_rss_mib_computed"] = base + logits / MIB
        if not rows or row["peak_rss_mib_computed"] * MIB < OLD_PATH_MEASURE_LIMIT:
            row |= {"figure": "measured", **measure({"kind": "old", "model": model, "sequences": n,
                                                     "completion_tokens": completion_tokens})}
        else:
            row |= {"figure": "computed", "peak_rss_mib": row["peak_rss_mib_computed"]}
        rows.append(row)
    return rows


def run(quick: bool = False) -> dict:
    multiples = [1, 4] if quick else [1, 4, 16]
    kl_multiples = [] if quick else [1, 16]
    completion_tokens = 64 if quick else 256
    micro = GROUP_SIZE * (PROMPT_TOKENS + completion_tokens)  # 8 sequences per micro-batch
    with tempfile.TemporaryDirectory(prefix="memory-bench-model-") as tmp:
        model = str(build_model(Path(tmp)))
        configs = [(k, 0.0) for k in multiples] + [(k, 0.05) for k in kl_multiples]
        rows = []
        for k, beta in configs:
            spec = {"kind": "new", "model": model, "sequences": GROUP_SIZE * k,
                    "completion_tokens": completion_tokens, "micro_batch_tokens": micro, "kl_beta": beta}
            rows.append({"multiple": k, "sequences": GROUP_SIZE * k, "kl_beta": beta,
                         "micro_batch_tokens": micro, **measure(spec)})
        old = old_path_rows(model, multiples, completion_tokens)
    result = {"vocab": VOCAB, "prompt_tokens": PROMPT_TOKENS, "completion_tokens": completion_tokens,
              "group_size": GROUP_SIZE, "peak_measure": "VmHWM of a fresh process per configuration",
              "configs": rows, "old_path": old, "goal": goal(rows, multiples[-1])}
    print_summary(result)
    return result


def goal(rows: list[dict], top: int, target: float = 1.25) -> dict:
    """Peak at the largest multiple over peak at 1x (kl_beta 0), against the target."""
    by = {r["multiple"]: r for r in rows if r["kl_beta"] == 0}
    ratio = by[top]["peak_rss_mib"] / by[1]["peak_rss_mib"]
    return {f"ratio_{top}x_over_1x": ratio, "target": target, "met": ratio <= target,
            f"increment_ratio_{top}x_over_1x": by[top]["step_increment_mib"] / by[1]["step_increment_mib"]}


def print_summary(result: dict) -> None:
    for r in result["configs"]:
        print(f"new {r['multiple']:>2}x ({r['sequences']} seqs, kl {r['kl_beta']}): peak "
              f"{r['peak_rss_mib']:.0f} MiB, step +{r['step_increment_mib']:.0f} MiB, {r['seconds']:.1f} s")
    for r in result["old_path"]:
        print(f"old {r['sequences']:>3} seqs: peak {r['peak_rss_mib']:.0f} MiB ({r['figure']}), "
              f"logits {r['logit_mib_computed']:.0f} MiB computed")
    print(f"goal: {result['goal']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", required=True, help="JSON spec of one configuration (internal)")
    parser.add_argument("--out", required=True, help="where the child writes its figures")
    args = parser.parse_args()
    Path(args.out).write_text(json.dumps(_child(json.loads(args.child))))


if __name__ == "__main__":
    main()
