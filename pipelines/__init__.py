"""Entry points of grpo-curriculum: the `grpo` command line and YAML pipelines.

Imports flow one way: pipelines -> grpo_train -> grpo_data.
"""
