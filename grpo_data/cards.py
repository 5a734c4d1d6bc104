"""Hugging Face dataset cards for curriculum shard sets (`grpo card`).

The card (markdown with YAML front matter) states what a user of the shards must know to trust
them: how pass rates were measured (model and weights hash, k, sampling, chat template, verifier),
what the columns mean, counts per bucket, rejected rows by reason, and known limitations; a
pass-rate histogram (PNG) is written beside it.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import yaml

from grpo_data import io
from grpo_data.shards import read_shards, verify_shards

COLUMN_DOCS = {
    "native": "`id`, `source`, `prompt` (chat messages), `answer` (gold), `level`, `meta`, `k` (samples), "
              "`n_correct`, `pass_rate` (= n_correct / k), `ci_low`/`ci_high` (90% Jeffreys interval), `bucket`",
    "verl": "`data_source`, `prompt` (chat messages), `ability`, `reward_model` {`style`: rule, `ground_truth`}, "
            "`extra_info` {`index`, `split`, `id`, `level`, `pass_rate`, `k`, `n_correct`}, `{avg}`, `bucket`",
    "trl": "`prompt` (chat messages), `solution` (gold answer for the reward function), `id`, `level`, `k`, "
           "`n_correct`, `pass_rate`, `{avg}`, `bucket`",
}


def avg_column_doc(manifest: dict, ks: pl.Series) -> str:
    """What the community-convention column holds: k per problem and the sampling it was measured at."""
    name = manifest.get("avg_column")
    if not name:
        return ""
    text = (f"\n\n`{name}` is `pass_rate` under the name public RL datasets use (`avg@k_<model>`): the mean "
            "verified correctness of the profiling model's samples at the sampling settings above.")
    if ks.len() and ks.min() != ks.max():
        text += (f" Samples were drawn adaptively, {int(ks.min())}-{int(ks.max())} per problem (column `k`); "
                 f"`{name.split('_')[0]}` names the most any problem got.")
    return text


def size_category(n: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return label
    return "n>1M"


def profile_column(table: pl.DataFrame, name: str) -> pl.Series:
    """A profile column (`pass_rate`, `k`) of any shard format: top level, or in verl's extra_info."""
    if name in table.columns:
        return table[name]
    return table["extra_info"].struct.field(name)


def histogram(rates: pl.Series, edges: list[float], path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2), dpi=120)
    ax.hist(rates.to_numpy(), bins=20, range=(0, 1), color="#4C72B0", edgecolor="white")
    for e in edges[1:-1]:
        ax.axvline(e, color="#C44E52", lw=1, ls="--")
    ax.set_xlabel("profiled pass rate")
    ax.set_ylabel("problems")
    ax.set_title(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def front_matter(name: str, manifest: dict, license: str, pretty_name: str | None, language: str) -> dict:
    buckets = sorted(manifest["buckets"], key=int)
    return {
        "license": license,
        "language": [language],
        "pretty_name": pretty_name or name,
        "task_categories": ["question-answering", "text-generation"],
        "tags": ["math", "reinforcement-learning", "grpo", "curriculum", "pass-rate"],
        "size_categories": [size_category(manifest["rows"])],
        "source_datasets": [manifest.get("source") or "original"],
        "configs": [{"config_name": f"bucket_{b}", "data_files": [{"split": "train", "path": f"bucket={b}/*.parquet"}]}
                    for b in buckets] + [{"config_name": "all", "default": True,
                                          "data_files": [{"split": "train", "path": "bucket=*/*.parquet"}]}],
    }


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


def write_card(shards: str | Path, name: str, out: str | Path | None = None, license: str = "apache-2.0",
               pretty_name: str | None = None, language: str = "en") -> Path:
    shards = Path(shards)
    manifest = verify_shards(shards)
    out = Path(out) if out else Path("data_cards") / f"{name}.md"
    table = read_shards(shards)
    png = histogram(profile_column(table, "pass_rate"), manifest["edges"], out.with_suffix(".png"), f"{name}: pass rates")
    prof = manifest.get("profile", {})
    cfg = prof.get("config", {})
    sampling = cfg.get("sampling", {})
    rule = cfg.get("rule")
    meta = front_matter(name, manifest, license, pretty_name, language)
    rows = "\n".join(f"| {b} | [{v['lo']:.2f}, {v['hi']:.2f}{']' if v['hi'] == 1.0 else ')'} | {v['rows']} |"
                     for b, v in sorted(manifest["buckets"].items(), key=lambda kv: int(kv[0])))
    rejected = manifest.get("rejected") or {}
    rej_lines = "\n".join(f"| {reason} | {n} |" for reason, n in rejected.items()) or "| (none) | 0 |"
    versions = prof.get("versions", {})
    avg_doc = avg_column_doc(manifest, profile_column(table, "k"))
    body = f"""# {pretty_name or name}

Math problems bucketed by the pass rate of a profiling model, for curriculum GRPO training. Built
with grpo-curriculum (`grpo shards`, format `{manifest['format']}`) from `{manifest.get('source') or 'unknown'}`.

## How pass rates were measured

- Profiling model: `{prof.get('model', 'unknown')}`, weights sha256 (first 16 hex) `{prof.get('weights_hash', 'unknown')}`
- Engine: {prof.get('engine', 'unknown')}; samples per problem: {'adaptive ' + str(rule) if rule else 'k = ' + str(cfg.get('k', 'unknown'))}
- Sampling: temperature {sampling.get('temperature')}, top_p {sampling.get('top_p')}, max_tokens {sampling.get('max_tokens')}
- Chat template hash: `{prof.get('template_hash', 'unknown')}`; prompt settings: {cfg.get('prompt', {})}
- Verifier: math-verify {versions.get('math-verify', '?')} in killable worker processes; seed {cfg.get('seed')}
- Profiled: {prof.get('created', 'unknown')}

**Pass rate** = verified-correct samples / samples drawn (`n_correct / k`), at the sampling settings
above. `ci_low`/`ci_high` are the 90% equal-tailed interval of the Jeffreys Beta(1/2, 1/2) posterior.

## Columns

{COLUMN_DOCS[manifest['format']].replace('{avg}', manifest.get('avg_column') or 'avg@k_<model>')}{avg_doc}

## Buckets

| bucket | pass rate | problems |
| --- | --- | --- |
{rows}

Total: {manifest['rows']} problems. Not profiled (left out): {manifest.get('unprofiled', 0)}.

![pass-rate histogram]({png.name})

{provenance_sections(manifest.get("data") or {})}
## Rejected rows

| reason | rows |
| --- | --- |
{rej_lines}

## Known limitations

- Pass rates belong to the profiling model and sampling settings above; another model (or the same
  one after training) has other pass rates. Re-profile before reusing the buckets elsewhere.
- Verifier timeouts and errors are scored as wrong; they are counted per problem in the profile.
- With k samples, a pass rate of 0 or 1 means "no success/failure seen in k tries", not certainty;
  use `ci_low`/`ci_high`.
- Answers are judged by math-verify's extraction (last `\\boxed{{}}`, then LaTeX, then a final
  number); answers in other forms can be scored wrong.
"""
    text = "---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n\n" + body
    return io.write_text(out, text)
