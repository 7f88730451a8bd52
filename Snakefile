# Backretrieval workflow. Run: snakemake --cores 8
# Config: params.yaml (also DVC's params file); a named config replaces it:
#   snakemake --cores 8 --configfile config/multi30k.yaml
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


rule all:
    default_target: True
    input:
        all_outputs(),
