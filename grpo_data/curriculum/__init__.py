"""Curriculum: which problems the trainer gets next, and how many answers each one gets.

    stats            Beta and grid posteriors over pass rates, band probabilities, the stopping rule
    band_math        the band scheduler's math as pure functions over arrays
    cell_index       problems filed by cell, drawn in proportion to a shared score
    band_scheduler   problems likely in the target band of pass rates, from the prior and every
                     group the trainer scores
    band_selection   how the band scheduler picks a batch among its candidates, and what to re-estimate
    band_state       what the band scheduler reports (`stats`, the dry band's log) and saves for a resume
    peer_schedulers  prime-rl's difficulty pools and GRESO's skipping, rebuilt as schedulers
    posterior_samplers  Thompson sampling over Beta posteriors and sGPO's one-profile curriculum
    scheduler        the scheduler interface and `make_scheduler`, the registry by name
    scheduler_state  a scheduler's state on disk (arrays, no pickle), for resuming
    allocation       how many answers each problem gets
    estimates        each problem's pass-rate estimate, for shards, cards and plots
    prior_sources    where a prior's values live (specs, presets) and how one becomes a pass rate
    prior_columns    a dataset's own columns read as a prior
    prior_profile    an earlier profile (another checkpoint or model) read as a prior
    prior_offset     the logit offset between two models, fitted on problems both measured
    priors           the entry point that reads any of these as a discounted prior

Public names import their module on first use: `from grpo_data.curriculum import make_scheduler`.
"""

from grpo_data.lazy import lazy_exports

_HOMES = {
    "Scheduler": "scheduler", "UniformScheduler": "scheduler", "make_scheduler": "scheduler",
    "BandConfig": "band_scheduler", "BandScheduler": "band_scheduler",
    "PoolsConfig": "peer_schedulers", "PoolsScheduler": "peer_schedulers",
    "GresoConfig": "peer_schedulers", "GresoScheduler": "peer_schedulers",
    "ThompsonConfig": "posterior_samplers", "ThompsonScheduler": "posterior_samplers",
    "SgpoConfig": "posterior_samplers", "SgpoScheduler": "posterior_samplers",
    "save_state": "scheduler_state", "load_state": "scheduler_state",
    "Sizing": "allocation", "VarianceSchedule": "allocation", "allocate": "allocation",
    "posterior": "stats", "credible_interval": "stats", "StoppingRule": "stats",
    "with_estimates": "estimates",
    "Prior": "prior_sources", "PriorError": "prior_sources", "read_prior": "priors",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
