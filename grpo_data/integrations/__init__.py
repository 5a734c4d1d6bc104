"""The scheduler inside trainers people already run.

    grpo_data.integrations.trl    TRL's GRPOTrainer: a sampler, a reward wrapper and a callback
    grpo_data.integrations.verl   verl's RayPPOTrainer: a curriculum sampler (0.5-0.7.1: data.sampler.class_path;
                                  0.9: run_with_curriculum)

Both share `feedback.Curriculum`: one scheduler over the trainer's dataset, fed with every group the
trainer scores. Nothing here is imported by the rest of grpo_data; each integration imports its
trainer only when it is used.
"""
