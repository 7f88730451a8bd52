# Backretrieval workflow. Run: snakemake --cores 8
# Config: params.yaml (also DVC's params file); a config file is laid over it, naming only what
# differs (a named configuration, or yours):
#   snakemake --cores 8 --configfile config/multi30k.yaml
import gc

from snakemake.utils import min_version

from backretrieval.config import BASE_CONFIG, layered_config, overlay

min_version("8.0")

# params.yaml, each --configfile laid over it, then the --config values laid over those, by one
# rule (backretrieval.config.overlay: mappings merge key by key, except dataset, encoders,
# backbones and corpora, which a layer replaces whole; params.yaml's run_name, reports_dir,
# case_study and human_study are its own run's). Validated once, in workflow/rules/common.smk.
_LAYERED, CONFIG_SOURCE = layered_config(workflow.overwrite_configfiles, BASE_CONFIG)
_CLI_VALUES = dict(getattr(getattr(workflow, "config_settings", None), "config", None) or {})
config.clear()
config.update(overlay(_LAYERED, _CLI_VALUES))


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/case_study.smk"
include: "workflow/rules/results_doc.smk"
include: "workflow/rules/findings.smk"


# Everything loaded so far (Snakemake and its plugins, this workflow, the backretrieval library)
# lives as long as this process: frozen, the garbage collector no longer walks it in the run's
# full collections and the interpreter's final ones at exit, a large share of the CPU time of
# each short Snakemake process (a DVC stage, a cluster job; benchmarks/bench_startup.py).
gc.freeze()


rule all:
    default_target: True
    input:
        plan.all_outputs(),
