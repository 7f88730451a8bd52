# docs/RESULTS.md (`make results-doc`; helpers in common.smk) from the reports of every run configuration
# listed in scripts/dvc_runs.yaml (this config's reports are outputs of its report rules; the others' are their committed
# files, made by running that config). Not part of `all`: `make results-doc` runs this rule
# alone on the reports as they are (--allowed-rules, so nothing upstream is recomputed).
RESULTS_DOC = "docs/RESULTS.md"
DVC_RUNS = "scripts/dvc_runs.yaml"


rule results_doc:
    input:
        configs=lambda wc: [c for c, _ in results_doc_runs()],
        runs=DVC_RUNS,
        reports=results_doc_reports,
    output:
        RESULTS_DOC,
    log:
        f"{LOGS}/results_doc.log",
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    params:
        reports=lambda wc: [r for _, r in results_doc_runs()],
    shell:
        "backretrieval results-doc --run-configs {input.configs:q} --reports {params.reports:q} --dvc-runs {input.runs:q}"
        " --out {output:q} > {log:q} 2>&1"
