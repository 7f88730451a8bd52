"""Pipeline steps: one module per step, each a thin function over the library that the CLI
(``backretrieval <step>``), the Snakemake rules and the DVC stages call. :mod:`.layout` is the
artifact layout (config → paths) they all share."""
