"""Training side of grpo-curriculum: the tiny-policy warm start, GRPO math and the DeepSpeed learner.

Imports grpo_data, never pipelines.
"""
