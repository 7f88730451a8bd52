# The tables and figures of the run: with parallel texts Table 1, Figure 2 and the correlations
# with XLR (Table 1's marks test BkR - CORR with items and encoder families as units); without
# them (the method's main use) BkR per encoder and direction, its ranking with pairwise McNemar
# tests on the per-query hits, the random baseline and a figure (steps.plan.Plan.report_outputs).
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
        **plan.report_params(),
    shell:
        plan.report_command()
