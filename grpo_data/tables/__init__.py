"""Tables: the canonical problem table and everything that reads, writes or reshapes one.

    problems    the schema every stage reads (problem_id, prompt, answer, level, source, ...)
    readers     a dataset's records as columnar frames of the fields a preset names
    sources     where records are: files, folders, save_to_disk folders, Hub names
    presets     dataset shapes: which fields hold question, answer, id, level; answer extraction
    loaders     any math dataset -> the canonical table, rejects written out with their reason
    mixture     several datasets in one pool, weighted or capped, deduplicated across sources
    decontam    training problems that overlap an evaluation set, removed
    shards      difficulty-bucketed, checksummed parquet shards
    cards       Hugging Face dataset cards for a shard set
    card_provenance  a card's words on how its pass rates were measured and where its rows came from
    exports     profiles others can read (per-problem counts and the run that measured them)
    profile_table  a profile's columns, and reading one back with the problems it left out
    world       the embedded arithmetic world
    io          atomic writes (a crash leaves the old file or the new one)

Public names import their module on first use: `from grpo_data.tables import load_problems`.
"""

from grpo_data.lazy import lazy_exports

_HOMES = {
    "to_table": "problems", "validate_table": "problems", "empty_table": "problems",
    "DataError": "readers",
    "load_problems": "loaders", "LoadResult": "loaders", "LoadLimits": "loaders",
    "build_mixture": "mixture", "read_mixture": "mixture",
    "DecontamConfig": "decontam", "decontaminate": "decontam",
    "write_shards": "shards", "read_shards": "shards", "verify_shards": "shards",
    "ShardIntegrityError": "shards",
    "read_profile": "profile_table", "read_rejects": "profile_table",
    "export_profile": "exports", "read_export": "exports", "ExportError": "exports",
    "WorldConfig": "world", "default_pool": "world",
    "write_parquet": "io", "write_json": "io", "write_jsonl": "io", "write_text": "io",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
