"""Summarize bench/results/*.json into bench/README.md (with the machine each ran on)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bench.common import RESULTS
from grpo_data.tables import io


def _fmt(x) -> str:
    if isinstance(x, float):
        return f"{x:.3g}"
    return str(x)


def _spread(x: dict) -> str:
    """A mean_se dict as `mean +- SE (min-max)`; one seed's as its value; `n/a` for an empty one."""
    if not x:
        return "n/a"
    if x.get("n") == 1:
        return f"{_fmt(x.get('mean'))} (1 seed)"
    return f"{_fmt(x.get('mean'))} +- {_fmt(x.get('se'))} ({_fmt(x.get('min'))}-{_fmt(x.get('max'))})"


def summary_lines(name: str, r: dict) -> list[str]:
    if name == "verify":
        return [f"- clean: {_fmt(r['clean']['verdicts_per_s'])} verdicts/s (goal >= 500)",
                f"- 5% adversarial mix: {_fmt(r['adversarial_mix']['verdicts_per_s'])} verdicts/s, "
                f"slowdown {_fmt(r['slowdown_mixed_vs_clean'])}x (goal <= 2x); workers replaced: {r['workers_replaced']}"]
    if name == "ray_profile":
        o, f = r["overhead"], r["fault"]
        ratios = o["ratio_per_rep"]
        se = (sum((x - sum(ratios) / len(ratios)) ** 2 for x in ratios) / max(1, len(ratios) - 1) / len(ratios)) ** 0.5
        equal = all(c["rows_equal"] for c in r["ray_one_worker_vs_local"])
        chunks = -(-r["problems"] // r["chunk_size"])
        per_chunk = (sum(o["ray_seconds"]) - sum(o["local_seconds"])) / len(ratios) / chunks
        return [f"- {r['problems']} problems x k = {r['k']} ({o['samples']} samples, max_tokens {r['max_tokens']}), "
                f"{r['cores']} cores, Ray {r['ray']}, real vLLM engines, math-verify in each engine's verifier process",
                f"- overhead, one Ray actor holding every core against one process ({len(ratios)} interleaved repetitions, "
                f"engines already up): ray/local seconds {', '.join(_fmt(x) for x in ratios)}; mean overhead "
                f"{_fmt(o['overhead_mean'])} +- {_fmt(se)} (goal <= 0.10), median {_fmt(sorted(ratios)[len(ratios) // 2] - 1)}; "
                f"Ray minus local {_fmt(per_chunk)} s per chunk; {_fmt(o['local_samples_per_s'])} vs "
                f"{_fmt(o['ray_samples_per_s'])} samples/s; every Ray profile equal to the local one row for row: {equal}",
                f"- fault: a head and a second node process (1 CPU each, one actor each), the second node's actor killed "
                f"with SIGKILL after chunk {f['killed'][0]['after_chunk'] if f['killed'] else '-'}: {f['replaced']} actor "
                f"replaced, {f['retried']} chunk(s) run again; lost {f['lost']}, counted twice {f['duplicated']}, counts "
                f"differing from the single-process profile {f['counts_differ']} of {f['problems']} (goal 0, 0, 0); "
                f"rows equal: {f['rows_equal']}"]
    if name == "data":
        lines = []
        for fmt, x in r["results"].items():
            s, c = x["seconds"], x["checks"]
            lines.append(f"- {r['rows']:,} rows as {fmt}: {_fmt(x['wall_seconds_with_startup'])} s with start-up (load "
                         f"{_fmt(s['load'])}, decontaminate {_fmt(s['decontaminate'])}, write {_fmt(s['write'])}; goal <= 60 s), "
                         f"peak {_fmt(x['peak_rss_mb'])} MB over the process tree sampled, main process high-water mark "
                         f"{_fmt(x['main_process_maxrss_mb'])} MB (goal <= 2048); planted evaluation rows removed "
                         f"{c['planted_removed']}/{c['planted']}, other rows removed {c['false_positive_removals']}, near "
                         f"misses kept {c['near_misses_kept']}/{c['near_misses']}; broken rows in the rejects file "
                         f"{c['broken_in_rejects']}/{c['broken_rows']} ({c['broken_wrong_reason']} with another reason)")
        g = r.get("latex_golds")
        if g:
            lines.append(f"- distinct LaTeX gold answers checked through the verifier pool: {_fmt(g['golds_per_s'])}/s "
                         f"({g['golds']} in {_fmt(g['seconds'])} s, pool start included); integer golds need no pool")
        return lines
    if name == "scheduler":
        sim, t = r["simulation"], r["timing"]
        lines = []
        for seed in sim["seeds"]:
            lines += [f"- seed {seed['seed']}, {arm}: rollouts to target {_fmt(a['rollouts_to_target'])}"
                      + (f" (+{_fmt(a['profile_samples'])} profile samples: {_fmt(a['rollouts_charged'])} charged)"
                         if a.get("profile_samples") else "")
                      + f", informative-rollout ratio {_fmt(a['informative_rollout_ratio'])}" for arm, a in seed["arms"].items()]
            u = seed["arms"]["uniform"]
            lines.append(f"- seed {seed['seed']}: uniform zero-variance rate {_fmt(u['zero_variance_rate'])} vs analytic "
                         f"p^G+(1-p)^G {_fmt(u['zero_variance_analytic'])}; band vs uniform+DAPO "
                         f"{_fmt(seed['band_vs_dapo_rollout_ratio'])}x fewer rollouts")
        ratio, inf = sim["band_vs_dapo_rollout_ratio"], sim["band_informative_ratio"]
        lines.append(f"- over {len(sim['seeds'])} seeds: band vs uniform+DAPO {_fmt(ratio['mean'])}x fewer rollouts "
                     f"(min {_fmt(ratio['min'])}x; goal >= 3x); band informative-rollout ratio mean {_fmt(inf['mean'])}, "
                     f"min {_fmt(inf['min'])} (goal >= 0.9)")
        shared = sim.get("config", {}).get("profile_shared_by")
        for arm, v in sim.get("vs_dapo", {}).items():  # the profile charged to the arms that use one
            if v["training"]["mean"] is None:
                lines.append(f"- {arm}: did not reach the target within max_steps on any seed")
                continue
            lines.append(f"- {arm} vs uniform+DAPO, mean over seeds: {_fmt(v['training']['mean'])}x training only, "
                         f"{_fmt(v['charged']['mean'])}x with its profile charged, {_fmt(v['amortized']['mean'])}x with "
                         f"the profile shared by {shared} runs; informative-rollout ratio {_fmt(v['informative_ratio']['mean'])}")
        for key, label in (("timing", "sample+update"), ("timing_band_epochs", "again, band epochs set explicitly")):
            if key in r:
                x = r[key]
                lines.append(f"- {label} on {x['pool']:,} problems ({x.get('calls', x.get('reps'))} calls"
                             f"{', the trainer settings' if 'settings' in x else ''}): mean {_fmt(x['mean_ms'])} ms, "
                             f"median {_fmt(x['median_ms'])} ms, p90 {_fmt(x['p90_ms'])} ms, max {_fmt(x['max_ms'])} ms "
                             "(goal: mean <= 5 ms)")
        return lines
    if name == "warmstart":
        return [f"- warm start: {_fmt(r['warm_start_seconds'])} s (goal <= 300 s)",
                f"- spread over {r['problems_sampled']} training problems, k={r['k']}: <= 0.1: {_fmt(r['share_le_0.1'])}, "
                f">= 0.9: {_fmt(r['share_ge_0.9'])}, 0.2-0.8: {_fmt(r['share_0.2_0.8'])} (goals 0.25 / 0.25 / 0.20)"]
    if name == "profile":
        t, a = r["throughput"], r["adaptive"]
        return [f"- profiling end to end: vLLM {_fmt(t['vllm_samples_per_s'])} vs HF generate {_fmt(t['hf_samples_per_s'])} "
                f"samples/s: {_fmt(t['ratio_vllm_over_hf'])}x (goal >= 5x)",
                f"- generation alone: vLLM {_fmt(t.get('generation_only_vllm_samples_per_s'))} vs HF "
                f"{_fmt(t.get('generation_only_hf_samples_per_s'))} samples/s: {_fmt(t.get('generation_only_ratio'))}x",
                f"- adaptive (per-level prior): {a['samples_adaptive']} samples vs {a['samples_fixed_k16']} for k=16 "
                f"({_fmt(a['savings_vs_k16'])}x fewer, goal >= 3x); band agreement with k=64: adaptive "
                f"{_fmt(a['agreement_adaptive_vs_k64'])}, fixed k=16 {_fmt(a['agreement_fixed_k16_vs_k64'])} (goal >= 0.95)",
                f"- adaptive with one pool prior: {_fmt(a.get('savings_vs_k16_pool_prior'))}x fewer, agreement "
                f"{_fmt(a.get('agreement_adaptive_pool_prior_vs_k64'))}",
                f"- what is possible against a noisy k=64 reference: an oracle knowing every pass rate agrees "
                f"{_fmt(a.get('oracle_ceiling_vs_k64'))}; on the {_fmt(a.get('reference_sure_share'))} of problems whose "
                f"reference is sure (90% interval inside or outside the band): "
                + ", ".join(f"{k} {_fmt(v)}" for k, v in (a.get('agreement_on_sure_reference') or {}).items())]
    if name == "e2e":
        return e2e_lines(r)
    if name.startswith("curriculum-"):
        return curriculum_lines(r)
    if name == "curriculum_lr":
        return [f"- arm B ({r['regime']} / {r['condition']}, seed {r['seed']}) on the validation split, final accuracy "
                f"(k = {next(iter(r['runs'].values())).get('eval_k')}): "
                + ", ".join(f"lr {lr} {_fmt(x['final_val_accuracy'])}" for lr, x in r["runs"].items())
                + f"; chosen for every arm: {r['chosen']:g}"]
    # gsweep-warm-HASH: runs from an earlier warm start; gsweep-kl: the KL grid (its own seeds)
    if name in ("gsweep", "gsweep-kl") or name.startswith("gsweep-warm-"):
        return gsweep_lines(r)
    if name == "demo_lr":
        return demo_lr_lines(r)
    if name == "e2e_select":
        return [f"- arm A (seed {r['seed']}, {r['budget_total_rollouts']} total rollouts) on the validation split: "
                + ", ".join(f"{n} {_fmt(x['final_val_accuracy'])} +- {_fmt(x['final_val_se'])}" for n, x in r["runs"].items())
                + f"; chosen: {r['chosen']} (highest validation accuracy; " + ", ".join(
                    f"{n} informative ratio {_fmt(x['informative_rollout_ratio'])}" for n, x in r["runs"].items())
                + f"); the selection spent {len(r['runs'])} x {r['budget_total_rollouts']} rollouts"]
    if name == "trl":
        lines = [f"- TRL GRPOTrainer, {r['steps']} steps x {r['prompts_per_step']} prompts x G = {r['group_size']} "
                 f"({r['rollouts_per_arm']} rollouts per arm, no offline profile); held-out accuracy before "
                 f"training {_fmt(r['initial'])} (k = {r['eval_k']} samples per problem)"]
        for arm, x in r["summary"].items():
            z, acc = x["frac_reward_zero_std"], x["heldout_accuracy"]
            lines.append(f"- {arm}: frac_reward_zero_std {_fmt(z['mean'])} +- {_fmt(z['se'])} (seeds {_fmt(z['min'])}-"
                         f"{_fmt(z['max'])}), held-out accuracy {_fmt(acc['mean'])} +- {_fmt(acc['se'])} "
                         f"({_fmt(acc['min'])}-{_fmt(acc['max'])}), {_fmt(x['seconds']['mean'])} s per run")
        q = r["zero_std_ratio_scheduler_over_default"]
        return lines + [f"- zero-variance fraction, scheduler / default (same seed): {_fmt(q['mean'])} "
                        f"({_fmt(q['min'])}-{_fmt(q['max'])}); goal <= 0.5: {'met' if r['goal_met'] else 'not met'}"]
    if name == "variants":
        return variants_table(r)
    if name == "memory":
        g = r["goal"]
        ratio = next(v for k, v in g.items() if k.startswith("ratio_"))
        lines = [f"- learner step, {c['sequences']} sequences, kl_beta {c['kl_beta']}: peak "
                 f"{_fmt(c['peak_rss_mib'])} MiB (step +{_fmt(c['step_increment_mib'])} MiB, "
                 f"{_fmt(c['seconds'])} s)" for c in r["configs"]]
        lines += [f"- old path (whole-batch logits), {o['sequences']} sequences: peak "
                  f"{_fmt(o['peak_rss_mib'])} MiB ({o['figure']})" for o in r["old_path"]]
        return lines + [f"- peak {_fmt(ratio)}x from the smallest to the largest batch, kl_beta 0 "
                        f"(goal <= {g['target']}x)"]
    return [f"- {k}: {_fmt(v)}" for k, v in r.items() if isinstance(v, (int, float, str)) and k != "benchmark"]


def variants_table(r: dict) -> list[str]:
    """One row per arm: held-out accuracy over seeds, its paired difference to the default, pass@k,
    maj@k, KL, entropy, length; then each write-up claim and how it came out."""
    k, acc = r["eval_k"], r["summary"]["heldout_accuracy"]
    pass_k, maj_k = r["summary"][f"heldout_pass_at_{k}"], r["summary"][f"heldout_maj_at_{k}"]
    first = next(iter(r["runs"].values()))
    initial = np.mean([x["initial_accuracy"] for x in first.values()])
    lines = [f"- every arm: {r['budget_rollouts']:,} rollouts (training, resampling and refresh counted; the shared "
             f"profile in none), seeds {r['seeds']}, held-out mean@{k} before training {_fmt(float(initial))}; "
             "+- is one standard error over seeds; a difference is called only when the 95% t interval of the "
             "paired differences (shown) excludes 0, each comparison on its own; s per run: wall seconds of the "
             "runs this start made (start-up and evaluation included)", "",
             f"| arm | held-out mean@{k} | minus default (paired, 95% interval) | verdict | pass@{k} | maj@{k} | KL | "
             "entropy | mean abs advantage | completion tokens | s per run |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]

    def ms(x):
        return f"{_fmt(x['mean'])} +- {_fmt(x['se'])}"

    def seconds(arm):  # runs reused from an earlier start have no wall time
        values = [x["seconds"] for x in r["runs"][arm].values() if np.isfinite(x["seconds"])]
        return float(np.mean(values)) if values else float("nan")

    for arm in acc:
        a = acc[arm]
        d = a["minus_default"]
        ci = d.get("ci95")
        interval = f" [{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else ""
        adv = r["summary"].get("advantage_abs", {}).get(arm)
        lines.append(f"| {arm} | {ms(a['heldout_accuracy'])} ({_fmt(a['heldout_accuracy']['min'])}-"
                     f"{_fmt(a['heldout_accuracy']['max'])}) | {ms(d)}{interval} | {a['verdict']} | "
                     f"{ms(pass_k[arm][f'heldout_pass_at_{k}'])} | {ms(maj_k[arm][f'heldout_maj_at_{k}'])} | "
                     f"{ms(r['summary']['kl'][arm])} | {ms(r['summary']['entropy'][arm])} | "
                     f"{_fmt(adv['mean']) if adv else 'n/a'} | "
                     f"{_fmt(r['summary']['completion_len'][arm]['mean'])} | {_fmt(seconds(arm))} |")
    lines.append("")
    lines += [f"- claim \"{c['claim']}\": {c['outcome']} ({ms(c['minus_default'])} against the default)"
              for c in r["claims"].values()]
    for arm, c in r.get("against_controls", {}).items():
        ref = next(key for key in c if key.startswith("minus_"))
        ci = c[ref].get("ci95", [float("nan")] * 2)
        lines.append(f"- {arm} against its control ({ref.removeprefix('minus_')}): {ms(c[ref])} "
                     f"[{_fmt(ci[0])}, {_fmt(ci[1])}], {c['verdict']}")
    return lines


def e2e_lines(r: dict) -> list[str]:
    """The e2e table: per arm over seeds, every rollout charged (profile, refresh, resampling)."""
    if "summary" not in r or "final_accuracy" not in r["summary"]:
        return ["- (a result of an older layout: rerun `grpo bench e2e`)"]
    s = r["summary"]

    lines = [f"- budget {r['budget_total_rollouts']} total rollouts per arm, of which the offline profile "
             f"(charged to A and C) is {r['profile_samples']}; pool {r['pool']} problems, {r['pool_after_offline_filter']} "
             f"after C's filter; test accuracy is mean@{r['eval_k']} on the test split; {len(r['seeds'])} seeds", "",
             *([f"- band arms (A, A0) train with {r['band_setting']['chosen_on_validation']} "
                f"({', '.join(r['band_setting']['overrides'])}), chosen on the validation split by `grpo bench e2e_select` "
                "(its runs are not charged here); B and C have no band to choose", ""] if r.get("band_setting") else []),
             "| arm | final test accuracy | informative-rollout ratio | frontier moved (<= 0.1 -> >= 0.5) |",
             "| --- | --- | --- | --- |"]
    for arm in s["final_accuracy"]:
        lines.append(f"| {arm} | {_spread(s['final_accuracy'][arm])} | {_spread(s['informative_rollout_ratio'][arm])} | "
                     f"{_spread(s['frontier'][arm])} |")
    lines.append("")
    lines.append("- mean +- SE over seeds (min-max); one final evaluation's own test-sampling SE, which more seeds "
                 "do not shrink: " + ", ".join(f"{a} {_fmt(v)}" for a, v in s.get("final_se_test_sampling", {}).items()))
    if "informative_rollout_ratio_charged" in s:
        lines.append("- informative-rollout ratio with the profile's samples counted as rollouts that trained nothing: "
                     + ", ".join(f"{a} {_spread(v)}" for a, v in s["informative_rollout_ratio_charged"].items()))
    if "frontier_A_minus_B" in s:
        f = s["frontier_A_minus_B"]
        lines.append(f"- frontier A - B, paired by seed: {_fmt(f['mean'])} +- {_fmt(f['se'])} ({_fmt(f['in_se'])} SE)")
    for key, x in s["rollout_ratios_charged"].items():
        lines.append(f"- rollouts to B's final accuracy, {key.replace('_over_', ' / ')} (profile charged): {_spread(x)}; "
                     f"reached in {x['reached_in_seeds']} of {x['seeds']} seeds"
                     + (f" (undefined in {x['undefined_in_seeds']}: B ended at or below the start)"
                        if x.get("undefined_in_seeds") else ""))
    if "rollouts_to_B_mean_final" in s:
        c = s["rollouts_to_B_mean_final"]
        lines.append(f"- the same against one target for every seed, B's mean final {_fmt(c['target'])}: " + "; ".join(
            f"{o} / A {_spread(c[o + '_over_A'])}, reached by both in {c[o + '_over_A']['reached_in_seeds']} of "
            f"{c[o + '_over_A']['seeds']} seeds" for o in ("B", "C", "A0")))
    floor = s.get("frontier_noise_floor")
    if floor is not None:
        lines.append(f"- frontier noise floor: {_fmt(floor)} of the problems at 0/{r['eval_k']} in one start evaluation "
                     f"read >= 0.5 in another start evaluation of the same, untrained policy (re-measuring alone)")
    d = s["A_minus_B"]
    lines.append(f"- A - B at the budget: {_fmt(d['mean'])} (SE over seeds {_fmt(d['se_over_seeds'])}, test sampling "
                 f"{_fmt(d['se_test_sampling'])}; {_fmt(d['in_se'])} SE)")
    for seed in r["seeds"]:
        reach = seed["summary"]["rollouts_to_B_final"]
        lines.append(f"- seed {seed['seed']}: start {_fmt(seed['initial_accuracy'])}; rollouts to B's final "
                     f"{_fmt(seed['summary']['target_B_final'])}: " + "; ".join(
                         f"{n.replace('amortized_', 'profile / ')}: " + ", ".join(f"{a} {_fmt(v)}" for a, v in per.items())
                         for n, per in reach.items()))
    lines += [f"- goal {g}: {_verdict(ok)}" for g, ok in s["goals"].items()]
    if r.get("seed_code_note"):
        lines.append(f"- code per seed {r['seed_code']}: {r['seed_code_note']}")
    if r.get("run_code"):
        lines.append("- library code hash of each seed's runs (seeds may run in separate invocations): " + "; ".join(
            f"{seed} {', '.join(sorted(set(codes.values())))}" for seed, codes in r["run_code"].items()))
    return lines


def _coverage(runs: list[dict]) -> str:
    """Mean over seeds of the distinct problems trained and the times each was trained ('-' for runs
    stored without it)."""
    import numpy as np

    cov = [x["coverage"] for x in runs if "coverage" in x]
    if len(cov) < len(runs):
        return "-"
    return (f"{np.mean([c['distinct_problems_trained'] for c in cov]):.0f} "
            f"({np.mean([c['times_trained_mean'] for c in cov]):.1f})")


def curriculum_lines(r: dict) -> list[str]:
    """The curriculum benchmark (#33): per arm over complete seeds, every rollout and token charged;
    paired differences at the budget (k = 32, same problems) for each candidate default."""
    import numpy as np

    from bench.common import mean_se
    from bench.curriculum_stats import PEERS, goals_judged

    seeds = [str(s) for s in r["complete_seeds"]]
    arms = r["arms"]
    per = {a: [r["per_arm"][s][a] for s in seeds] for a in arms}

    def mean(xs):
        return _fmt(float(np.mean(xs))) if xs else "-"

    by_machine: dict[str, list[str]] = {}
    for a, ms in (r.get("run_machines") or {}).items():
        by_machine.setdefault(" + ".join(ms), []).append(a)
    lines = [f"- {r['regime']} regime ({r['pool']} pool problems, {r['budget']} charged rollouts per arm), "
             f"{r['condition']}, {r['split']} split; complete seeds {r['complete_seeds']}; start "
             f"{_fmt((r.get('start') or {}).get('heldout_accuracy'))} (k = {(r.get('start') or {}).get('eval_k')})",
             *([("- runs made on: " + "; ".join(f"{', '.join(a)}: {m}" for m, a in by_machine.items()))]
               if by_machine else []), "",
             "| arm | final accuracy (k = 32) | steps | rollouts charged | tokens charged | profile rollouts | "
             "mixed share, pass 1 -> last | informative ratio, charged | distinct problems trained (times each) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for a in arms:
        runs = per[a]
        final = [x["evals"][-1]["heldout_accuracy"] for x in runs]
        spread = mean_se(final)
        mixed = [(x["waste_per_pass"][0]["mixed"], x["waste_per_pass"][-1]["mixed"]) for x in runs]
        lines.append(f"| {a} | {_spread(spread)} | {mean([x['steps'] for x in runs])} | "
                     f"{mean([x['evals'][-1]['total_rollouts'] for x in runs])} | "
                     f"{mean([x['evals'][-1]['total_tokens'] for x in runs])} | {mean([x['profile']['rollouts'] for x in runs])} | "
                     f"{mean([m[0] for m in mixed])} -> {mean([m[1] for m in mixed])} | "
                     f"{mean([x['informative_rollout_ratio_charged'] for x in runs])} | {_coverage(runs)} |")
    lines.append("")
    judged = goals_judged(r["regime"], r["condition"], r.get("split", "test"))
    for default, c in (r.get("compare") or {}).items():
        diffs = "; ".join(f"- {o} {_fmt(d['mean'])} +- {_fmt(d['se'])} ({_fmt(d['in_se'])} SE over seeds; within-seed "
                          f"SE {_fmt(d['se_within_seeds'])})" for o, d in c["paired_minus"].items())
        f, st = c["fewer_tokens_than_B"], c["fewer_tokens_than_B_staying"]
        lines.append(f"- {default} at the budget, paired per problem: {diffs}")
        lines.append(f"- {default}: B's final over the tokens {default} needs to reach it: first crossing "
                     f"{_spread(f) if 'mean' in f else '-'} (reached in {f['reached_in_seeds']} of {f['seeds']} seeds); "
                     f"crossing and staying {_spread(st) if 'mean' in st else '-'} (in {st['reached_in_seeds']})")
        # the goals are the default's: every candidate (the project's samplers, not the peers'), or the chosen one,
        # and only in the cells they were registered for
        candidate = default not in PEERS or default == (r.get("default") or {}).get("chosen")
        if candidate and judged:
            lines += [f"- goal {g}: {_verdict(ok)}" for g, ok in c["goals"].items()]
    if r.get("compare") and not judged:
        lines.append("- goals: registered for multi / nolevel / test (and multi_t06, Amendment 4); this cell is "
                     "reported, not judged")
    pp = r.get("profile_pays")
    if pp:
        lines.append(f"- when to profile (A against A0; the profile is {_fmt(pp['profile_rollouts_per_problem'])} rollouts "
                     f"per pool problem, the run {r['budget'] / r['pool']:g}): A - A0 at the budget "
                     f"{_spread(pp['A_minus_A0'])}; A0's charged tokens over A's to reach A0's final, profile "
                     + "; ".join(f"shared by {k.removeprefix('amortized_')} run(s) {_spread(v) if 'mean' in v else '-'} "
                                 f"(reached in {v['reached_in_seeds']} of {v['seeds']} seeds)"
                                 for k, v in pp.items() if k.startswith("amortized_")))
    d = r.get("default")
    if d:
        lines.append(f"- the default (Amendment 2: {d['rule']}): best {d['best']}; behind it: " + "; ".join(
            f"{a} {_fmt(x['mean'])} +- {_fmt(x['se'])} ({_fmt(x['in_se'])} SE)" for a, x in d["best_minus"].items())
            + f"; tied with it: {', '.join(d['tied_with_best'])}; chosen: **{d['chosen']}** (mean charged tokens "
            + ", ".join(f"{a} {_fmt(d['tokens'][a])}" for a in d["tied_with_best"]) + ")")
    return lines


def _verdict(ok: bool | None) -> str:
    """A goal's word in the report: None is a goal that could not be judged (its arms were not run)."""
    return "not judged" if ok is None else "met" if ok else "MISSED"


def demo_lr_lines(r: dict) -> list[str]:
    """The demo's learning rate on validation: per seed start -> final for each rate, the mean."""
    lines = [f"- the demo's training from each seed's warm start, evaluated on validation (every "
             f"{r['eval_every_steps']} steps); chosen: lr {_fmt(r['chosen_lr'])} (highest mean final)"]
    for lr, o in r["over_seeds"].items():
        seeds = ", ".join(f"seed {s} {_fmt(x[lr]['start'])} -> {_fmt(x[lr]['final'])}"
                          + (" (regressed)" if x[lr]["regressed"] else "") for s, x in r["per_seed"].items() if lr in x)
        lines.append(f"- lr {lr}: final {_spread(o['final'])}, change {_spread(o['change'])}; {seeds}")
    lines += [f"- lr {_fmt(r['chosen_lr'])} minus lr {lr}, final, seed by seed: {_spread(x)}"
              for lr, x in r.get("chosen_minus_other_by_seed", {}).items()]
    return lines + ([f"- {r['note']}"] if r.get("note") else [])


def gsweep_lines(r: dict) -> list[str]:
    """The G sweep's table: per arm over seeds, equal answers per step and equal total rollouts."""
    s = r.get("summary", {"arms": {}})
    lines = [f"- {r['budget_total_rollouts']} total rollouts per arm, {r['step_answers']} answers per step, "
             f"{len(r['seeds'])} seed{'s' if len(r['seeds']) != 1 else ''}; band scheduler from online estimates (no profile); a run stops at the first "
             "step past the budget, so every arm is read at exactly the budget (linear between evaluations)",
             *([f"- warm start (weights hash) {r['inputs']['policy']}; runs from another warm start are not pooled "
             "(`bench/results/gsweep-runs/warm-HASH/`)"] if "inputs" in r else []),
             *([f"- {r['code_note']}"] if r.get("code_note") else [])]
    if s["arms"]:  # none in a KL-only result
        lines += ["", f"| arm | test accuracy at {r['budget_total_rollouts']:,} rollouts | informative ratio | "
                  "baseline variance | answers per problem | rounds per step | under-filled steps | training seconds |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, a in s["arms"].items():
        at = a.get("accuracy_at_budget", a["final_accuracy"])  # results before the common grid: the last evaluation
        lines.append(f"| {name} | {_spread(at)} | {_spread(a['informative_rollout_ratio'])} | "
                     f"{_spread(a['baseline_variance'])} | {_spread(a['samples_per_problem'])} | {_spread(a['rounds_per_step'])} | "
                     f"{_spread(a['underfilled_share'])} | {_spread(a['seconds'])} |")
    if "best_fixed" in s:
        x = s["allocate_fewer_rollouts_than_best_fixed"]
        if "mean_curve" in x:
            seeds = ", ".join("not reached" if v is None else f"{v:.2f}x" for v in x["per_seed"])
            lines += ["", f"- best fixed G (picked on this test split: optimistic for it): {s['best_fixed']}, "
                      f"{_fmt(s['best_fixed_accuracy_at_budget'])} at the budget; rollouts it spent / rollouts allocate "
                      "needs to reach that accuracy and stay at or above it to the end, on the seed-mean curves: "
                      + ("not reached" if x["mean_curve"] is None else f"{x['mean_curve']:.2f}x")
                      + f"; seed by seed (against that seed's best fixed G): {seeds or 'no allocate arm'}"]
        else:  # a result assembled before the common grid
            reached = _spread(x) if x["reached_in_seeds"] else "not reached"
            lines += ["", f"- best fixed G (picked on this test split: optimistic for it): {s['best_fixed']}; rollouts "
                      f"to its final accuracy, best / allocate: {reached} (reached in {x['reached_in_seeds']} of "
                      f"{x['seeds']} seeds)"]
        for name, sv in s.get("per_problem_arms", {}).items():
            if name == "allocate":
                continue
            seeds = ", ".join("not reached" if v is None else f"{v:.2f}x" for v in sv["per_seed"])
            lines.append(f"- {name}, read the same way: "
                         + ("not reached" if sv["mean_curve"] is None else f"{sv['mean_curve']:.2f}x")
                         + f" on the seed-mean curves; seed by seed: {seeds}; informative ratio "
                         f"{sv['informative_rollout_ratio']:.2f}")
        lines += [f"- goal {g}: {'not judged yet (fewer than 3 seeds)' if ok is None else 'met' if ok else 'MISSED'}"
                  for g, ok in s["goals"].items()]
    for key, what, show in (("g_path", "G", lambda v: f"{v[0]}"), ("band_path", "band", lambda v: f"[{v[0]:g}, {v[1]:g}]")):
        for name in s["arms"]:
            paths = [(x["seed"], x["arms"][name].get(key, [])) for x in r["seeds"] if isinstance(x, dict)]
            if any(len(path) > 1 for _, path in paths):
                lines.append(f"- {name}: {what} over the run (from the rollouts count shown), "
                             + "; ".join(f"seed {seed}: " + " -> ".join(f"{show(v)} at {x:,}" for x, *v in path)
                                         for seed, path in paths))
    if s.get("pareto"):
        par = s["pareto"]
        lines += ["", "- Pareto front, test accuracy against rollouts (seed means on a common grid; no other arm is "
                  "cheaper and at least as accurate): "
                  + ", ".join(f"{p['arm']} at {p['rollouts']:,.0f} ({_fmt(p['accuracy'])})" for p in par["front_rollouts"])
                  + (f"; its points' SE is up to {_fmt(par['front_se'])}, so a gap smaller than that is noise"
                     if par.get("front_se") is not None else ""),
                  "- Pareto front, accuracy at the budget against training seconds: "
                  + ", ".join(f"{p['arm']} at {p['seconds']:,.0f} s ({_fmt(p.get('accuracy_at_budget', p.get('final_accuracy')))})"
                              for p in par["front_seconds"])]
    if r.get("kl_grid"):
        lines += ["", f"| KL arm | test accuracy at {r['budget_total_rollouts']:,} rollouts | KL reached (last quarter "
                  "of steps) |", "| --- | --- | --- |"]
        lines += [f"| {n} | {_spread(a.get('accuracy_at_budget', a['final_accuracy']))} | {_spread(a['kl_reached'])} |"
                  for n, a in r["kl_grid"].items()]
    return lines


def write_readme(out_dir: Path | None = None) -> Path:
    folder = out_dir or RESULTS
    parts = ["# Benchmarks", "", "Written by `grpo bench all` (`make bench`) from `bench/results/*.json`.",
             "Each result file records the machine it ran on; ratios are measured within one run.", ""]
    prereg = folder.parent / "PREREGISTRATION.md"  # dated plans, written by hand before their runs
    if prereg.exists():
        parts += [prereg.read_text().rstrip(), ""]
    for path in sorted(folder.glob("*.json")):
        r = json.loads(path.read_text())
        m = r.get("machine", {})
        title = r.get("benchmark", path.stem) + (f" ({r['variant']})" if r.get("variant") else "")
        parts += [f"## {title}", "",
                  f"Machine: {m.get('cpu_model', m.get('processor'))}, {m.get('cpus')} CPUs, {m.get('mem_total')}; "
                  f"finished {r.get('finished')}.", ""]
        parts += summary_lines(r.get("benchmark", path.stem), r) + [""]
        if r.get("plot") and (folder / Path(r["plot"]).name).exists():
            parts += [f"![{r.get('benchmark', path.stem)}]({folder.name}/{Path(r['plot']).name})", ""]
    return io.write_text(folder.parent / "README.md", "\n".join(parts))
