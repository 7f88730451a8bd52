# Parallel data (every generated or downloaded dataset; a bring-your-own one that says so):
# correlations with XLR, their significance, Table 1, Figure 2. Table 1's marks test BkR − CORR
# with items and encoder families as units, so the step reads the per-query ranks, the samples and the
# image features (CORR's per-query contributions) besides the metrics.
if PARALLEL:

    rule report:
        input:
            metrics=[metrics_file(d) for d in config["directions"]],
            ranks=[ranks_file(d) for d in config["directions"]],
            samples=[samples_file(d) for d in config["directions"]],
            image=image_emb(),
            dataset=DATASET,
            text=[text_emb(e, lang) for e in config["encoders"] for lang in config["languages"]],
        output:
            correlations=str(layout.correlations_path(config)),
            table1=report(REPORTS["table1"], category="Tables", caption="../report/table1.rst"),
            table1_tex=REPORTS["table1_tex"],
            corr_ci=report(REPORTS["corr_ci"], category="Tables", caption="../report/ci.rst"),
            recall_ci=report(REPORTS["recall_ci"], category="Tables", caption="../report/ci.rst"),
            metrics=REPORTS["metrics"],
            significance=report(REPORTS["significance"], category="Tables", caption="../report/significance.rst"),
            fig2_png=report(REPORTS["fig2_png"], category="Figures", caption="../report/fig2.rst"),
            fig2_svg=REPORTS["fig2_svg"],
            fig2_pdf=REPORTS["fig2_pdf"],
            fig2_csv=REPORTS["fig2_csv"],
            means=report(REPORTS["means"], category="Tables", caption="../report/encoder_means.rst"),
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
            encoders=list(config["encoders"]),
            languages=config["languages"],
            settings=as_json(report_settings(config)),
        shell:
            "backretrieval report --metrics {input.metrics:q} --dataset {input.dataset:q} --encoders {params.encoders:q}"
            " --languages {params.languages:q} --text-emb {input.text:q} --settings {params.settings:q}"
            " --samples {input.samples:q} --image-emb {input.image:q}"
            " --out-correlations {output.correlations:q} --out-table1 {output.table1:q} --out-table1-tex {output.table1_tex:q}"
            " --out-corr-ci {output.corr_ci:q} --out-recall-ci {output.recall_ci:q} --out-metrics {output.metrics:q}"
            " --out-significance {output.significance:q} --out-fig2-png {output.fig2_png:q} --out-fig2-svg {output.fig2_svg:q}"
            " --out-fig2-pdf {output.fig2_pdf:q} --out-fig2-csv {output.fig2_csv:q} --out-means {output.means:q} > {log:q} 2>&1"


# A dataset without parallel texts (PARALLEL false: the method's main use): BkR only. No Table 1,
# Figure 2 or correlations, which all need XLR's ground-truth correspondences between languages;
# instead BkR per encoder and direction with CIs, the ranking with pairwise McNemar tests on the
# per-query hits (the ranks beside each metrics CSV), the random baseline and a figure.
if not PARALLEL:

    rule report:
        input:
            metrics=[metrics_file(d) for d in config["directions"]],
            ranks=[ranks_file(d) for d in config["directions"]],
            dataset=DATASET,
            text=[text_emb(e, lang) for e in config["encoders"] for lang in config["languages"]],
        output:
            bkr_report=report(REPORTS["bkr_report"], category="Tables", caption="../report/bkr_report.rst"),
            bkr_ci=report(REPORTS["bkr_ci"], category="Tables", caption="../report/ci.rst"),
            ranking=REPORTS["ranking"],
            pairwise=report(REPORTS["pairwise"], category="Tables", caption="../report/pairwise.rst"),
            metrics=REPORTS["metrics"],
            bkr_png=report(REPORTS["bkr_png"], category="Figures", caption="../report/bkr_per_encoder.rst"),
            bkr_svg=REPORTS["bkr_svg"],
            bkr_pdf=REPORTS["bkr_pdf"],
            means=report(REPORTS["means"], category="Tables", caption="../report/encoder_means.rst"),
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
            encoders=list(config["encoders"]),
            languages=config["languages"],
            settings=as_json(report_settings(config)),
        shell:
            "backretrieval report --metrics {input.metrics:q} --dataset {input.dataset:q} --encoders {params.encoders:q}"
            " --languages {params.languages:q} --text-emb {input.text:q} --settings {params.settings:q}"
            " --out-bkr-report {output.bkr_report:q} --out-bkr-ci {output.bkr_ci:q} --out-ranking {output.ranking:q}"
            " --out-pairwise {output.pairwise:q} --out-metrics {output.metrics:q} --out-bkr-png {output.bkr_png:q}"
            " --out-bkr-svg {output.bkr_svg:q} --out-bkr-pdf {output.bkr_pdf:q} --out-means {output.means:q} > {log:q} 2>&1"
