"""Training's side of `grpo_data.generation.context`: problems whose prompt cannot fit the engine's context.

The trainer builds its scheduler over the problem table before the engine starts (the engine's seed
depends on the resumed step), so the context is taken from the model config or
`rollout.vllm.max_model_len` (`grpo_data.generation.engines.model_context_length`) and checked against the
started engine (`check_engine_context`). Problems that cannot fit are removed from the training
pool before the scheduler is built (never drawn) and from the held-out set (its accuracy is over
the problems it kept: `heldout_problems`, beside `heldout_left_out`); both are listed with their
reason in the run folder's `left_out.jsonl` (a `split` column says which table they left).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from grpo_data.generation.context import ContextPolicy, measure_problems
from grpo_data.generation.engines import model_context_length
from grpo_data.generation.prompting import PromptConfig, encode_prompt
from grpo_data.tables import io

logger = logging.getLogger(__name__)

LEFT_OUT_FILE = "left_out.jsonl"


@dataclass
class RunFit:
    """The run's tables with the problems that cannot fit removed.

    policy:           the context policy they were measured with (the samplers generate with it).
    left_out:         grpo_data.generation.context.LEFT_OUT_SCHEMA rows plus `split` ("train" or "heldout").
    heldout_left_out: held-out problems left out (0 without a held-out set)."""

    problems: pl.DataFrame
    heldout: pl.DataFrame | None
    policy: ContextPolicy
    left_out: pl.DataFrame
    heldout_left_out: int


def rollout_context(model: str, rollout, trust_remote_code: bool = False) -> ContextPolicy:
    """The context policy of a train config's `rollout` section for `model`."""
    context = model_context_length(model, rollout.vllm.max_model_len, trust_remote_code)
    return ContextPolicy(context, rollout.overlong_prompts, rollout.min_clipped_tokens)


def fit_run_data(problems: pl.DataFrame, heldout: pl.DataFrame | None, tokenizer, prompt: PromptConfig,
                 max_tokens: int, policy: ContextPolicy, out: Path | None) -> RunFit:
    """Leave out of `problems` (and `heldout`) each problem whose prompt, rendered as the samplers
    render it, cannot fit `policy` with `max_tokens`; write them to `out`/left_out.jsonl (None: this
    rank writes nothing). Raises when no training problem fits."""

    def encode(messages):
        return encode_prompt(tokenizer, messages, prompt)

    train = measure_problems(problems, encode, max_tokens, policy, "data.train")
    if train.kept.height == 0:
        raise ValueError(f"no problem of data.train fits the context of {policy.context} tokens with max_tokens "
                         f"{max_tokens} (longest prompt {int(train.left_out['prompt_tokens'].max())} tokens): lower "
                         "rollout.max_tokens, raise rollout.vllm.max_model_len, or use rollout.overlong_prompts=clip")
    frames = [train.left_out.with_columns(pl.lit("train").alias("split"))]
    kept_heldout, heldout_left_out = heldout, 0
    if heldout is not None:
        held = measure_problems(heldout, encode, max_tokens, policy, "data.heldout")
        kept_heldout, heldout_left_out = held.kept, held.left_out.height
        frames.append(held.left_out.with_columns(pl.lit("heldout").alias("split")))
    left_out = pl.concat(frames)
    if out is not None:  # written on every start, so a file from an earlier run in this folder never stays
        io.write_ndjson(Path(out) / LEFT_OUT_FILE, left_out)
    if left_out.height:
        logger.warning("%d training and %d held-out problems left out (prompt does not fit the context): see %s",
                       train.left_out.height, heldout_left_out, Path(out or ".") / LEFT_OUT_FILE)
    return RunFit(train.kept, kept_heldout, policy, left_out, heldout_left_out)
