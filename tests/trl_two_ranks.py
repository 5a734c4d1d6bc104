"""TRL's GRPOTrainer on 2 CPU processes (accelerate launch) driven by the scheduler; each rank writes
what it saw to OUT/rank{R}.json. Run by tests/test_integrations_trl.py:

    accelerate launch --cpu --num_processes 2 tests/trl_two_ranks.py POLICY DATA_DIR OUT
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    import datasets
    import torch.distributed as dist
    from trl import GRPOConfig, GRPOTrainer

    from grpo_data.integrations.trl import TRLCurriculum

    policy, data_dir, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    files = sorted(str(p) for p in data_dir.glob("bucket=*/*.parquet"))
    ds = datasets.load_dataset("parquet", data_files=files, split="train")
    seen: list = []

    def half_right(prompts=None, completions=None, id=None, **kwargs):
        seen.append(list(id))
        return [1.0 if i % 2 == 0 else 0.0 for i in range(len(completions))]

    cur = TRLCurriculum.from_dataset(ds, seed=0, decay=1.0, share=False)
    args = GRPOConfig(output_dir=str(out / "run"), use_cpu=True, num_generations=4, per_device_train_batch_size=4,
                      max_completion_length=8, max_steps=3, save_strategy="no", logging_steps=1, report_to=[],
                      temperature=0.6, seed=0)
    trainer = GRPOTrainer(model=policy, reward_funcs=[half_right], args=args, train_dataset=ds)
    cur.attach(trainer)
    a0 = cur.curriculum.scheduler.successes.copy()
    trainer.train()
    sched = cur.curriculum.scheduler
    rank = dist.get_rank() if dist.is_initialized() else 0
    (out / f"rank{rank}.json").write_text(json.dumps({
        "world": dist.get_world_size() if dist.is_initialized() else 1, "seen": seen,
        "blocks": cur.sampler.epoch_blocks[:3], "a": sched.successes.tolist(), "a0": a0.tolist(), "b": sched.failures.tolist(),
        "ids": cur.curriculum.ids}))


if __name__ == "__main__":
    main()
