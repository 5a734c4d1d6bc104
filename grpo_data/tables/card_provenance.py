"""A dataset card's words on how its pass rates were measured and where its rows came from.

The prose `grpo_data.tables.cards.write_card` puts around its tables: the prior from another model
(a dataset's columns or an earlier profile) and its offset, the rows' sources, mixture and
decontamination, and the profiling run's lines (the prior it weighed, the verifier, the seeding,
the backend, the engine's context).
"""

from __future__ import annotations

from grpo_data.generation.seeding import SEEDING


def prior_section(info: dict, own: int) -> str:
    """Markdown: whose estimate the prior is, how many samples stand behind it, how much it counts,
    and the offset to the profiling model (`manifest["prior"]`, see `grpo_data.curriculum.priors`)."""
    samples = ("not stated by the source" if info.get("samples") is None
               else "-".join(f"{x:g}" for x in sorted(set(info["samples"]))) + " per problem")
    offset = info.get("offset_from_profile", 0.0)
    fitted = (f"fitted on the problems both cover, the profiling model is {offset:+.2f} logits from it (its "
              "pseudo-counts are moved by that much before they join the estimates)" if own and info["alone"] < info[
                  "problems"] else "no problem has both, so no offset was fitted: a scheduler learns it online (the "
              "difficulty groups' drift)")
    fields = "`, `".join(info["fields"])
    if info.get("profile"):  # an earlier profile (`grpo_data.curriculum.prior_profile`): name the file and who drew it
        return "## Prior from another model\n\n" + profile_prior_text(info, samples, fitted)
    return (f"## Prior from another model\n\n`{info['spec']}` reads `{fields}`: pass rates measured by "
            f"**{info.get('model') or 'a model the source does not name'}**, samples {samples} ({info.get('citation')}). "
            f"{info['problems']} of the set's problems have a value; {info['alone']} have no profile of their own and "
            f"rest on it alone. Each value counts as at most {info['weight']:g} pseudo-samples, far below what the "
            "source drew, because another model's pass rate predicts this one's only up to an offset and a "
            f"per-problem scatter; {fitted}.")


def profile_prior_text(info: dict, samples: str, fitted: str) -> str:
    """Markdown: an earlier profile read as the prior (`info["profile"]`, `grpo_data.curriculum.prior_profile`):
    the file, the model and weights that drew it, how, and how much it counts."""
    prof = info["profile"]
    how = ("adaptively" if prof.get("adaptive") else "at fixed k") + (
        f", temperature {prof['temperature']}, max_tokens {prof['max_tokens']}" if prof.get("temperature") is not None
        else "")
    return (f"The prior is the earlier profile `{prof['path']}` (sha256 `{str(prof['sha256'])[:16]}`, "
            f"{prof.get('rows')} problems, {prof.get('samples')} samples drawn {how}): pass rates n_correct / k "
            f"measured by **{prof.get('model') or 'a model its metadata does not name'}**, weights sha256 (first 16 "
            f"hex) `{prof.get('weights_hash') or 'not recorded'}`, samples {samples}. {info['problems']} of the set's "
            f"problems have a value; {info['alone']} have no profile of their own and rest on it alone. Each value "
            f"counts as at most {info['weight']:g} pseudo-samples, because another checkpoint's or model's pass rate "
            f"predicts this one's only up to an offset and a per-problem scatter; {fitted}.")


def provenance_sections(data: dict) -> str:
    """Markdown for where the rows came from: sources, the mixture and decontamination (if any)."""
    out = []
    if data.get("sources"):
        lines = "\n".join(f"| `{s['label']}` | `{s['source']}` | {s['read']} | {s['kept']} |" for s in data["sources"])
        out.append("## Sources\n\n| input | source column | rows read | valid |\n| --- | --- | --- | --- |\n" + lines)
    mix = data.get("mixture")
    if mix:
        lines = "\n".join(
            f"| `{s['data']}` | {s['weight'] if s['weight'] is not None else '-'} | {s['cap'] if s['cap'] is not None else '-'} "
            f"| {s['available']} | {s['taken']} | {s.get('short_by', '-')} |" for s in mix["sources"])
        out.append("## Mixture\n\nSources were deduplicated across each other (the first listed keeps a shared "
                   f"problem), then sampled without replacement (seed {mix.get('seed')}, total "
                   f"{mix.get('total') or 'largest that fills every share'}).\n\n"
                   "| source | weight | cap | available | taken | short of share |\n| --- | --- | --- | --- | --- | --- |\n"
                   + lines)
    dec = data.get("decontamination")
    if dec:
        sets = "\n".join(f"| `{name}` | {n} |" for name, n in dec.get("removed_by_eval_set", {}).items()) or "| (none) | 0 |"
        out.append(f"## Decontamination\n\nChecked {dec['checked']} problems against {dec['eval_rows']} evaluation rows "
                   f"({', '.join(f'`{a}`' for a in dec.get('against', []))}): a problem was removed when it shares "
                   f"{dec['min_shared']}+ word {dec['ngram']}-grams with one evaluation row, contains a shorter "
                   f"evaluation problem whole{' or has its whole normalized text' if dec.get('exact') else ''}. "
                   f"Removed: {dec['removed']} ({dec['removed_exact']} by exact text). Ignored as template text: "
                   f"{dec.get('boilerplate_ignored', {})}.\n\n| evaluation set | removed |\n| --- | --- |\n" + sets)
    else:
        out.append("## Decontamination\n\nNot checked against any evaluation set (`grpo decontaminate`).")
    return "\n\n".join(out) + "\n"


def profiling_prior_line(prior: dict | None) -> str:
    """Markdown: the other model's difficulty the adaptive profiler weighed in its stopping decisions."""
    if not prior:
        return "Prior while profiling: none (stopping decisions used this model's own samples only)"
    if prior.get("profile"):
        prof = prior["profile"]
        return (f"Prior while profiling: the earlier profile `{prof.get('path')}` (sha256 `{str(prof.get('sha256'))[:16]}`; "
                f"{prof.get('model') or 'model not named'}, weights `{prof.get('weights_hash') or 'not recorded'}`), at "
                f"most {prior.get('weight')} pseudo-samples each, weighed in the stopping decisions only: every count "
                "in this set is the profiling model's own")
    return (f"Prior while profiling: `{prior.get('spec')}` ({prior.get('model') or 'model not named'}), at most "
            f"{prior.get('weight')} pseudo-samples each, weighed in the stopping decisions only: every count in this "
            "set is the profiling model's own")


def verifier_line(verifier: dict) -> str:
    """Markdown: the judging stack (a `card_record`'s verifier): versions, rules hash, verdict fingerprint, limits."""
    limits = ", ".join(f"{name} {verifier[name]}" for name in ("pred_tail_chars", "max_pred_chars", "timeout_s",
                                                               "deadline_s", "memory_mb") if verifier.get(name) is not None)
    return (f"Verifier: math-verify {verifier.get('version') or '?'} (sympy {verifier.get('sympy') or '?'}, "
            f"latex2sympy2_extended {verifier.get('latex2sympy2_extended') or '?'}) in killable worker processes, "
            f"judging rules sha256 `{verifier.get('rules_hash') or 'unknown'}` (grpo-curriculum "
            f"{verifier.get('grpo_curriculum') or '?'}), verdict fingerprint `{verifier.get('fingerprint') or 'unknown'}`"
            f"{'; ' + limits if limits else ''}")


def seeding_note(seeding: str | None) -> str:
    """The card's words on the profile's seeding (metadata `seeding`; absent in older profiles)."""
    if seeding is None:
        return ""
    if seeding == SEEDING:
        return (f", samples seeded {seeding}: a profile resumed after a crash equals an uninterrupted one "
                "(bit for bit on one machine and engine build)")
    return f", samples seeded {seeding}"


def backend_note(prof: dict) -> str:
    """The card's words on where the profile ran (metadata `backend`; absent in older profiles)."""
    wave = (prof.get("config") or {}).get("wave")
    waves = f", adaptive decisions in waves of {wave} chunks" if wave and wave > 1 else ""
    if prof.get("backend") == "ray":
        return (f", on {prof.get('ray_workers')} Ray workers{waves} (equal to a single-process profile with the same "
                "seed and wave on CPU engines of one build; on GPUs kernels can break near-ties apart)")
    return f", in one process{waves}" if prof.get("backend") == "local" else ""


def context_line(prof: dict) -> str:
    """Markdown: the profiling engine's context and what became of prompts that did not fit it."""
    cfg = prof.get("config") or {}
    if prof.get("context_length") is None:
        return "Context: not recorded (profiled before prompts were measured against it)"
    left = sum((prof.get("left_out") or {}).values())
    clipped = prof.get("clipped", 0)
    policy = cfg.get("overlong_prompts", "skip")
    return (f"Context: {prof['context_length']} tokens (prompt + completion); prompts that could not fit it with "
            f"max_tokens (overlong prompts `{policy}`): {left} left out, {clipped} profiled with a smaller completion "
            "budget (the profile's `max_tokens` column)")
