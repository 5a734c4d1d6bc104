"""A pool of killable verifier workers: a batch never crashes or stalls because of one input.

Each worker is a separate process that runs `grpo_data.verify.judge` in its main thread (where
math-verify's SIGALRM timeouts work) under an address-space cap (RLIMIT_AS). The parent hands a
worker one item at a time and holds a hard deadline for it; a worker that misses the deadline, or
dies (memory cap, crash), is killed and replaced, its item gets reason "timeout" or "error", and the
rest of the batch carries on. Results come back in input order.

Workers run code from `grpo_data` only: multiprocessing would otherwise re-run the calling script's
top level in every worker (its `import torch`, `import trl`: seconds each, and torch's address space
is over the memory cap, so math-verify then cannot allocate and every item times out).

Identical (gold, prediction) pairs in one batch are judged once: k samples of a problem often
repeat the same completion, and verification is a pure function of the pair.

    with VerifierPool(workers=2) as pool:
        verdicts = pool.verify(golds, preds)          # list[Verdict], input order
        checks = pool.check_golds(golds)              # Verdict "ok" / "unparseable_gold"
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait

from grpo_data.verify.verdict import REASONS, Verdict

logger = logging.getLogger(__name__)

_KIND_VERIFY = "verify"
_KIND_GOLD = "gold"


@dataclass(frozen=True)
class PoolConfig:
    """Settings of a VerifierPool.

    workers:         worker processes (default: CPU count).
    deadline_s:      hard wall-clock limit per item, enforced by killing the worker.
    timeout_s:       math-verify's own SIGALRM limit per parse/compare inside the worker (whole
                     seconds); kept below deadline_s so most slow inputs end as "timeout" without a kill.
                     An item's calls (gold, prediction, comparison) share a budget of deadline_s less
                     BUDGET_MARGIN_S (`grpo_data.verify.judge._Clock`): three full timeouts can outlast the
                     deadline, and a call that would is not started.
    memory_mb:       RLIMIT_AS cap of each worker; an input that blows it ends as "error".
    pred_tail_chars: only the last this-many characters of a prediction are parsed.
    max_pred_chars:  longer predictions are not parsed at all (reason "error").
    """

    workers: int = max(1, os.cpu_count() or 1)
    deadline_s: float = 5.0
    timeout_s: int = 2
    memory_mb: int = 2048
    pred_tail_chars: int = 2000
    max_pred_chars: int = 5_000_000

    def verdict_settings(self) -> dict:
        """Every setting that can change a verdict (all but `workers`): what a profile records."""
        return {name: getattr(self, name) for name in ("deadline_s", "timeout_s", "memory_mb", "pred_tail_chars",
                                                         "max_pred_chars")}

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.timeout_s < 1:
            raise ValueError(f"timeout_s must be a whole number of seconds >= 1, got {self.timeout_s}")
        if self.deadline_s <= self.timeout_s:
            raise ValueError(
                f"deadline_s ({self.deadline_s}) must exceed timeout_s ({self.timeout_s}): the hard "
                "deadline is the backstop for math-verify's own timeout"
            )


BUDGET_MARGIN_S = 0.2  # an item's math-verify budget ends this long before its hard deadline (time to send the verdict back)


def _worker_main(conn: Connection, memory_mb: int, timeout_s: int, pred_tail_chars: int, budget_s: float) -> None:
    import resource

    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from grpo_data.verify.judge import gold_is_parseable, verify_answer

    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        seq, kind, gold, pred, question = msg
        try:
            if kind == _KIND_GOLD:
                verdict = gold_is_parseable(gold, timeout_s)
            else:
                verdict = verify_answer(gold, pred, timeout_s, pred_tail_chars, budget_s, question)
        except MemoryError:
            verdict = Verdict(False, "error", "worker memory cap")
        conn.send((seq, verdict.correct, verdict.reason, verdict.detail, verdict.answer))


_MAIN_LOCK = threading.Lock()


@contextmanager
def _main_module_hidden() -> Iterator[None]:
    """While a worker starts, `__main__` names no file or module, so multiprocessing does not import
    the caller's script in the worker (it reads both when it prepares the child). One worker start
    at a time: pools started from two threads would restore each other's stand-ins."""
    with _MAIN_LOCK:
        main = sys.modules.get("__main__")
        saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__} if main else {}
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__spec__ = None
        try:
            yield
        finally:
            if main is not None:
                main.__dict__.update(saved)
                if "__spec__" not in saved:
                    del main.__spec__


class _Worker:
    def __init__(self, ctx: mp.context.BaseContext, cfg: PoolConfig) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(
            target=_worker_main,
            args=(child, cfg.memory_mb, cfg.timeout_s, cfg.pred_tail_chars,
                  max(float(cfg.timeout_s), cfg.deadline_s - BUDGET_MARGIN_S)),
            daemon=True,
        )
        with _main_module_hidden():
            self.process.start()
        child.close()
        self.seq: int | None = None  # item in flight
        self.started_at = 0.0

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()


class VerifierPool:
    """Process pool for verification. Use as a context manager, or call close()."""

    def __init__(self, config: PoolConfig | None = None, **overrides) -> None:
        cfg = config or PoolConfig()
        if overrides:
            cfg = PoolConfig(**{**cfg.__dict__, **overrides})
        self.config = cfg
        # forkserver: replacements fork from a clean server process that has math-verify
        # preloaded, so a killed worker is back in milliseconds, and no worker inherits the
        # threads of a parent that runs vLLM or torch.
        self._ctx = mp.get_context("forkserver")
        self._ctx.set_forkserver_preload(["grpo_data.verify.judge"])
        self._workers = [_Worker(self._ctx, cfg) for _ in range(cfg.workers)]
        self.replaced = 0  # workers killed and replaced so far
        self._answered = False  # some worker has returned a result
        self._early_deaths = 0  # workers that died before any worker returned a result

    def __enter__(self) -> VerifierPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for w in self._workers:
            try:
                w.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        for w in self._workers:
            w.process.join(timeout=2)
            w.kill()
        self._workers = []

    def verify(self, golds: list[str], preds: list[str], questions: list[str | None] | None = None) -> list[Verdict]:
        """Judge preds[i] against golds[i] for every i; verdicts in input order. `questions[i]`, the
        problem's text when given, lets a denial answer a yes/no question (`verify_answer`)."""
        if len(golds) != len(preds):
            raise ValueError(f"golds and preds differ in length: {len(golds)} vs {len(preds)}")
        if questions is not None and len(questions) != len(golds):
            raise ValueError(f"questions and golds differ in length: {len(questions)} vs {len(golds)}")
        return self._run(_KIND_VERIFY, golds, preds, questions)

    def check_golds(self, golds: list[str]) -> list[Verdict]:
        """Verdict "ok" for each gold answer math-verify can parse, else "unparseable_gold"."""
        return self._run(_KIND_GOLD, golds, [""] * len(golds))

    def _run(self, kind: str, golds: list[str], preds: list[str],
             questions: list[str | None] | None = None) -> list[Verdict]:
        results: list[Verdict | None] = [None] * len(golds)
        unique: dict[tuple[str, str, str | None], list[int]] = {}
        asked = questions if questions is not None else [None] * len(golds)
        for i, (g, p, q) in enumerate(zip(golds, preds, asked, strict=True)):
            if not isinstance(g, str) or not isinstance(p, str) or not (q is None or isinstance(q, str)):
                results[i] = Verdict(False, "error", "gold, prediction and question must be strings")
            elif len(p) > self.config.max_pred_chars:
                results[i] = Verdict(False, "error", f"prediction over {self.config.max_pred_chars} chars")
            else:
                unique.setdefault((g, p, q), []).append(i)
        keys = list(unique)
        todo = deque(range(len(keys)))
        done: dict[int, Verdict] = {}
        while todo or any(w.seq is not None for w in self._workers):
            for w in self._workers:
                if w.seq is None and todo:
                    seq = todo.popleft()
                    gold, pred, question = keys[seq]
                    w.seq, w.started_at = seq, time.monotonic()
                    try:
                        w.conn.send((seq, kind, gold, pred, question))
                    except (BrokenPipeError, OSError):  # worker died between items: replace, retry item
                        todo.appendleft(seq)
                        self._died(w)
            busy = [w for w in self._workers if w.seq is not None]
            if not busy:
                continue
            nearest = min(w.started_at for w in busy) + self.config.deadline_s
            ready = wait([w.conn for w in busy], timeout=max(0.0, nearest - time.monotonic()))
            for w in busy:
                if w.conn in ready:
                    try:
                        seq, correct, reason, detail, answer = w.conn.recv()
                    except (EOFError, OSError):
                        done[w.seq] = Verdict(False, "error", "worker died")
                        self._died(w)
                        continue
                    self._answered = True
                    done[seq] = Verdict(correct, reason, detail, answer)
                    w.seq = None
                elif time.monotonic() - w.started_at >= self.config.deadline_s:
                    done[w.seq] = Verdict(False, "timeout", f"hard deadline {self.config.deadline_s}s")
                    self._replace(w)
        for seq, key in enumerate(keys):
            for i in unique[key]:
                results[i] = done[seq]
        return results  # type: ignore[return-value]

    def _died(self, worker: _Worker) -> None:
        """A worker's pipe closed: replace it, unless no worker has ever lived to answer (then the
        workers cannot start at all, and replacing them forever would only hide why)."""
        if not self._answered:
            self._early_deaths += 1
            if self._early_deaths >= 3:
                self.close()
                raise RuntimeError(
                    "verifier workers exit as they start, before returning any result (3 in a row); see the "
                    f"workers' messages above (a memory cap too small to start in, memory_mb={self.config.memory_mb}, "
                    "is one cause)") from None
        self._replace(worker)

    def _replace(self, worker: _Worker) -> None:
        logger.warning("verifier worker pid %s killed and replaced (item %s)", worker.process.pid, worker.seq)
        worker.kill()
        worker.seq = None
        idx = self._workers.index(worker)
        self._workers[idx] = _Worker(self._ctx, self.config)
        self.replaced += 1


def unread_examples(verdicts: list[Verdict], n: int = 5) -> list[str]:
    """Up to n distinct final sentences the verifier could not read (the detail of "no_answer"
    verdicts, in input order): what to show a user whose misses may be the extractor's, not the model's."""
    seen: list[str] = []
    for v in verdicts:
        if v.reason == "no_answer" and v.detail and v.detail not in seen:
            seen.append(v.detail)
            if len(seen) == n:
                break
    return seen


def summarize(verdicts: list[Verdict]) -> dict[str, int]:
    """Counts per reason, every reason present (zeros included), in REASONS order."""
    counts = dict.fromkeys(REASONS, 0)
    for v in verdicts:
        counts[v.reason] = counts.get(v.reason, 0) + 1
    return counts
