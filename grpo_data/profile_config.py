"""What a profile run does: `ProfileConfig` (samples, stopping rule, sampling and prompt, chunking,
seed, priors, answer format, overlong prompts, waves) and `profile_options`, the one place the
`grpo profile` flags and a pipeline's `profile:` section become one (PROFILE_OPTIONS: every option
with its one default)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from grpo_data.curriculum.stats import DEFAULT_BAND, StoppingRule
from grpo_data.generation.context import MIN_CLIPPED_TOKENS, ContextPolicy
from grpo_data.generation.prompting import PromptConfig, SamplingConfig

# Ray backend: seconds an engine actor may take to be placed and load its engine (a 70B model from
# network storage takes minutes); here so `grpo profile --help` states it without importing Ray's side.
START_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class ProfileConfig:
    """What a profile run does.

    k:          samples per problem in fixed mode.
    rule:       adaptive stopping rule; None means fixed k.
    sampling / prompt: the shared generation definition (grpo_data.generation.prompting).
    chunk_size: problems per flushed chunk (the most a crash can lose).
    seed:       the run's seed: each chunk's sampling rounds are seeded from it (`round_seed`).
    prior_groups: adaptive mode's empirical-Bayes prior: "level" fits one per level (when the
                problems have a `level` column; shrunk toward the pool's), "none" one for the pool.
    answer_format: whose rate `n_formatted` counts: "boxed", "none", or "auto" (the prompt config's
                request, else the problems' own instruction; `prompting.detect_format`).
    overlong_prompts: a prompt that cannot fit the engine's context with max_tokens is left out
                ("skip") or profiled with the room left ("clip"; `grpo_data.generation.context`).
    min_clipped_tokens: the smallest clipped budget; a prompt leaving less room is left out anyway.
    wave:       adaptive mode: chunks whose decisions weigh the same history (every chunk of an earlier
                wave; `ProfilePlan`), so that many can be profiled at once; 1 weighs every chunk before.
    fit_prior_weight: adaptive mode with a prior: learn its discount from this model's own samples as
                they come in (`Prior.fit_weight`, `fit_prior_weight`), the prior's weight then the cap
                (given explicitly: `check_fit_settings`; `with_fitted_weight`).
    """

    k: int = 16
    rule: StoppingRule | None = None
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    prompt: PromptConfig = field(default_factory=PromptConfig)
    chunk_size: int = 64
    seed: int = 0
    prior_groups: str = "level"
    answer_format: str = "auto"
    overlong_prompts: str = ContextPolicy.policy
    min_clipped_tokens: int = MIN_CLIPPED_TOKENS
    wave: int = 1
    fit_prior_weight: bool = False

    def __post_init__(self) -> None:
        if self.k < 1 or self.chunk_size < 1 or self.wave < 1:
            raise ValueError("k, chunk_size and wave must be >= 1")
        ContextPolicy(2, self.overlong_prompts, self.min_clipped_tokens)  # refuses a bad policy or floor
        if self.prior_groups not in ("level", "none"):
            raise ValueError(f"prior_groups must be level or none, got {self.prior_groups!r}")

    def to_dict(self) -> dict:
        return {"k": self.k, "rule": asdict(self.rule) if self.rule else None,
                "sampling": self.sampling.to_dict(), "prompt": asdict(self.prompt),
                "chunk_size": self.chunk_size, "seed": self.seed, "prior_groups": self.prior_groups,
                "answer_format": self.answer_format, "overlong_prompts": self.overlong_prompts,
                "min_clipped_tokens": self.min_clipped_tokens, "wave": self.wave,
                **({"fit_prior_weight": True} if self.fit_prior_weight else {})}


PIPELINE_FIT_NAMES = ("profile.fit_prior_weight", "profile.prior_weight", "profile.adaptive")  # as a pipeline spells them


def check_fit_settings(fit: bool, adaptive: bool, has_prior: bool, weight: float | None,
                       names: tuple[str, str, str] = ("--fit-prior-weight", "--prior-weight", "--adaptive")) -> None:
    """Refuse a fitted prior weight (`fit`, ProfileConfig.fit_prior_weight) that would do nothing or
    hide its cap: without a prior, without `adaptive` stopping (fixed k weighs no prior), or without
    the weight given explicitly, which is the fit's cap and what the stages reading the profile must
    pass too (`check_recorded_prior`). `names` spells the fit's, the weight's and adaptive's settings
    (PIPELINE_FIT_NAMES in a pipeline file)."""
    if not fit:
        return
    if not has_prior:
        raise ValueError(f"{names[0]} without a prior: it fits a prior's discount; give one, or leave {names[0]} out")
    if not adaptive:
        raise ValueError(f"{names[0]} without {names[2]}: fixed k weighs no prior; add {names[2]}, or leave "
                         f"{names[0]} out")
    if weight is None:
        raise ValueError(f"{names[0]} needs {names[1]}, the most the fitted weight may reach (e.g. the samples behind "
                         "each prior value, 16 for a k = 16 profile); the stages that read the profile pass the same "
                         "weight")


def with_fitted_weight(prior, cfg: ProfileConfig):
    """`prior` set to fit its weight when the run asks for that (cfg.fit_prior_weight, adaptive);
    unchanged otherwise (None stays None)."""
    from dataclasses import replace

    return replace(prior, fit_weight=True) if prior is not None and cfg.fit_prior_weight and cfg.rule else prior


# Every option a profile run takes, with its one default: `grpo profile` flags and a pipeline's
# `profile:` section both go through `profile_options` (engine and vllm pick the engine, the rest
# build the ProfileConfig).
PROFILE_OPTIONS: dict[str, object] = {
    "engine": None, "vllm": {}, "k": ProfileConfig.k, "adaptive": False, "band": DEFAULT_BAND,
    "confidence": StoppingRule.confidence, "screen_k": StoppingRule.screen_k, "prior_screen_k": StoppingRule.prior_screen_k,
    "step_k": StoppingRule.step_k, "max_k": StoppingRule.max_k, "prior_groups": ProfileConfig.prior_groups,
    "temperature": SamplingConfig.temperature, "top_p": SamplingConfig.top_p, "max_tokens": SamplingConfig.max_tokens,
    "stop": SamplingConfig.stop, "stop_token_ids": SamplingConfig.stop_token_ids,
    "system_prompt": PromptConfig.system_prompt, "instruction_suffix": PromptConfig.instruction_suffix,
    "chunk_size": ProfileConfig.chunk_size, "seed": ProfileConfig.seed, "answer_format": ProfileConfig.answer_format,
    "overlong_prompts": ProfileConfig.overlong_prompts, "min_clipped_tokens": ProfileConfig.min_clipped_tokens,
    "wave": ProfileConfig.wave, "fit_prior_weight": ProfileConfig.fit_prior_weight,
}  # each default read from the dataclass that owns it


def profile_options(options: dict) -> tuple[ProfileConfig, dict]:
    """A ProfileConfig and the engine choice ({"engine", "vllm"}) from options named as in
    PROFILE_OPTIONS; unknown names are errors that list the accepted ones."""
    unknown = sorted(set(options) - set(PROFILE_OPTIONS))
    if unknown:
        raise ValueError(f"unknown profile option(s) {unknown}; accepted: {', '.join(PROFILE_OPTIONS)}")
    o = {**PROFILE_OPTIONS, **{k: v for k, v in options.items() if v is not None or k == "stop_token_ids"}}
    band = o["band"].split(",") if isinstance(o["band"], str) else o["band"]
    lo, hi = (float(x) for x in band)
    rule = (StoppingRule(lo=lo, hi=hi, confidence=float(o["confidence"]), screen_k=int(o["screen_k"]),
                         step_k=int(o["step_k"]), max_k=int(o["max_k"]),
                         prior_screen_k=min(int(o["prior_screen_k"]), int(o["screen_k"]))) if o["adaptive"] else None)
    stop_ids = None if o["stop_token_ids"] is None else tuple(int(i) for i in o["stop_token_ids"])
    cfg = ProfileConfig(
        k=int(o["k"]), rule=rule, chunk_size=int(o["chunk_size"]), seed=int(o["seed"]),
        prior_groups=str(o["prior_groups"]), answer_format=str(o["answer_format"]),
        overlong_prompts=str(o["overlong_prompts"]), min_clipped_tokens=int(o["min_clipped_tokens"]), wave=int(o["wave"]),
        fit_prior_weight=bool(o["fit_prior_weight"]),
        sampling=SamplingConfig(temperature=float(o["temperature"]), top_p=float(o["top_p"]),
                                max_tokens=int(o["max_tokens"]), stop=tuple(o["stop"]), stop_token_ids=stop_ids),
        prompt=PromptConfig(system_prompt=o["system_prompt"], instruction_suffix=o["instruction_suffix"] or ""))
    return cfg, {"engine": o["engine"], "vllm": dict(o["vllm"] or {})}
