"""Data side of grpo-curriculum: everything up to the batch the trainer gets.

    tables        the canonical problem table: loaders, mixtures, decontamination, shards, cards,
                  exports, reading a profile back, the embedded world, atomic writes
    verify        math-verify verdicts in killable workers, reading final answers, rewards
    generation    prompts and sampling, the vLLM and transformers engines, scored rollouts
    curriculum    pass-rate posteriors, the band scheduler and the peers' samplers, priors, allocation
    profiler      the offline pass-rate estimator (one process or torchrun ranks): its plan and loop;
                  beside it profile_config (ProfileConfig, the options), profile_chunks (one chunk's
                  rounds and rows, seeded by generation.seeding), profile_metadata (what produced a
                  profile), profile_parts (parts on disk, resume checks, merge); ray_profile on Ray
    integrations  the scheduler inside TRL's and verl's trainers

The rooms group modules by what they are about; they are not layers (a shard card reads posteriors,
a profile prior reads shards). Modules import each other without a circle (tests/test_layout.py),
and nothing here imports grpo_train or pipelines.
"""
