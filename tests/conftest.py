from pathlib import Path

import pytest


def pytest_collection_modifyitems(config, items):
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if has_cuda:
        return
    skip = pytest.mark.skip(reason="needs CUDA: torch.cuda.is_available() is False here (on a GPU machine: make test-gpu)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def pool():
    from grpo_data.verify.pool import VerifierPool

    with VerifierPool(workers=2, deadline_s=4.0, timeout_s=1) as p:
        yield p


@pytest.fixture(scope="session")
def world_tables():
    from grpo_data.tables.world import LEVELS, WorldConfig, generate

    cfg = WorldConfig(seed=0, pool=dict.fromkeys(LEVELS, 60), val_per_level=10, test_per_level=10,
                      sft=dict.fromkeys(LEVELS, 200))
    tables = generate(cfg)
    return {**tables, "heldout": tables["test"]}


@pytest.fixture(scope="session")
def untrained_policy(tmp_path_factory):
    """A randomly initialized tiny policy saved like a Hub model (fast; for plumbing tests)."""
    from grpo_train.tiny_policy import TinyModelConfig, build_model, build_tokenizer

    out = tmp_path_factory.mktemp("untrained-policy")
    tok = build_tokenizer()
    build_model(tok, TinyModelConfig(num_layers=2), seed=0).save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def quick_policy(tmp_path_factory, world_tables):
    """A briefly warm-started policy: writes steps in the right format, unsure on most levels."""
    from grpo_train.bootstrap import BootstrapConfig, bootstrap

    out = tmp_path_factory.mktemp("quick-policy") / "policy"
    return bootstrap(world_tables["sft"], out, BootstrapConfig(steps=80), progress=False)


@pytest.fixture(scope="session")
def warm_policy(tmp_path_factory):
    """The default warm start on the default world (the real recipe, about 4 minutes on 2 cores)."""
    from grpo_data.tables.world import WorldConfig, generate
    from grpo_train.bootstrap import BootstrapConfig, bootstrap

    world = generate(WorldConfig())
    # a repo-local cache: bootstrap() reuses it only when every input hashes the same
    out = Path(__file__).resolve().parent.parent / "runs" / ".test-cache" / "policy-warm"
    return bootstrap(world["sft"], out, BootstrapConfig(), progress=False), {**world, "heldout": world["test"]}
