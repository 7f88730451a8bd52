# The tables and figures of the run: with parallel texts Table 1, Figure 2 and the correlations
# with XLR (Table 1's marks test BkR - CORR with items and encoder families as units); without
# them (the method's main use) BkR per encoder and direction, its ranking with pairwise McNemar
# tests on the per-query hits, the random baseline and a figure (steps.plan.Plan.report_outputs).
# Reads (steps.settings.report_settings): run_name, encoders, languages, seeds, text_field,
# image_backbone, figure_seed, stats, model_threads; N and k from the metrics files.
rule report:
    input:
        **plan.report_inputs(),
    output:
        **with_captions(plan.report_outputs()),
        done=touch(f"{FLAGS}/report.done"),
    log:
        f"{LOGS}/report.log",
    benchmark:
        f"{LOGS}/benchmarks/report.tsv"
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    params:
        code=CODE["report"],
        encoders=list(config["encoders"]),
        languages=config["languages"],
        settings=as_json(report_settings(config)),
    shell:
        "backretrieval report --metrics {input.metrics:q} --dataset {input.dataset:q} --encoders {params.encoders:q}"
        " --languages {params.languages:q} --text-emb {input.text:q} --settings {params.settings:q}"
        " --samples {input.samples:q}"
        + (
            " --image-emb {input.image:q} --out-correlations {output.correlations:q} --out-table1 {output.table1:q}"
            " --out-table1-tex {output.table1_tex:q} --out-corr-ci {output.corr_ci:q} --out-recall-ci {output.recall_ci:q}"
            " --out-metrics {output.metrics:q} --out-headline {output.headline:q} --out-significance {output.significance:q}"
            " --out-fig2-png {output.fig2_png:q} --out-fig2-svg {output.fig2_svg:q} --out-fig2-pdf {output.fig2_pdf:q}"
            " --out-fig2-csv {output.fig2_csv:q} --out-means {output.means:q} > {log:q} 2>&1"
            if PARALLEL
            else " --out-bkr-report {output.bkr_report:q} --out-bkr-ci {output.bkr_ci:q} --out-ranking {output.ranking:q}"
            " --out-pairwise {output.pairwise:q} --out-metrics {output.metrics:q} --out-headline {output.headline:q}"
            " --out-bkr-png {output.bkr_png:q}"
            " --out-bkr-svg {output.bkr_svg:q} --out-bkr-pdf {output.bkr_pdf:q} --out-means {output.means:q} > {log:q} 2>&1"
        )
