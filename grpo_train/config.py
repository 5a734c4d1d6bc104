"""Training configuration's sections: typed, frozen dataclasses, every field documented.

`TrainConfig` holds one section per concern (data, scheduler, rollout, algo, reward, optim,
deepspeed, run, diagnostics); each section checks its own fields, `TrainConfig` the combinations
across sections, refusing a bad one with a message that says what to change. Reading them from YAML
with dotted overrides, and writing the resolved config back, is `grpo_train.config_io`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields

from grpo_data.curriculum.allocation import Sizing, VarianceSchedule, reachable_group_sizes
from grpo_data.curriculum.band_scheduler import BandConfig
from grpo_data.curriculum.peer_schedulers import peer_config
from grpo_data.curriculum.scheduler import PRIOR_SCHEDULERS, SCHEDULERS, SETTINGS_SCHEDULERS, prior_refusal
from grpo_data.curriculum.stats import DEFAULT_GROUP_SIZE
from grpo_data.generation.context import MIN_CLIPPED_TOKENS, OVERLONG_PROMPTS, ContextPolicy
from grpo_data.generation.engine_base import EngineSettings
from grpo_data.generation.engines import ENGINES
from grpo_data.generation.prompting import SamplingConfig
from grpo_train.diagnostics import DiagnosticsConfig

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DataConfig:
    """train: canonical problem table to train on; heldout: table for evaluation (optional);
    profile: offline profile of `train` (optional; the band scheduler's prior);
    prior: another model's difficulty read from `train`'s own columns (band scheduler only;
    `grpo_data.curriculum.priors`: a preset
    such as bigmath, polaris, skywork_7b, lime, dart, avg, or FIELD:SCALE:SAMPLES; a table written by
    `grpo load` keeps the field when loaded with `--prior`): its pseudo-counts join the profile's
    counts, moved by the logit offset fitted on the problems both cover (`priors.merge_offline`), and
    the problems the profile does not cover start from them alone, in difficulty groups of their own
    whose drift learns the offset to the policy; a profile written by `grpo profile --adaptive
    --prior` needs the same prior and weight here (it stopped early where that prior agreed), and
    is refused otherwise, naming them;
    prior_profile: an earlier profile of `train` by another checkpoint or model, as the prior instead
    of `prior` (one source at a time; `grpo_data.curriculum.prior_profile`): joined by id, each problem's rate
    from its k samples; refused when the same weights as `model` or `profile` drew it (reuse it as
    `profile` instead);
    prior_weight: the most pseudo-samples one of its values counts for (the discount; null means 4,
    `grpo_data.curriculum.priors.DEFAULT_WEIGHT`; at least 1; refused without `prior` or `prior_profile`)."""

    train: str = "runs/world/train.parquet"
    heldout: str | None = "runs/world/test.parquet"
    profile: str | None = None
    prior: str | None = None
    prior_profile: str | None = None
    prior_weight: float | None = None


@dataclass(frozen=True)
class SchedulerSection:
    """name: band | uniform | offline_band | pools | greso | thompson | sgpo (the peers' samplers, in
    `grpo_data.curriculum.peer_schedulers` and `.posterior_samplers`; sgpo needs data.profile and
    rollout.sizing=scheduler); settings: the peers' only, by name (e.g. `scheduler.settings.p_easy=0.4`;
    names and sourced defaults in their config classes there; unknown names are refused); lo/hi: target band (default 0.2-0.8; `grpo bench
    e2e_select` on the chain world's validation split has chosen it over 0.2-0.95 once, tied once,
    and lost once (0.808 vs 0.844 for the demo's pinned warm start; the demo now trains with
    uniform + DAPO, chosen by `grpo bench curriculum --split val`, and the default name stays band); it
    keeps more informative groups: choose on validation data where there is some);
    decay: forgetting per step; max_prior_k: cap on the offline profile's weight in samples (null:
    full weight, so the scheduler's first band decisions are the profiler's own); refresh_every:
    steps between re-estimates of a subset (0 = never); refresh_drift: also refresh when a batch's
    pass rate is further than this from the band centre; refresh_size / refresh_k: how many
    problems, samples each; groups: `level` fits one empirical-Bayes prior per level (as the
    adaptive profiler does; without a `level` column the pool's prior, with problems grouped by
    offline-estimate bucket for sharing drift) and refits it online, so what the policy learns on some problems of a level moves the estimates of
    the others; `none` fits one prior for the whole pool; explore: share of each batch drawn
    uniformly from the pool (band only); without_replacement: offer each problem at most once per
    epoch (band only); epoch: `pool` ends an epoch when every problem was offered, `band` when the
    problems not yet offered hold fewer than a batch likely in band, `pass` when they hold fewer
    than a batch worth generating: a pass over the pool that skips the problems whose expected
    chance of a mixed group is below skip_below (not generated, not charged) and trains every
    other one once (`grpo_data.curriculum.band_scheduler`, "Epochs"); refresh_trigger: what else, besides
    every refresh_every steps, starts a refresh: `centre` a batch pass rate further than
    refresh_drift from the band centre, `surprise` one further than refresh_drift from the
    scheduler's own prediction for the problems it generated (stale estimates, not a dry band);
    dry (band only): when too few
    problems are likely in band for a batch, `informative` fills the rest by expected
    informativeness at group_size (never worse than uniform on a calibrated posterior), `widen`
    widens the band step by step (the former rule, which drew all-wrong problems once the band ran
    dry over several passes)."""

    # The band scheduler's settings default to BandConfig's (their one home); `scheduler_start.scheduler_kwargs`
    # hands make_scheduler every field BandConfig shares by name.
    name: str = "band"
    lo: float = BandConfig.lo
    hi: float = BandConfig.hi  # see the docstring: chosen on the validation split
    decay: float = BandConfig.decay
    max_prior_k: float | None = BandConfig.max_prior_k
    refresh_every: int = 0
    refresh_drift: float = 0.25
    refresh_size: int = 64
    refresh_k: int = 4
    groups: str = "level"
    explore: float = BandConfig.explore
    without_replacement: bool = BandConfig.without_replacement
    epoch: str = BandConfig.epoch
    skip_below: float = BandConfig.skip_below
    refresh_trigger: str = "centre"
    dry: str = BandConfig.dry
    settings: dict = field(default_factory=dict)

    def unused_settings(self) -> list[str]:
        """Fields set away from their defaults that scheduler `name` would ignore: the band's own under
        another scheduler (lo/hi always count: they are the band the run's trace measures), and
        without_replacement under the peers', which sample as their papers do."""
        if self.name == "band":
            return []
        own = ("without_replacement",) if self.name in ("uniform", "offline_band") else ()
        taken = {"name", "lo", "hi", "settings", *own}
        return [f.name for f in fields(self) if f.name not in taken and getattr(self, f.name) != f.default]


OVERLONG = ("keep", "mask", "penalty")


def _either(names) -> str:
    """`a, b or c`: the names a registry accepts, for a refusal's message."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


@dataclass(frozen=True)
class RolloutConfig:
    """engine: vllm | hf; group_size: G answers per prompt; batch_groups: informative groups per
    step (per rank); max_rounds: resampling rounds before training on an under-filled batch;
    dynamic_resampling: drop zero-variance groups and ask for replacements; oversample: problems
    asked per missing group in a round; temperature/top_p/max_tokens: sampling (shared with the
    profiler's definition; every learner log-prob is of softmax(logits / temperature));
    stop: stop strings; stop_token_ids: tokens that end an answer (null: the chat template's
    end-of-turn token and EOS); overlong: what happens to answers that hit max_tokens: `keep`
    (rewarded and trained like finished ones), `mask` (kept out of the loss: DAPO's overlong
    filtering), `penalty` (DAPO's soft overlong punishment: reward minus up to overlong_penalty,
    ramping linearly over the last overlong_buffer tokens of the budget);
    instruction_suffix/system_prompt: prompt construction; vllm: engine settings
    (grpo_data.generation.engines.EngineSettings: gpu_memory_utilization, max_model_len, enforce_eager, dtype,
    max_num_seqs, enable_sleep_mode; null means the device kind's default);
    overlong_prompts: a problem whose prompt cannot fit the engine's context (vllm.max_model_len, else
    the model's) with max_tokens is left out of the pool and the held-out set before the scheduler is
    built (`skip`, listed with its reason in the run's left_out.jsonl), or generated with the room
    left (`clip`) unless that is under min_clipped_tokens (`grpo_data.generation.context`).

    Group sizes (`grpo_data.curriculum.allocation.Sizing`): sizing `fixed` gives every problem G answers;
    `allocate` sizes each problem from the scheduler's posterior, within [size_min, size_max], among
    size_candidates x batch_groups offered problems: size_objective `marginal` (default) maximizes
    the expected number of groups holding a right and a wrong answer; `target` gives each problem
    the fewest answers whose expected chance of such a group reaches size_target;
    `sequential` samples rounds of size_round answers and stops a problem at its first mix or at
    size_max. Both spend batch_groups x G answers per step, as a fixed G does. `screen` is SPEED's
    screen-then-continue (arXiv 2506.09016): each round screens size_candidates x (groups still
    needed) problems with size_round answers each; a problem whose screen is a right-and-wrong mix
    gets G - size_round more (its screen joins the group), the rest stop at the screen, every answer
    charged; it needs dynamic_resampling and size_round < group_size. g_schedule `variance`
    doubles G when the mean within-group reward variance of the last g_window steps exceeds g_high
    and halves it below g_low, within [g_min, g_max], keeping batch_groups x G answers per step."""

    engine: str = "vllm"
    group_size: int = DEFAULT_GROUP_SIZE
    batch_groups: int = 16
    max_rounds: int = 4
    dynamic_resampling: bool = True
    oversample: float = 1.25
    # sampling: SamplingConfig's defaults and checks (`sampling()`)
    temperature: float = SamplingConfig.temperature
    top_p: float = SamplingConfig.top_p
    max_tokens: int = SamplingConfig.max_tokens
    stop: tuple[str, ...] = SamplingConfig.stop
    stop_token_ids: tuple[int, ...] | None = SamplingConfig.stop_token_ids
    overlong: str = "keep"
    overlong_buffer: int = 0
    overlong_penalty: float = 1.0
    instruction_suffix: str = ""
    system_prompt: str | None = None
    vllm: EngineSettings = field(default_factory=EngineSettings)
    overlong_prompts: str = ContextPolicy.policy
    min_clipped_tokens: int = MIN_CLIPPED_TOKENS
    sizing: str = "fixed"
    size_target: float = 0.8
    size_min: int = 2
    size_max: int = 32
    size_round: int = 4
    size_candidates: float = 2.0
    size_objective: str = "marginal"
    g_schedule: str = "fixed"
    g_min: int = 2
    g_max: int = 64
    g_window: int = 10
    g_low: float = 0.05
    g_high: float = 0.20

    def __post_init__(self) -> None:
        self.sampling()  # SamplingConfig refuses a bad temperature, top_p or max_tokens
        self.group_sizing()  # refuses a bad combination with its message
        if self.overlong_prompts not in OVERLONG_PROMPTS or self.min_clipped_tokens < 1:
            raise ValueError(f"rollout.overlong_prompts must be skip or clip (got {self.overlong_prompts!r}) and "
                             f"rollout.min_clipped_tokens >= 1 (got {self.min_clipped_tokens})")
        if self.sizing == "screen" and not (self.size_round < self.group_size and self.dynamic_resampling):
            raise ValueError(f"rollout.sizing=screen screens size_round answers of each group of group_size and drops "
                             f"the screens that stop: it needs size_round < group_size (got {self.size_round} and "
                             f"{self.group_size}) and dynamic_resampling=true")
        if self.g_schedule not in ("fixed", "variance"):
            raise ValueError(f"rollout.g_schedule={self.g_schedule!r}: choose fixed or variance")
        if self.g_schedule == "variance":
            if self.sizing != "fixed":
                raise ValueError("rollout.g_schedule=variance changes one G for every problem: use it with sizing=fixed")
            self.variance_schedule()
            answers = self.batch_groups * self.group_size
            bad = [g for g in reachable_group_sizes(self.group_size, self.g_min, self.g_max) if answers % g]
            if bad:
                raise ValueError(f"rollout.g_schedule=variance keeps batch_groups x group_size = {answers} answers per "
                                 f"step, which G = {bad} does not divide; pick g_min/g_max/batch_groups so it does")

    def sampling(self, logprobs: bool = False) -> SamplingConfig:
        """The sampling settings rollouts and evaluation draw with (one definition with the profiler's)."""
        return SamplingConfig(temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens,
                              stop=tuple(self.stop), stop_token_ids=self.stop_token_ids, logprobs=logprobs)

    def group_sizing(self) -> Sizing:
        return Sizing(self.sizing, self.size_target, self.size_min, self.size_max, self.size_round,
                      self.size_candidates, self.size_objective)

    def most_groups_per_step(self) -> int:
        """Groups one rank can train in a step: batch_groups, or more where groups get smaller
        (the variance schedule's g_min, or allocated / sequential groups of size_min)."""
        answers = self.batch_groups * self.group_size
        if self.g_schedule == "variance":
            return answers // min(reachable_group_sizes(self.group_size, self.g_min, self.g_max))
        return self.batch_groups if self.sizing in ("fixed", "screen") else answers // self.size_min

    def variance_schedule(self) -> VarianceSchedule:
        return VarianceSchedule(self.group_size, self.g_min, self.g_max, self.g_window, self.g_low, self.g_high)


@dataclass(frozen=True)
class AlgoConfig:
    """advantage: any registered estimator (grpo_train.core_algos: grpo | dr_grpo | rloo | softmax_z |
    window_norm | hybrid | length_norm | batch_norm); aggregation: token_mean | seq_mean |
    seq_sum_norm (each sequence's token sum over max_tokens: Dr. GRPO's constant normalizer); null
    picks seq_sum_norm for dr_grpo (so it has no length bias left), seq_mean for GSPO and token_mean
    otherwise; clip_low/high: ratio clip range (clip-higher); null picks 0.2/0.28 for token ratios
    and GSPO's 3e-4/4e-4 for sequence ratios (a length-normalized ratio seldom leaves 0.2);
    ratio_level: token | sequence (GSPO); kl_beta: k3 KL coefficient (0 skips the
    reference model), the starting value when kl_target > 0; kl_target: adapt beta toward this KL
    per token (0 = fixed beta), kl_horizon: its speed (`controllers.AdaptiveKL`); track_kl: load
    the reference model and log the KL even when kl_beta = 0 (one more forward); entropy_coef:
    entropy bonus; eps: std epsilon in advantages and the zero-variance test; tau: softmax_z
    temperature; hybrid_weight: hybrid's weight on the group-relative term; length_lambda:
    length_norm's weight on the relative length deviation; window_groups: groups in window_norm's
    window (at least the groups of one step: rollout.batch_groups x run.ranks);
    tis_cap: truncated importance sampling of the rollout/learner mismatch, weights
    min(pi_learner / pi_rollout, tis_cap) per token (0 = off)."""

    advantage: str = "grpo"
    aggregation: str | None = None
    clip_low: float | None = None
    clip_high: float | None = None
    ratio_level: str = "token"
    kl_beta: float = 0.0
    kl_target: float = 0.0
    kl_horizon: float = 10.0
    track_kl: bool = False
    entropy_coef: float = 0.0
    eps: float = 1e-6
    tau: float = 0.3
    hybrid_weight: float = 0.7
    length_lambda: float = 1.0
    window_groups: int = 100
    tis_cap: float = 0.0

    def __post_init__(self) -> None:
        if self.aggregation is None:
            agg = ("seq_sum_norm" if self.advantage == "dr_grpo" else "seq_mean" if self.ratio_level == "sequence"
                   else "token_mean")
            object.__setattr__(self, "aggregation", agg)
        low, high = (3e-4, 4e-4) if self.ratio_level == "sequence" else (0.2, 0.28)
        if self.clip_low is None:
            object.__setattr__(self, "clip_low", low)
        if self.clip_high is None:
            object.__setattr__(self, "clip_high", high)


@dataclass(frozen=True)
class RewardConfig:
    """The training reward: a weighted sum of registered rewards (grpo_data.verify.rewards: correctness |
    format | length_penalty), each term a mapping {name, weight, and that reward's options}. An
    answer any term cannot score (its gold answer cannot be read; a verifier timeout or error too
    under `{name: correctness, undecided: none}`) gets no reward: it is kept out of the loss and out
    of its group's statistics. The scheduler and the zero-variance rule always see correctness."""

    terms: tuple = ({"name": "correctness", "weight": 1.0},)


@dataclass(frozen=True)
class OptimConfig:
    """AdamW settings (grad_clip 0 = no clipping); minibatches: optimizer steps per rollout batch (old log-probs computed once);
    micro_batch_tokens: most padded tokens (rows x longest row) per forward/backward, gradients
    accumulate over micro-batches (memory follows this, not the batch); logit_chunk_tokens:
    completion positions whose (chunk, vocabulary) logits exist at once; gradient_checkpointing:
    recompute the decoder's activations in the backward pass (less memory, about a third more time);
    lr_schedule: constant | linear | cosine (decay to lr * min_lr_ratio at the run's last optimizer
    step: run.steps x minibatches, or fewer when run.max_rollouts bounds the run, see
    `schedule_steps`), after warmup_steps optimizer steps of linear warmup (`controllers.lr_factor`).
    lr: the default 1e-6 is for the models this trains in earnest (1.5B-70B; TRL's and verl's default
    too); a tiny policy needs more: the embedded demo trains at 3e-5, chosen on validation."""

    lr: float = 1e-6
    lr_schedule: str = "constant"
    warmup_steps: int = 0
    min_lr_ratio: float = 0.0
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.99)
    eps: float = 1e-8
    grad_clip: float = 1.0
    minibatches: int = 1
    micro_batch_tokens: int = 16384
    logit_chunk_tokens: int = 1024
    gradient_checkpointing: bool = False


@dataclass(frozen=True)
class DeepSpeedSection:
    """zero_stage: 0-3; bf16: train in bf16 (fp32 master weights)."""

    zero_stage: int = 0
    bf16: bool = False


@dataclass(frozen=True)
class RunConfig:
    """steps: optimizer steps; max_rollouts: stop early once this many rollouts were generated
    (0 = no budget; for equal-budget comparisons); token_budget: stop once charged_tokens plus the
    tokens generated (every one: dropped groups, screens, refresh) reach it (0 = none); charged_tokens:
    tokens spent for this run before it (an offline profile's), on the clock of eval_every_tokens and
    token_budget, never added to the logged tokens_generated; eval_every/save_every: in steps (0 = never);
    eval_every_rollouts / eval_every_tokens: also evaluate after the step whose rollouts / generated
    tokens (all charged) cross a multiple of this (0 = off): runs whose steps differ are read alike;
    keep_last: newest checkpoints kept (0 = keep every one); eval_k: samples per held-out problem;
    eval_k_ends: samples per held-out problem at the run's first and last evaluations (0 = eval_k):
    the start-to-end gain, and arms compared at the budget, are read at this k (paired per problem,
    32 resolves about 0.004 on 400 problems where 4 resolves about 0.01);
    eval_limit: held-out problems used (0 = all); eval_first: evaluate before the first step (runs
    that share a starting policy and seed can skip it); ranks: processes `grpo pipeline` launches
    training with (`deepspeed --num_gpus RANKS --module pipelines.cli train ...`)."""

    out: str = "runs/train"
    steps: int = 40
    max_rollouts: int = 0
    token_budget: int = 0
    charged_tokens: int = 0
    seed: int = 0
    eval_every: int = 10
    eval_every_rollouts: int = 0
    eval_every_tokens: int = 0
    eval_k: int = 4
    eval_k_ends: int = 0
    eval_limit: int = 0
    eval_first: bool = True
    save_every: int = 20
    keep_last: int = 2
    threads: int = 2
    progress: bool = True
    ranks: int = 1


@dataclass(frozen=True)
class TrainConfig:
    model: str = "runs/policy-warm"
    trust_remote_code: bool = False
    data: DataConfig = field(default_factory=DataConfig)
    scheduler: SchedulerSection = field(default_factory=SchedulerSection)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    deepspeed: DeepSpeedSection = field(default_factory=DeepSpeedSection)
    run: RunConfig = field(default_factory=RunConfig)
    diagnostics: DiagnosticsConfig = field(default_factory=DiagnosticsConfig)

    def __post_init__(self) -> None:
        from grpo_data.verify.rewards import check_terms
        from grpo_train.controllers import LR_SCHEDULES
        from grpo_train.core_algos import ADVANTAGES, AGGREGATIONS

        object.__setattr__(self, "reward", RewardConfig(check_terms(self.reward.terms)))

        checks = [
            (self.rollout.engine in ENGINES, f"rollout.engine must be {_either(ENGINES)}, got {self.rollout.engine!r}"),
            (self.rollout.group_size >= 2, "rollout.group_size must be >= 2: GRPO learns from differences in a group"),
            (self.rollout.batch_groups >= 1, "rollout.batch_groups must be >= 1"),
            (self.rollout.max_rounds >= 1, "rollout.max_rounds must be >= 1"),
            (self.algo.advantage in ADVANTAGES, f"algo.advantage must be one of {sorted(ADVANTAGES)}"),
            (self.algo.aggregation in AGGREGATIONS, f"algo.aggregation must be one of {sorted(AGGREGATIONS)}"),
            (0 <= self.algo.clip_low < 1 and self.algo.clip_high >= 0, "need 0 <= algo.clip_low < 1 and clip_high >= 0"),
            (self.deepspeed.zero_stage in (0, 1, 2, 3), "deepspeed.zero_stage must be 0, 1, 2 or 3"),
            (self.optim.minibatches >= 1, "optim.minibatches must be >= 1"),
            (self.scheduler.name in SCHEDULERS,
             f"scheduler.name must be {_either(SCHEDULERS)}, got {self.scheduler.name!r}"),
            (self.scheduler.name in SETTINGS_SCHEDULERS or not self.scheduler.settings,
             f"scheduler.settings is for {', '.join(SETTINGS_SCHEDULERS)}; {self.scheduler.name}'s settings are the "
             "scheduler section's own fields"),
            (self.scheduler.name != "sgpo" or self.data.profile, "scheduler.name=sgpo needs data.profile (its sizes, "
             "filter and order come from one offline profile of data.train)"),
            ((self.rollout.sizing == "scheduler") == (self.scheduler.name == "sgpo"), "rollout.sizing=scheduler takes "
             f"each group's size from the scheduler, and only sgpo gives sizes (got {self.scheduler.name})"),
            (self.scheduler.epoch in ("pool", "band", "pass"),
             f"scheduler.epoch must be pool, band or pass, got {self.scheduler.epoch!r}"),
            (0 <= self.scheduler.skip_below < 1, f"scheduler.skip_below must be in [0, 1), got {self.scheduler.skip_below}"),
            (self.scheduler.refresh_trigger in ("centre", "surprise"),
             f"scheduler.refresh_trigger must be centre or surprise, got {self.scheduler.refresh_trigger!r}"),
            (self.scheduler.refresh_trigger != "surprise" or (self.scheduler.name == "band" and self.rollout.sizing == "fixed"),
             "scheduler.refresh_trigger=surprise compares each batch with the band scheduler's own predictions: it "
             f"needs scheduler.name=band (got {self.scheduler.name}) and rollout.sizing=fixed (got {self.rollout.sizing}; "
             "sizes chosen after seeing answers bias the comparison); use refresh_trigger=centre otherwise"),
            (self.scheduler.groups in ("level", "none"),
             f"scheduler.groups must be level or none, got {self.scheduler.groups!r}"),
            (self.scheduler.name != "offline_band" or self.data.profile,
             "scheduler.name=offline_band needs data.profile (an offline profile of data.train)"),
            (not self.data.prior or self.scheduler.name in PRIOR_SCHEDULERS,
             prior_refusal(self.scheduler.name, "data.prior")),
            (not self.data.prior_profile or self.scheduler.name in PRIOR_SCHEDULERS,
             prior_refusal(self.scheduler.name, "data.prior_profile")),
            (not (self.data.prior and self.data.prior_profile),
             f"data.prior {self.data.prior} and data.prior_profile {self.data.prior_profile}: one prior source at a "
             "time (another model's difficulty from a column of data.train, or an earlier profile); drop one"),
            (self.data.prior_weight is None or self.data.prior_weight >= 1,
             f"data.prior_weight must be at least 1 pseudo-sample, got {self.data.prior_weight}"),
            (self.data.prior_weight is None or self.data.prior or self.data.prior_profile,
             f"data.prior_weight {self.data.prior_weight} without data.prior or data.prior_profile: the weight "
             "discounts a prior and does nothing alone; set one of them too, or leave data.prior_weight out"),
            (self.rollout.temperature > 0, "rollout.temperature must be > 0: greedy groups have no variance"),
            (self.rollout.overlong in OVERLONG, f"rollout.overlong must be one of {OVERLONG}, got {self.rollout.overlong!r}"),
            (self.rollout.overlong != "penalty" or 0 < self.rollout.overlong_buffer <= self.rollout.max_tokens,
             "rollout.overlong=penalty needs 0 < rollout.overlong_buffer <= rollout.max_tokens"),
            (self.optim.micro_batch_tokens >= 1 and self.optim.logit_chunk_tokens >= 1,
             "optim.micro_batch_tokens and optim.logit_chunk_tokens must be >= 1"),
            (self.algo.tis_cap >= 0, "algo.tis_cap must be >= 0 (0 = off)"),
            (self.algo.ratio_level in ("token", "sequence"),
             f"algo.ratio_level must be token or sequence (GSPO), got {self.algo.ratio_level!r}"),
            (self.algo.kl_target >= 0 and (self.algo.kl_target == 0 or self.algo.kl_beta > 0),
             "algo.kl_target > 0 adapts algo.kl_beta: set a starting kl_beta > 0 (it loads the reference model)"),
            (self.algo.tau > 0 and 0 <= self.algo.hybrid_weight <= 1 and self.algo.length_lambda >= 0
             and self.algo.kl_horizon > 0,
             "need algo.tau > 0, 0 <= algo.hybrid_weight <= 1, algo.length_lambda >= 0 and algo.kl_horizon > 0"),
            (self.algo.window_groups >= 1, "algo.window_groups must be >= 1"),
            (self.algo.advantage != "window_norm"
             or self.algo.window_groups >= self.rollout.most_groups_per_step() * self.run.ranks,
             f"algo.window_groups ({self.algo.window_groups}) must hold at least one step's groups "
             f"(at most {self.rollout.most_groups_per_step()} per rank x run.ranks {self.run.ranks}, "
             "counting smaller G under rollout.g_schedule or sizing)"),
            (self.optim.lr_schedule in LR_SCHEDULES,
             f"optim.lr_schedule must be one of {LR_SCHEDULES}, got {self.optim.lr_schedule!r}"),
            (not self.run.token_budget or self.optim.lr_schedule == "constant" or self.run.max_rollouts, "a decaying "
             "optim.lr_schedule needs a horizon run.token_budget cannot give: bound the run by run.max_rollouts too"),
            (self.diagnostics.window >= 2, "diagnostics.window must be >= 2 steps"),
            (self.optim.warmup_steps >= 0 and 0 <= self.optim.min_lr_ratio <= 1,
             "need optim.warmup_steps >= 0 and 0 <= optim.min_lr_ratio <= 1"),
            (self.run.keep_last >= 0 and self.run.ranks >= 1, "run.keep_last must be >= 0 and run.ranks >= 1"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(msg)
        if unused := self.scheduler.unused_settings():
            raise ValueError(f"scheduler.name={self.scheduler.name} does not use "
                             f"{', '.join(f'scheduler.{name}' for name in unused)}: leave them out, or use scheduler.name=band")
        if self.scheduler.name in SETTINGS_SCHEDULERS:  # refuses unknown or bad settings
            peer_config(self.scheduler.name, self.scheduler.settings, SETTINGS_SCHEDULERS[self.scheduler.name])
        if self.data.prior:
            from grpo_data.curriculum.priors import PriorError, parse_spec

            try:
                parse_spec(self.data.prior)  # a malformed spec is refused before any engine starts
            except PriorError as exc:
                raise ValueError(f"data.prior: {exc}") from None
        if self.algo.ratio_level == "sequence" and max(self.algo.clip_low, self.algo.clip_high) >= 0.01:
            logger.warning("algo.ratio_level=sequence with clip %s/%s: a length-normalized sequence ratio seldom "
                           "leaves +-0.01, so this barely clips (GSPO uses 3e-4/4e-4; leave clip_low/high unset "
                           "to get them)", self.algo.clip_low, self.algo.clip_high)


def schedule_steps(cfg: TrainConfig, world: int = 1) -> int:
    """Optimizer steps the learning-rate schedule spans: run.steps x minibatches, or, when a rollout
    budget stops the run first, the most steps that budget allows (every step generates at least
    batch_groups x G rollouts on each of `world` ranks; resampling makes steps fewer, so a
    budget-bound run ends before its decay does, never after)."""
    steps = cfg.run.steps
    if cfg.run.max_rollouts:
        per_step = cfg.rollout.batch_groups * cfg.rollout.group_size * world
        steps = min(steps, -(-cfg.run.max_rollouts // per_step))
    return steps * cfg.optim.minibatches
