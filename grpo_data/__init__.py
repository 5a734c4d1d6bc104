"""Data side of grpo-curriculum: the canonical problem table, loaders, the answer verifier,
the embedded arithmetic world, the pass-rate profiler, curriculum shards and the scheduler.

Nothing here imports grpo_train or pipelines.
"""
