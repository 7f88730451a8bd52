# Findings (issue 15): every analysis of the current config -> <reports_dir>/findings/*
# (tables, figures, <analysis>.json), then docs/FINDINGS.md + reports/findings_summary/* from
# every configuration's findings JSONs. Target: `snakemake findings` (with --configfile for a
# named config). Each rule names its inputs, outputs and settings explicitly on the command
# line of one `backretrieval findings-*` subcommand; no step derives a path from the config.
# Helpers and settings: findings_common.smk. Blocks: findings-a (inference, calibration, bli,
# agreement, document); findings-b (image quality, sample size, hubness). Every block appends
# the JSON records of its analyses to FINDINGS_JSON (findings_common.smk), which the
# `findings` target and the document rule collect.


# ============================================================================================
# findings-a: 1 unit of inference, 5 calibration + soft BkR, 6 BLI + agreement, the document


rule findings_inference:
    input:
        unpack(findings_run_inputs),
    output:
        json=f"{FINDINGS}/inference.json",
        csv=f"{FINDINGS}/inference.csv",
        md=f"{FINDINGS}/inference.md",
        fig=findings_figure("inference_ci"),
    params:
        k=config["k"],
        run_name=RUN,
        out_dir=findings_dir,
        B=FINDINGS_A["inference"]["B"],
        seed=FINDINGS_A["inference"]["bootstrap_seed"],
        n_seeds=FINDINGS_A["inference"]["n_seeds"],
        max_pairs=FINDINGS_A["inference"]["corr_max_pairs"] or 0,
        random=" ".join(RANDOM_ENCODERS),
        family=" ".join(WORDVEC_ENCODERS),
    threads: 1
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/findings/inference.log",
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads} "
        "backretrieval findings-inference --dataset {input.dataset} --metrics {input.metrics} --ranks {input.ranks} "
        "--samples {input.samples} --image-emb {input.image} --text-emb {input.text} --k {params.k} "
        "--run-name {params.run_name} --out-dir {params.out_dir} --B {params.B} --bootstrap-seed {params.seed} "
        "--n-seeds {params.n_seeds} --corr-max-pairs {params.max_pairs} --random-encoders {params.random} "
        "--family {params.family} > {log} 2>&1"


rule findings_calibration:
    input:
        unpack(findings_run_inputs),
    output:
        json=f"{FINDINGS}/calibration.json",
        csv=f"{FINDINGS}/calibration.csv",
        md=f"{FINDINGS}/calibration.md",
        soft=f"{FINDINGS}/calibration_soft.csv",
        points=f"{FINDINGS}/calibration_points.csv",
        fig=findings_figure("calibration"),
    params:
        k=config["k"],
        run_name=RUN,
        out_dir=findings_dir,
        soft_m=" ".join(str(m) for m in FINDINGS_A["calibration"]["soft_m"]),
    threads: 1
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/findings/calibration.log",
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads} "
        "backretrieval findings-calibration --dataset {input.dataset} --metrics {input.metrics} --ranks {input.ranks} "
        "--samples {input.samples} --image-emb {input.image} --text-emb {input.text} --k {params.k} "
        "--run-name {params.run_name} --out-dir {params.out_dir} --soft-m {params.soft_m} > {log} 2>&1"


rule findings_bli:
    input:
        dataset=DATASET_DIR,
        metrics=[metrics_file(d) for d in config["directions"]],
        wordvec=wordvec_inputs,
    output:
        json=f"{FINDINGS}/bli.json",
        tables=BLI_OUTPUTS,
    params:
        k=config["k"],
        run_name=RUN,
        out_dir=findings_dir,
        specs=wordvec_spec_args(),
        s=FINDINGS_A["bli"],
    threads: 1
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/findings/bli.log",
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads} "
        "backretrieval findings-bli --dataset {input.dataset} --metrics {input.metrics} --k {params.k} "
        "--run-name {params.run_name} --out-dir {params.out_dir} {params.specs} --test-size {params.s[test_size]} "
        "--min-count {params.s[min_count]} --seed {params.s[seed]} --csls-k {params.s[csls_k]} > {log} 2>&1"


rule findings_agreement:
    input:
        dataset=DATASET_DIR,
        metrics=[metrics_file(d) for d in config["directions"]],
        points=f"{FINDINGS}/calibration_points.csv",
        bli=[f"{FINDINGS}/bli.csv"] if WORDVEC_ENCODERS else [],
    output:
        json=f"{FINDINGS}/agreement.json",
        csv=f"{FINDINGS}/agreement.csv",
        md=f"{FINDINGS}/agreement.md",
        fig=findings_figure("agreement_clustermap"),
    params:
        k=config["k"],
        run_name=RUN,
        out_dir=findings_dir,
        bli=lambda wc, input: f"--bli {input.bli}" if input.bli else "",
        s=FINDINGS_A["agreement"],
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/findings/agreement.log",
    shell:
        "backretrieval findings-agreement --dataset {input.dataset} --metrics {input.metrics} --k {params.k} "
        "--run-name {params.run_name} --out-dir {params.out_dir} --points {input.points} {params.bli} "
        "--soft-m {params.s[soft_m]} --B {params.s[B]} --bootstrap-seed {params.s[bootstrap_seed]} > {log} 2>&1"


rule findings_document:
    input:
        own=lambda wc: FINDINGS_JSON,
        others=other_configs_findings(),
    output:
        doc=FINDINGS_DOC,
        overall=f"{FINDINGS_SUMMARY}/overall.json",
        lodo=f"{FINDINGS_SUMMARY}/calibration_lodo.json",
        done=touch(f"{FLAGS}/findings.done"),
    params:
        summary=lambda wc, output: str(Path(output.overall).parent),
        others=lambda wc, input: [p for p in input.others if p.endswith(".json")],
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/findings/document.log",
    shell:
        # README.md's generated verdict block is rewritten in place (not a declared output:
        # a failed job must never delete the README)
        "backretrieval findings-document --records {input.own} {params.others} --doc {output.doc} "
        "--summary-dir {params.summary} --readme README.md > {log} 2>&1"


rule findings:
    input:
        lambda wc: FINDINGS_JSON,
        FINDINGS_DOC,
        f"{FLAGS}/findings.done",
