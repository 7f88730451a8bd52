"""Pipeline steps: one module per step, each a thin function over the library that takes its
input and output paths and its settings as arguments; the file-based CLI
(``backretrieval <step>``) calls them, the Snakemake rules call the CLI. :mod:`.layout` is the
artifact layout (config → paths) that only the workflow and ``validate-config`` use."""
