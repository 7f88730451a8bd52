# Backretrieval workflow. Run: snakemake --cores 8
# Config: params.yaml (also DVC's params file); a named config replaces it:
#   snakemake --cores 8 --configfile config/multi30k.yaml
import gc

from snakemake.utils import min_version

min_version("8.0")

if not workflow.overwrite_configfiles:

    configfile: "params.yaml"


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
        all_outputs(),
