"""Generation engines behind one interface: vLLM (default wherever it imports) and transformers `generate`.

    engine = make_engine("vllm", model_path, seed=0)
    groups = engine.generate(prompts, n=16, sampling=SamplingConfig(temperature=1.0, max_tokens=32))
    # groups[i] is a list of n Completion for prompts[i]

Prompts are token ids from `grpo_data.generation.prompting.encode_prompt` (what profiling, training and
evaluation all pass, so the learner scores exactly the tokens the engine saw, with exactly the
template's special tokens), or finished strings (tokenized with no special tokens added). vLLM lives in `grpo_data.generation.vllm_engine` (the only module importing vllm); the
transformers engine here is the reference and the fallback.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from grpo_data.generation.engine_base import (  # noqa: F401 - re-exported: the factory is the engines' public surface
    ENGINE_NOISE,
    Completion,
    EngineSettings,
    GenerationEngine,
    check_sampling,
    install_engine_log_filters,
    set_vllm_env_defaults,
)
from grpo_data.generation.prompting import SamplingConfig

logger = logging.getLogger(__name__)

ENGINES = ("vllm", "hf")


def check_model_path(model: str) -> None:
    """Fail early, before any data is read, when a local model path does not exist."""
    path = Path(model).expanduser()
    if path.exists():
        if path.is_dir() and not (path / "config.json").exists():
            raise FileNotFoundError(f"model folder {model} has no config.json (save it with save_pretrained)")
        return
    if model.startswith(("/", ".", "~")) or model.count("/") > 1:
        raise FileNotFoundError(f"model path {model} does not exist (give a local folder or a Hub name)")


# config keys that bound a model's positions, as vLLM reads them (the smallest present wins)
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "max_sequence_length",
                "max_seq_length", "seq_len")


def config_context_length(config, model: str = "the model") -> int:
    """The longest prompt + completion a model config allows: the smallest of its CONTEXT_KEYS (of
    its text config, for multimodal ones)."""
    config = getattr(config, "text_config", None) or config
    found = [int(v) for k in CONTEXT_KEYS if isinstance(v := getattr(config, k, None), int) and v > 0]
    if not found:
        raise ValueError(f"{model}: its config names no context length ({', '.join(CONTEXT_KEYS)}); "
                         "set the engine's max_model_len")
    return min(found)


def model_context_length(model: str, max_model_len: int | None = None, trust_remote_code: bool = False) -> int:
    """The context an engine for `model` will have, before starting one: max_model_len when given,
    else the model config's (what vLLM derives in the usual case; `check_engine_context` compares
    with the started engine's)."""
    if max_model_len is not None:
        return max_model_len
    from transformers import AutoConfig

    return config_context_length(AutoConfig.from_pretrained(model, trust_remote_code=trust_remote_code), model)


def check_engine_context(engine, fitted_to: int) -> None:
    """Problems were fitted to `fitted_to` tokens before the engine started: an engine with a shorter
    context would refuse some of them mid-run, so that is an error here."""
    if engine.context_length < fitted_to:
        raise ValueError(f"the {engine.name} engine's context is {engine.context_length} tokens, the problems were "
                         f"fitted to {fitted_to} (the model config's); set the engine's max_model_len to "
                         f"{engine.context_length} so they are fitted to the context it has")
    if engine.context_length > fitted_to:
        logger.info("the %s engine's context is %d tokens; problems were fitted to %d", engine.name,
                    engine.context_length, fitted_to)


def vllm_available() -> bool:
    try:
        import vllm  # noqa: F401
    except ImportError:
        return False
    return True


def default_engine() -> str:
    return "vllm" if vllm_available() else "hf"


def engine_settings(values: dict | None) -> EngineSettings:
    """EngineSettings from a mapping (a config's `vllm:` section); unknown keys are errors."""
    import dataclasses

    values = dict(values or {})
    accepted = [f.name for f in dataclasses.fields(EngineSettings)]
    unknown = sorted(set(values) - set(accepted))
    if unknown:
        raise ValueError(f"unknown vllm setting(s) {unknown}; accepted: {', '.join(accepted)}")
    return EngineSettings(**values)


def make_engine(name: str, model: str, seed: int = 0, settings: EngineSettings = EngineSettings(),
                **kwargs) -> GenerationEngine:
    """An engine by name ("vllm" or "hf"); unknown names and missing model paths fail here."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; choose one of: {', '.join(ENGINES)}")
    check_model_path(model)
    if name == "vllm":
        from grpo_data.generation.vllm_engine import VLLMEngine

        return VLLMEngine(model, seed=seed, settings=settings, **kwargs)
    return HFEngine(model, seed=seed, **kwargs)


def pin_local_device() -> None:
    """Under a launcher (torchrun sets LOCAL_RANK) with independent engines per rank (profiling),
    make this rank see only its own GPU, so every rank's engine does not land on device 0. Must run
    before CUDA is initialized; a no-op without LOCAL_RANK."""
    local = os.environ.get("LOCAL_RANK")
    if local is None or int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1"))) <= 1:
        return
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    devices = visible.split(",") if visible else None
    if devices is None:
        import torch  # device count without initializing a CUDA context

        count = torch.cuda.device_count()
        if count == 0:
            return
        devices = [str(i) for i in range(count)]
    os.environ["CUDA_VISIBLE_DEVICES"] = devices[int(local) % len(devices)]


def cut_at_stop(ids: list[int], text_of, stop_ids: tuple[int, ...], stop: tuple[str, ...], max_tokens: int,
                pad_id: int | None) -> tuple[list[int], str, str]:
    """A completion from raw generated ids, as vLLM reports it: ids up to and including the first stop
    token, text cut before the first stop string, finish reason "stop" or "length"."""
    stop_set = set(stop_ids)
    for j, t in enumerate(ids):
        if t in stop_set:
            ids = ids[: j + 1]
            return ids, _cut_text(text_of(ids), stop)[0], "stop"
    if pad_id is not None:
        while ids and ids[-1] == pad_id:  # HF pads sequences that finished on a stop string
            ids = ids[:-1]
    text, stopped = _cut_text(text_of(ids), stop)
    return ids, text, "stop" if stopped or len(ids) < max_tokens else "length"


def _cut_text(text: str, stop: tuple[str, ...]) -> tuple[str, bool]:
    hits = [text.find(s) for s in stop if s and s in text]
    return (text[: min(hits)], True) if hits else (text, False)


class HFEngine:
    """transformers `generate`: reference implementation and fallback where vLLM is missing."""

    name = "hf"

    def __init__(self, model: str, seed: int = 0, batch_size: int = 256, trust_remote_code: bool = False,
                 device: str | None = None, threads: int | None = None, **_ignored) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads:
            torch.set_num_threads(threads)
        self.model_path = model
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.tokenizer = AutoTokenizer.from_pretrained(model, trust_remote_code=trust_remote_code)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(model, trust_remote_code=trust_remote_code).to(self.device)
        self.model.eval()
        # the limit vLLM would enforce for this model: both engines leave out (or clip) the same prompts
        self.context_length = config_context_length(self.model.config, model)
        self.batch_size = batch_size
        self.generator = torch.Generator(device="cpu").manual_seed(seed)
        self._seed = seed

    def reseed(self, seed: int) -> None:
        """Each batch of `generate` seeds torch's global RNG from this generator, so after the same
        reseed the same calls draw the same samples (batches are cut from the call's prompts alone)."""
        import torch

        self.generator = torch.Generator(device="cpu").manual_seed(seed)

    def generate(self, prompts: list[str] | list[list[int]], n: int, sampling: SamplingConfig) -> list[list[Completion]]:
        import torch

        check_sampling(n, sampling)
        stop_ids = sampling.stop_token_ids if sampling.stop_token_ids is not None else (self.tokenizer.eos_token_id,)
        per_batch = max(1, self.batch_size // n)
        out: list[list[Completion]] = []
        for start in range(0, len(prompts), per_batch):
            chunk = prompts[start : start + per_batch]
            if chunk and not isinstance(chunk[0], str):  # token ids: left-pad ourselves
                enc = self.tokenizer.pad({"input_ids": [list(c) for c in chunk]}, return_tensors="pt").to(self.device)
            else:
                enc = self.tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
            # torch's global RNG drives HF sampling; reseed per chunk from our generator for determinism
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=self.generator)))
            with torch.no_grad():
                gen = self.model.generate(
                    **enc, do_sample=sampling.temperature > 0, temperature=sampling.temperature or None,
                    top_p=sampling.top_p, top_k=0, max_new_tokens=sampling.max_tokens, num_return_sequences=n,
                    pad_token_id=self.tokenizer.pad_token_id, eos_token_id=list(stop_ids),
                    stop_strings=list(sampling.stop) or None, tokenizer=self.tokenizer if sampling.stop else None,
                    output_scores=sampling.logprobs, return_dict_in_generate=True,
                )
            width = enc["input_ids"].shape[1]
            new = gen.sequences[:, width:]  # (len(chunk) * n, <= max_tokens)
            if sampling.logprobs:  # scores are the processed logits (temperature, top-p) each token was drawn from
                steps = torch.stack(gen.scores, dim=1).float().log_softmax(-1)  # (rows, steps, V)
                token_logp = steps.gather(-1, new[:, : steps.size(1), None]).squeeze(-1).tolist()
            rows = new.tolist()
            for i in range(len(chunk)):
                group = []
                for r in range(i * n, (i + 1) * n):
                    ids, text, reason = cut_at_stop(
                        rows[r], lambda x: self.tokenizer.decode(x, skip_special_tokens=True), tuple(stop_ids),
                        sampling.stop, sampling.max_tokens, self.tokenizer.pad_token_id)
                    lp = tuple(token_logp[r][: len(ids)]) if sampling.logprobs else None
                    group.append(Completion(text, tuple(ids), reason, lp))
                out.append(group)
        return out

    def load_weights(self, named_tensors) -> None:
        import torch

        with torch.no_grad():
            self.model.load_state_dict(dict(named_tensors), strict=False)

    def sleep(self) -> None:
        pass

    def wake_up(self) -> None:
        pass

    def close(self) -> None:
        self.model = None
