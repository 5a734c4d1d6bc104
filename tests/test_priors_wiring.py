"""Priors from columns, after review (#34 item 1): how each command and plug-in takes a prior,
refuses what it cannot use, and starts its scheduler from it."""

import json

import numpy as np
import polars as pl
import pytest
from test_priors import BIGMATH, NAN, SKYWORK, TRL_SHARD, canonical_with_prior, counts, same

from grpo_data.priors import PriorError, frame_columns, read_prior


# ---------------------------------------------------------------------------- the weight as given
def test_a_weight_of_zero_is_refused_not_replaced_by_the_default(tmp_path, capsys):
    from grpo_data.integrations.trl import TRLCurriculum
    from grpo_data.integrations.verl import CurriculumSampler
    from pipelines.cli import main

    data = tmp_path / "problems.parquet"
    canonical_with_prior([0.25, None, 1.0]).write_parquet(data)
    assert main(["shards", "--data", str(data), "--prior", "bigmath", "--prior-weight", "0",
                 "--out", str(tmp_path / "s")]) == 2
    assert "weight must be at least 1 pseudo-sample, got 0.0" in capsys.readouterr().err
    with pytest.raises(PriorError, match="weight must be at least 1 pseudo-sample, got 0.0"):
        CurriculumSampler(SkyworkRows(), {"train_batch_size": 2, "sampler": {"prior": "skywork_7b", "prior_weight": 0}})
    import datasets

    ds = datasets.Dataset.from_list([{**row, "id": f"b{i}"} for i, row in enumerate(BIGMATH.to_dicts())])
    with pytest.raises(PriorError, match="got 0.0"):
        TRLCurriculum.from_dataset(ds, prior="bigmath", prior_weight=0)


def test_a_weight_without_a_prior_is_refused(tmp_path, capsys):
    import datasets

    from grpo_data.integrations.trl import TRLCurriculum
    from grpo_data.integrations.verl import CurriculumSampler
    from grpo_train.config import load_config
    from pipelines.cli import main

    data = tmp_path / "problems.parquet"
    canonical_with_prior([0.25, None, 1.0]).write_parquet(data)
    profile = tmp_path / "profile.parquet"
    assert main(["shards", "--data", str(data), "--profile", str(profile), "--prior-weight", "2",
                 "--out", str(tmp_path / "s")]) == 2
    assert "--prior-weight 2.0 without --prior" in capsys.readouterr().err
    assert main(["profile", "--data", str(data), "--model", "org/model", "--prior-weight", "2",
                 "--out", str(tmp_path / "p.parquet")]) == 2
    assert "--prior-weight 2.0 without --prior" in capsys.readouterr().err
    with pytest.raises(PriorError, match="data.sampler.prior_weight 8 without data.sampler.prior"):
        CurriculumSampler(SkyworkRows(), {"train_batch_size": 2, "sampler": {"prior_weight": 8}})
    ds = datasets.Dataset.from_list([{**row, "id": f"b{i}"} for i, row in enumerate(BIGMATH.to_dicts())])
    with pytest.raises(PriorError, match="prior_weight= 8 without prior="):
        TRLCurriculum.from_dataset(ds, prior_weight=8)
    with pytest.raises(ValueError, match="data.prior_weight 2.0 without data.prior"):
        load_config(None, ["data.prior_weight=2"])
    assert load_config(None, ["data.prior=bigmath"]).data.prior_weight is None  # the default, 4, when read


class SkyworkRows:
    """verl's RLHFDataset rows in Skywork-OR1's layout, read row by row."""

    def __len__(self):
        return len(SKYWORK)

    def __getitem__(self, i):
        return SKYWORK[i]
