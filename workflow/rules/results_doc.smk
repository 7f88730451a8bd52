# docs/RESULTS.md (`make results-doc`) from the reports of every run configuration
# listed in scripts/dvc_runs.yaml (this config's reports are outputs of its report rules; the others' are their committed
# files, made by running that config). Not part of `all`: `make results-doc` runs this rule
# alone on the reports as they are (--allowed-rules, so nothing upstream is recomputed).
import yaml

from backretrieval.reporting.results_doc import READS as RESULTS_DOC_READS
from backretrieval.steps.results_doc import listed_configs

RESULTS_DOC = "docs/RESULTS.md"
DVC_RUNS = "scripts/dvc_runs.yaml"


def results_doc_runs():
    """(config file, reports folder) of every listed run configuration; called by input
    functions only, so a run in another working directory (no run list there) still parses."""
    runs = []
    for cfg_file in listed_configs(DVC_RUNS):
        with open(cfg_file, encoding="utf-8") as f:
            cfg = yaml.safe_load(f)
        runs.append((cfg_file, str(layout.report_paths(cfg)["metrics"].parent)))
    return runs


def results_doc_reports(wildcards):
    """The report files the document reads: those that exist, and this config's own reports."""
    own = {REPORTS["metrics"], REPORTS.get("table1")}
    files = []
    for _, reports_dir in results_doc_runs():
        for rel in RESULTS_DOC_READS:
            path = str(Path(reports_dir) / rel)
            if path in own or Path(path).exists():
                files.append(path)
    return files


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
