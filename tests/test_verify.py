"""The verifier: a (gold, pred, expected) table, adversarial inputs, and the killable pool."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grpo_data.verify.judge import verify_answer
from grpo_data.verify.pool import PoolConfig, VerifierPool, summarize, unread_examples
from grpo_data.verify.verdict import Verdict

# (gold, prediction, expected correct)
CASES = [
    # integers, negatives, prose
    ("42", "\\boxed{42}", True),
    ("42", "The answer is 42.", True),
    ("42", "so the total is \\boxed{43}", False),
    ("-7", "\\boxed{-7}", True),
    ("-7", "\\boxed{7}", False),
    ("0", "The result is $0$.", True),
    ("17", "First 10+5=15, then 15+2=17. Final answer: \\boxed{17}", True),
    ("17", "First 10+5=15, then \\boxed{15}", False),
    ("12", "We get 12 apples in total.", True),
    # decimals
    ("3.5", "\\boxed{3.5}", True),
    ("3.5", "\\boxed{3.50}", True),
    ("3.5", "\\boxed{3.4}", False),
    ("0.25", "\\boxed{\\frac{1}{4}}", True),
    ("0.1", "\\boxed{0.01}", False),
    # fractions and roots
    ("\\frac{1}{2}", "\\boxed{\\frac{1}{2}}", True),
    ("\\frac{1}{2}", "$\\frac{2}{4}$", True),
    ("\\frac{1}{2}", "The answer is 0.5", True),
    ("\\frac{1}{2}", "\\boxed{\\frac{1}{3}}", False),
    ("\\frac{3}{4}", "\\boxed{3/4}", True),
    ("\\dfrac{7}{2}", "\\boxed{\\frac{7}{2}}", True),
    ("\\sqrt{2}", "\\boxed{\\sqrt{2}}", True),
    ("2\\sqrt{3}", "\\boxed{\\sqrt{12}}", True),
    ("\\sqrt{2}", "\\boxed{1.41}", False),
    ("\\frac{\\sqrt{3}}{2}", "\\boxed{\\frac{\\sqrt{3}}{2}}", True),
    # commas in numbers
    ("1000", "\\boxed{1,000}", True),
    ("1234567", "The answer is \\boxed{1,234,567}", True),
    ("1000", "\\boxed{1,001}", False),
    # percentages
    ("50\\%", "\\boxed{50\\%}", True),
    ("50\\%", "\\boxed{50}", True),
    ("50\\%", "\\boxed{40\\%}", False),
    # intervals and sets
    ("(1, 2]", "\\boxed{(1,2]}", True),
    ("(1, 2]", "\\boxed{[1,2]}", False),
    ("[0, \\infty)", "\\boxed{[0,\\infty)}", True),
    ("\\{1, 2\\}", "\\boxed{\\{2, 1\\}}", True),
    ("\\{1, 2\\}", "\\boxed{\\{1, 3\\}}", False),
    # expressions
    ("x^2 + 2x + 1", "\\boxed{(x+1)^2}", True),
    ("x^2 + 2x + 1", "\\boxed{x^2+2x}", False),
    ("2\\pi", "\\boxed{2\\pi}", True),
    ("\\pi", "\\boxed{3.14}", False),
    # close-looking wrong answers and no answer
    ("100", "\\boxed{1000}", False),
    ("21", "\\boxed{12}", False),
    ("5", "I do not know.", False),
    ("5", "", False),
]


@pytest.mark.parametrize(("gold", "pred", "expected"), CASES)
def test_verdict_table(gold, pred, expected):
    v = verify_answer(gold, pred)
    assert v.correct is expected, v
    assert (v.reason == "ok") is expected


def test_table_through_pool_matches_direct(pool):
    verdicts = pool.verify([g for g, _, _ in CASES], [p for _, p, _ in CASES])
    assert [v.correct for v in verdicts] == [e for _, _, e in CASES]


def test_reasons():
    assert verify_answer("5", "no digits here").reason == "no_answer"
    assert verify_answer("5", "\\boxed{6}").reason == "wrong"
    assert verify_answer("", "\\boxed{6}").reason == "unparseable_gold"


ADVERSARIAL = [
    "\\boxed{9^9^9^9}",
    "\\boxed{9^{9^{9^{9}}}}",
    "\\boxed{10^{10^{9}}}",
    "(" * 10_000 + "1" + ")" * 10_000,
    "\\boxed{" + "(" * 10_000 + "1" + ")" * 10_000 + "}",
    "x" * 1_000_000,
    "__import__('os').system('touch /tmp/grpo_pwned')",
    "\\boxed{__import__('os').system('touch /tmp/grpo_pwned')}",
    "\\boxed{100000000!}",
]


def test_adversarial_inputs_end_within_deadline_and_pool_recovers(pool):
    if os.path.exists("/tmp/grpo_pwned"):
        os.unlink("/tmp/grpo_pwned")
    start = time.monotonic()
    verdicts = pool.verify(["42"] * len(ADVERSARIAL), ADVERSARIAL)
    elapsed = time.monotonic() - start
    assert all(not v.correct for v in verdicts)
    assert {v.reason for v in verdicts} <= {"timeout", "error", "no_answer", "wrong"}
    # at most one deadline per item, two workers in parallel
    assert elapsed < pool.config.deadline_s * len(ADVERSARIAL) / 2 + 5
    assert not os.path.exists("/tmp/grpo_pwned"), "model output was executed"
    # the pool serves the next batch normally
    after = pool.verify(["1", "2"], ["\\boxed{1}", "\\boxed{3}"])
    assert [v.reason for v in after] == ["ok", "wrong"]


def test_hung_worker_is_killed_and_replaced():
    with VerifierPool(workers=2, deadline_s=2.0, timeout_s=1) as p:
        stuck = p._workers[0].process.pid
        os.kill(stuck, signal.SIGSTOP)  # a worker that never answers, as a hang inside C code would
        verdicts = p.verify([str(i) for i in range(6)], [f"\\boxed{{{i}}}" for i in range(6)])
        reasons = [v.reason for v in verdicts]
        assert reasons.count("timeout") == 1
        assert reasons.count("ok") == 5
        assert p.replaced == 1
        assert all(w.process.pid != stuck for w in p._workers)
        assert [v.reason for v in p.verify(["3"], ["\\boxed{3}"])] == ["ok"]


def test_dead_worker_is_replaced():
    with VerifierPool(workers=1, deadline_s=2.0, timeout_s=1) as p:
        os.kill(p._workers[0].process.pid, signal.SIGKILL)
        p._workers[0].process.join()
        verdicts = p.verify(["1", "2"], ["\\boxed{1}", "\\boxed{2}"])
        assert [v.reason for v in verdicts] == ["ok", "ok"]
        assert p.replaced == 1


def test_workers_do_not_rerun_the_calling_script(tmp_path):
    """A training script imports torch and trl at its top; workers must not re-run that (seconds each,
    and torch's address space is over the workers' memory cap: every item then timed out)."""
    script = tmp_path / "unguarded.py"
    script.write_text("import torch  # noqa: F401\n"
                      "print('TOP LEVEL RAN', flush=True)\n"
                      "from grpo_data.verify.pool import VerifierPool\n"
                      "pool = VerifierPool(workers=2)\n"
                      "print([v.reason for v in pool.verify(['1'] * 3, ['\\\\boxed{1}', '2', '1'])])\n"
                      "pool.close()\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("TOP LEVEL RAN") == 1  # the parent only
    assert "['ok', 'wrong', 'ok']" in proc.stdout and "killed and replaced" not in proc.stderr


def test_memory_cap_turns_into_error_not_crash():
    with VerifierPool(workers=1, deadline_s=20.0, timeout_s=10, memory_mb=600) as p:
        # 2^(2^33) needs a 1 GiB integer: over the cap
        verdicts = p.verify(["1", "1"], ["\\boxed{2^{2^{33}}}", "\\boxed{1}"])
        assert verdicts[0].reason in {"error", "timeout"}
        assert verdicts[1].reason == "ok"


def test_results_in_input_order_with_duplicates(pool):
    golds = ["1", "2", "1", "3", "1"]
    preds = ["\\boxed{1}", "\\boxed{1}", "\\boxed{1}", "\\boxed{3}", "\\boxed{2}"]
    assert [v.correct for v in pool.verify(golds, preds)] == [True, False, True, True, False]


def test_config_refuses_bad_combinations():
    with pytest.raises(ValueError, match="deadline_s"):
        PoolConfig(deadline_s=1.0, timeout_s=2)
    with pytest.raises(ValueError, match="workers"):
        PoolConfig(workers=0)


def test_summarize_counts_every_reason():
    counts = summarize([Verdict(True, "ok"), Verdict(False, "wrong"), Verdict(False, "wrong")])
    assert counts["ok"] == 1 and counts["wrong"] == 2 and counts["timeout"] == 0


def test_grpo_verify_cli(tmp_path):
    src = tmp_path / "preds.jsonl"
    rows = [{"id": "a", "gold": "4", "pred": "\\boxed{4}"}, {"id": "b", "gold": "4", "pred": "\\boxed{5}"},
            {"gold": "4", "pred": "nothing"}]
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\nnot json\n")
    out = tmp_path / "v.jsonl"
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "verify", str(src), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    verdicts = [json.loads(line) for line in out.read_text().splitlines()]
    assert [v["reason"] for v in verdicts] == ["ok", "wrong", "no_answer"]
    assert [v["id"] for v in verdicts] == ["a", "b", 2]
    assert "ok" in proc.stdout and "skipped lines     1" in proc.stdout
    assert "line 4" in proc.stderr
    assert "  no_answer         1" in proc.stdout and "  wrong             1" in proc.stdout
    assert "final sentences not read as an answer" in proc.stdout and "  - nothing" in proc.stdout


def test_unread_examples_are_distinct_unread_sentences_in_order():
    verdicts = [Verdict(False, "no_answer", "It can stay inside."), Verdict(False, "wrong", "3"),
                Verdict(False, "no_answer", "It can stay inside."), Verdict(False, "no_answer", ""),
                Verdict(False, "no_answer", "The graph has no cycle."), Verdict(False, "no_answer", "Third.")]
    assert unread_examples(verdicts, n=2) == ["It can stay inside.", "The graph has no cycle."]
    assert unread_examples([Verdict(True, "ok")]) == []


@pytest.mark.parametrize(("pred", "reason"), [
    ("\\boxed{9^{9^{9^{9}}}}", "error"), ("\\boxed{10^{10^{9}}}", "error"), ("\\boxed{100000000!}", "error"),
    ("\\boxed{2^{2^{33}}}", "error"), ("\\boxed{2^{10}}", "ok"), ("\\boxed{10^{100}}", "wrong"), ("\\boxed{5!}", "wrong"),
])
def test_numbers_too_large_to_compare_are_refused_without_sympy(pred, reason):
    assert verify_answer("1024", pred).reason == reason


def test_the_rules_hash_follows_the_code_not_its_comments():
    from grpo_data.verify.judge import rules_digest

    text = (Path(__file__).parents[1] / "grpo_data" / "verify" / "judge.py").read_text(encoding="utf-8")
    base = rules_digest({"judge.py": text})
    commented = text.replace("\ndef _wrap_gold(gold: str) -> str:\n",
                             "\n# a comment\ndef _wrap_gold(gold: str) -> str:  # and another\n\n", 1)
    redocumented = text.replace('"""Judge `pred`', '"""Reworded: judge `pred`', 1)
    assert commented != text and redocumented != text
    assert rules_digest({"judge.py": commented}) == base == rules_digest({"judge.py": redocumented})
    recoded = text.replace('if "$" in text or', 'if "$$" in text or', 1)
    assert recoded != text and rules_digest({"judge.py": recoded}) != base


def test_the_verdict_fingerprint_follows_verdict_changing_settings():
    """Judged in-process on a shipped set of pairs: an upgrade of math-verify, sympy or latex2sympy2_extended that
    changes a verdict changes it; so does a pred_tail_chars that reads the tail-cut pair."""
    from grpo_data.verify.judge import FINGERPRINT_PAIRS, verdict_fingerprint

    reasons = {verify_answer(g, p, timeout_s=0).reason for g, p in FINGERPRINT_PAIRS}
    assert {"ok", "wrong", "no_answer"} <= reasons
    assert verdict_fingerprint(2000) == verdict_fingerprint(2000) != verdict_fingerprint(10_000)
    settings = PoolConfig(workers=1).verdict_settings()
    assert set(settings) == {"deadline_s", "timeout_s", "memory_mb", "pred_tail_chars", "max_pred_chars"}


def test_an_items_calls_share_its_budget(monkeypatch):
    """Gold, prediction and comparison each get math-verify's timeout, but together no more than the
    item's budget: three full timeouts would outlast the pool's hard deadline and get the worker killed."""
    import grpo_data.verify.judge as verify_module

    now = [100.0]
    monkeypatch.setattr(verify_module.time, "monotonic", lambda: now[0])
    clock = verify_module._Clock(timeout_s=2, budget_s=4.5)
    assert clock.limit() == 2
    now[0] += 2.0
    assert clock.limit() == 2
    now[0] += 1.2  # 1.3 s left: the next call gets 1 s
    assert clock.limit() == 1
    now[0] += 1.0
    with pytest.raises(verify_module.TimeoutException):  # 0.3 s left: no call is started
        clock.limit()
    assert verify_module._Clock(timeout_s=2, budget_s=None).limit() == 2


def test_a_spent_budget_is_a_timeout_verdict():
    assert verify_answer("x^2+1", "\\boxed{x^2+1}", budget_s=0.5).reason == "timeout"
    assert verify_answer("Yes", "\\boxed{Yes}", budget_s=0.5).reason == "ok"  # no math-verify call needed
