rule report:
    input:
        [metrics_file(d) for d in config["directions"]],
    output:
        table1=report(f"{REPORTS}/table1.md", category="Tables", caption="../report/table1.rst"),
        table1_tex=f"{REPORTS}/table1.tex",
        corr_ci=report(f"{REPORTS}/correlations_ci.csv", category="Tables", caption="../report/ci.rst"),
        recall_ci=report(f"{REPORTS}/recall_ci.csv", category="Tables", caption="../report/ci.rst"),
        metrics=f"{REPORTS}/metrics.json",
        significance=report(f"{REPORTS}/significance.csv", category="Tables", caption="../report/significance.rst"),
        fig2_png=report(f"{REPORTS}/figures/fig2_scatter.png", category="Figures", caption="../report/fig2.rst"),
        fig2_svg=f"{REPORTS}/figures/fig2_scatter.svg",
        fig2_pdf=f"{REPORTS}/figures/fig2_scatter.pdf",
        fig2_csv=f"{REPORTS}/plots/fig2_xlr_vs_bkr.csv",
        means=report(f"{REPORTS}/plots/encoder_means.csv", category="Tables", caption="../report/encoder_means.rst"),
        done=touch(f"{FLAGS}/report.done"),
    params:
        config=CONFIG,
        slice=slice_hash("figure_seed", "reports_dir", "stats"),
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/report.log",
    shell:
        "backretrieval report --config {params.config} > {log} 2>&1"
