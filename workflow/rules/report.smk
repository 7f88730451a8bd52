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
        # reports_dir, where metrics.json is: the step writes the report files under it by their
        # names (layout.REPORT_FILES or BKR_REPORT_FILES, as plan.report_outputs declares them)
        out_dir=lambda wc, output: str(Path(output.metrics).parent),
    shell:
        "backretrieval step report --metrics {input.metrics:q} --dataset {input.dataset:q} --encoders {params.encoders:q}"
        " --languages {params.languages:q} --text-emb {input.text:q} --settings {params.settings:q}"
        " --samples {input.samples:q}"
        + (" --image-emb {input.image:q} --out-correlations {output.correlations:q}" if PARALLEL else "")
        + " --out-dir {params.out_dir:q} > {log:q} 2>&1"
