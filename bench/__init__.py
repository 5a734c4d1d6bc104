"""Benchmarks of grpo-curriculum. Each writes its results, with the machine it ran on, to
bench/results/; `grpo bench all` (`make bench`) runs them all and rewrites bench/README.md."""
