# docs/RESULTS.md (`make results-doc`) from the reports of every run configuration listed in
# scripts/dvc_runs.yaml (this config's are outputs of its report rules; the others' are their
# committed files). Not part of `all`: `make results-doc` runs this rule alone on the reports as
# they are (--allowed-rules, so nothing upstream is recomputed).
DVC_RUNS = "scripts/dvc_runs.yaml"


rule results_doc:
    input:
        configs=lambda wc: [c for c, _ in plan.results_doc_runs(DVC_RUNS)],
        runs=DVC_RUNS,
        reports=lambda wc: plan.results_doc_reports(DVC_RUNS),
    output:
        "docs/RESULTS.md",
    log:
        f"{LOGS}/results_doc.log",
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    params:
        code=CODE["results_doc"],
        reports=lambda wc: [r for _, r in plan.results_doc_runs(DVC_RUNS)],
    shell:
        "backretrieval step results-doc --run-configs {input.configs:q} --reports {params.reports:q} --dvc-runs {input.runs:q}"
        " --out {output:q} > {log:q} 2>&1"
