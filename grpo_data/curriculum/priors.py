"""Difficulty another model measured, read from a dataset's own columns as a discounted prior.

Public training sets publish difficulty for free. A prior spec names where a row's value lives and
how it becomes a pass rate; `read_prior` turns a table's column into per-problem pseudo-counts that
the scheduler and the adaptive profiler weigh beside this model's own samples (`merge_offline`: added
to a profile's counts, moved by the offset fitted between the two; alone where there is no profile):

    prior = read_prior("bigmath", frame_columns(problems), weight=4)
    prior.n_correct, prior.k            # (N,) pseudo-counts, NaN where a row has no value

This module is the public face; the work lives in three modules, one responsibility each:

    grpo_data.curriculum.prior_sources   specs and presets (`parse_spec`, PRESETS, `keep_patterns`), the `Prior`
                                         they read into and its discount (`Prior.k`, DEFAULT_WEIGHT, `prior_weight`)
    grpo_data.curriculum.prior_columns   a table's columns read as a prior (`Columns`, `frame_columns`,
                                         `read_prior`, `stored_prior`), value by value, with errors naming the row
    grpo_data.curriculum.prior_offset    a prior beside this model's own counts: the logit offset between the
                                         models (`fit_logit_offset`, `offset_evidence`), the combined start
                                         (`merge_offline`), drift groups (`origin_groups`) and the refusals that
                                         keep samples from counting twice (`check_recorded_prior`)

An earlier profile read as a prior is `grpo_data.curriculum.prior_profile`. Every name below is imported from
here by the rest of the project; import from here.
"""

from grpo_data.curriculum.prior_columns import (
    SAMPLE_COUNT_FIELDS,
    Columns,
    dataset_columns,
    field_values,
    frame_columns,
    parse_number,
    read_prior,
    record_columns,
    row_sample_counts,
    stored_prior,
)
from grpo_data.curriculum.prior_offset import (
    Start,
    at_fitted_weight,
    check_other_samples,
    check_recorded_prior,
    fit_logit_offset,
    fit_moved_weight,
    fit_prior_weight,
    merge_offline,
    offset_evidence,
    origin_groups,
)
from grpo_data.curriculum.prior_sources import (
    AVG_COLUMN,
    DEFAULT_WEIGHT,
    PRESETS,
    Prior,
    PriorError,
    PriorSource,
    is_avg,
    keep_patterns,
    parse_spec,
    prior_weight,
    resolve,
)

__all__ = [
    "AVG_COLUMN", "DEFAULT_WEIGHT", "PRESETS", "SAMPLE_COUNT_FIELDS", "Columns", "Prior", "PriorError", "PriorSource",
    "Start", "at_fitted_weight", "check_other_samples", "check_recorded_prior", "dataset_columns", "field_values", "fit_logit_offset", "fit_moved_weight", "fit_prior_weight",
    "frame_columns", "is_avg", "keep_patterns", "merge_offline", "offset_evidence", "origin_groups", "parse_number",
    "parse_spec", "prior_weight", "read_prior", "record_columns", "resolve", "row_sample_counts", "stored_prior",
]
