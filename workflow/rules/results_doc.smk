# docs/RESULTS.md (helpers and the reasons: results_doc_common.smk). `make results-doc`.


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
        "backretrieval results-doc --run-configs {input.configs} --reports {params.reports} --dvc-runs {input.runs}"
        " --out {output} > {log} 2>&1"
