"""Every benchmark `grpo bench NAME` runs, by name: what each needs from the command line (a
`Request`) and how it is run. The command line only parses flags and writes the result; what a
benchmark is lives here, beside it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Request:
    """The flags of `grpo bench` that benchmarks read (each reads its own; see `grpo bench --help`)."""

    quick: bool = False
    out_dir: Path | None = None
    arms: str | None = None
    seeds: str | None = None
    assemble: bool = False
    warm_start: str | None = None
    regime: str = "multi"
    condition: str = "nolevel"
    split: str = "test"
    against: str | None = None
    accept_code: tuple[str, ...] = ()  # "HASH=REASON" items: other code states a cell may assemble, and why

    def results(self) -> Path:
        from bench.common import RESULTS

        return Path(self.out_dir or RESULTS)

    def arm_names(self) -> tuple[str, ...] | None:
        return tuple(self.arms.split(",")) if self.arms else None


@dataclass(frozen=True)
class Benchmark:
    run: Callable[[Request], tuple[str, dict]]  # -> (the result's name, the result)
    in_all: bool = True  # `grpo bench all` runs it (False: it needs folders `all` does not build)


def parse_seeds(text: str | None, default: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """`--seeds 0,1,2` as a tuple; a repeated seed is an error (it would count as a replicate)."""
    if not text:
        return default
    try:
        seeds = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"--seeds {text!r}: comma-separated integers, e.g. 0,1,2") from None
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds {text!r} repeats a seed: each seed counts once")
    return seeds


def _seeds(req: Request, full: tuple[int, ...] = (0, 1, 2)) -> tuple[int, ...]:
    return parse_seeds(req.seeds, (0,) if req.quick else full)


def verify(req: Request) -> tuple[str, dict]:
    from bench import verify_bench

    return "verify", verify_bench.run(n=800 if req.quick else 4000)


def verify_ab(req: Request) -> tuple[str, dict]:
    from bench import verify_ab as ab

    if not req.against:
        raise ValueError("verify_ab needs --against COMMIT: the verifier to compare this checkout's with")
    return "verify_ab", ab.run(req.against, n=600 if req.quick else 3000, rounds=1 if req.quick else 3)


def frontier(req: Request) -> tuple[str, dict]:
    from bench import frontier_bench

    return "frontier", frontier_bench.run()


def frontier_lr(req: Request) -> tuple[str, dict]:
    from bench import frontier_lr as grid

    return "frontier_lr", grid.run()


def data(req: Request) -> tuple[str, dict]:
    from bench import data_bench

    return "data", data_bench.run(quick=req.quick)


def scheduler(req: Request) -> tuple[str, dict]:
    import dataclasses

    from bench import scheduler_sim

    cfg = scheduler_sim.SimConfig()
    if req.quick:
        cfg = dataclasses.replace(cfg, n_problems=4000, lr=0.003, max_steps=1500)
    n = 100_000 if req.quick else 1_000_000
    return "scheduler", {"simulation": scheduler_sim.run(cfg), "timing": scheduler_sim.timing(n=n),
                         "timing_band_epochs": scheduler_sim.timing(n=n, without_replacement=True, epoch="band")}


def quick_module(name: str, module: str) -> Callable[[Request], tuple[str, dict]]:
    """A benchmark whose module's `run(quick=...)` is all it takes."""

    def run(req: Request) -> tuple[str, dict]:
        import importlib

        return name, importlib.import_module(f"bench.{module}").run(quick=req.quick)

    return run


def prior_chunk64(req: Request) -> tuple[str, dict]:
    from bench import prior_bench

    return "prior_chunk64", prior_bench.run(quick=req.quick, chunk_size=64)


def prior_matched(req: Request) -> tuple[str, dict]:
    from bench import prior_bench

    return "prior_matched", prior_bench.run_matched(quick=req.quick)


def prior_fitted(req: Request) -> tuple[str, dict]:
    from bench import prior_bench

    return "prior_fitted", prior_bench.run_fitted(quick=req.quick)


def trl(req: Request) -> tuple[str, dict]:
    from bench import trl_bench

    return "trl", trl_bench.run(quick=req.quick, seeds=(0,) if req.quick else (0, 1, 2))


def variants(req: Request) -> tuple[str, dict]:
    from bench import variants_bench

    return "variants", variants_bench.run(quick=req.quick, seeds=(0,) if req.quick else (0, 1, 2))


def gsweep(req: Request) -> tuple[str, dict]:
    from bench import gsweep_bench

    chosen, results = _seeds(req), req.results()
    if req.assemble:  # by default every arm the same command would have run (no KL grid with --quick)
        names = req.arm_names() or (*gsweep_bench.arms(), *({} if req.quick else gsweep_bench.kl_arms()))
        budget = 2_000 if req.quick else gsweep_bench.BUDGET
        return "gsweep", gsweep_bench.assemble(names, chosen, results, budget, plot_to=results / "gsweep.png",
                                               warm_start=req.warm_start)
    if req.warm_start:
        raise ValueError("--warm-start names the stored runs to assemble (with --assemble); a sweep trains "
                         "from the warm start stored under <out-dir>/gsweep-warm-start")
    named_kl = not req.arms or any(a.startswith("kl") for a in req.arms.split(","))
    return "gsweep", gsweep_bench.run(quick=req.quick, seeds=chosen, kl=not req.quick and named_kl,
                                      only=req.arm_names(), results=results)


def demo_lr(req: Request) -> tuple[str, dict]:
    """The demo's learning rate, on validation over the demo's seeds."""
    from bench import demo_lr_bench

    return "demo_lr", demo_lr_bench.run(seeds=(0,) if req.quick else demo_lr_bench.SEEDS)


def curriculum_lr(req: Request) -> tuple[str, dict]:
    from bench import curriculum_bench

    return "curriculum_lr", curriculum_bench.select_lr(results=req.results())


def curriculum(req: Request) -> tuple[str, dict]:
    """Issue #33, pre-registered in bench/PREREGISTRATION.md: one regime x condition x split."""
    from bench import curriculum_bench
    from bench.run_trace import parse_accepted

    results, folder = req.results(), curriculum_bench.folder_name(req.regime, req.condition, req.split)
    accepted = parse_accepted(list(req.accept_code))
    if req.assemble:
        result = curriculum_bench.assemble(results, req.regime, req.condition, plot_to=results / f"curriculum-{folder}.png",
                                           split=req.split, accept_code=accepted)
    else:
        result = curriculum_bench.run(req.regime, req.condition, parse_seeds(req.seeds, curriculum_bench.SEEDS),
                                      req.arm_names(), results=results, split=req.split,
                                      accept_code=accepted)
    return f"curriculum-{folder}", result


def e2e_select(req: Request) -> tuple[str, dict]:
    """Settings chosen on the validation split, before the headline; the profile it makes is stored
    in results/e2e-profile for the headline and later sessions."""
    from bench import e2e_bench

    return "e2e_select", e2e_bench.select_on_validation(budget=5_000 if req.quick else e2e_bench.BUDGET,
                                                        results=req.results())


def e2e(req: Request) -> tuple[str, dict]:
    from bench import e2e_bench

    results = req.results()  # the selection e2e_select wrote there; the stored seeds
    if req.assemble:  # every stored seed, or those named
        budget = 5_000 if req.quick else e2e_bench.BUDGET
        return "e2e", e2e_bench.assemble(results, plot_to=results / "e2e.png", budget=budget,
                                         seeds=parse_seeds(req.seeds, None))
    return "e2e", e2e_bench.run(quick=req.quick, seeds=_seeds(req), results=results)


BENCHMARKS: dict[str, Benchmark] = {
    "verify": Benchmark(verify),
    "verify_ab": Benchmark(verify_ab, in_all=False),  # issue #64: needs --against COMMIT
    "frontier": Benchmark(frontier, in_all=False),  # issue #59: the frontier world's calibration (about 20 min)
    "frontier_lr": Benchmark(frontier_lr, in_all=False),  # issue #59, Amendment 2: lr grid on validation (~45 min)
    "data": Benchmark(data),
    "scheduler": Benchmark(scheduler),
    "warmstart": Benchmark(quick_module("warmstart", "warmstart_bench")),
    "profile": Benchmark(quick_module("profile", "profile_bench")),
    "e2e_select": Benchmark(e2e_select),
    "e2e": Benchmark(e2e),
    "memory": Benchmark(quick_module("memory", "memory_bench")),
    "trl": Benchmark(trl),
    "variants": Benchmark(variants),
    "gsweep": Benchmark(gsweep),
    "demo_lr": Benchmark(demo_lr, in_all=False),  # trains from the demo folders (`grpo demo --seed N`)
    "curriculum_lr": Benchmark(curriculum_lr, in_all=False),
    "curriculum": Benchmark(curriculum, in_all=False),
    "prior": Benchmark(quick_module("prior", "prior_bench")),  # issue #34
    "prior_chunk64": Benchmark(prior_chunk64),  # issue #34, Amendment 9
    "prior_matched": Benchmark(prior_matched),  # issue #34, Amendment 10
    "prior_fitted": Benchmark(prior_fitted),  # issue #34, Amendment 15
    "ray_profile": Benchmark(quick_module("ray_profile", "ray_profile_bench")),  # issue #37
}


def run_benchmark(name: str, req: Request) -> tuple[str, dict]:
    if name not in BENCHMARKS:
        raise ValueError(f"no benchmark {name!r}: one of {', '.join(BENCHMARKS)}")
    return BENCHMARKS[name].run(req)
