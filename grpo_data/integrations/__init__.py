"""The scheduler inside trainers people already run.

    grpo_data.integrations.trl    TRL's GRPOTrainer: a sampler, a reward wrapper and a callback
    grpo_data.integrations.verl   verl's RayPPOTrainer: a curriculum sampler (data.sampler.class_path)

Both share `feedback.Curriculum`: one scheduler over the trainer's dataset, fed with every group the
trainer scores. Nothing here is imported by the rest of grpo_data; each integration imports its
trainer only when it is used.
"""
