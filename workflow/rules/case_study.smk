# Case study (paper Section 3.2): only when params.yaml has a `case_study` section. Its
# wildcards ({head}, {tseed}) are constrained with the others in common.smk.
if CASE:

    rule case_embed:
        input:
            unpack(case_embed_inputs),
        output:
            **plan.case_embed_outputs("{encoder}"),
        log:
            f"{LOGS}/case/embed/{{encoder}}.log",
        benchmark:
            f"{LOGS}/benchmarks/case/embed/{{encoder}}.tsv"
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        threads: plan.embed_threads
        resources:
            mem_mb=4000,
        params:
            code=CODE["case_study"],
            **plan.case_embed_params(),
        shell:
            COMMANDS["case-embed"]

    rule case_select:
        input:
            **case_step_inputs(images=plan.image_emb(), reprs=plan.case_reprs(CASE["base_encoders"])),
        output:
            chosen=plan.chosen,
            csv=plan.select_bkr,
        log:
            f"{LOGS}/case/select.log",
        benchmark:
            f"{LOGS}/benchmarks/case/select.tsv"
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        params:
            code=CODE["case_study"],
            **plan.case_params(plan.select_keys, encoders=list(CASE["base_encoders"])),
        shell:
            COMMANDS["case-select"]

    # one job per (head, training seed): {tseed} is one of case_study.training_seeds
    rule case_train:
        input:
            **case_step_inputs(chosen=plan.chosen, fields=plan.case_base_fields),
        output:
            **with_captions(plan.head_outputs()),
        log:
            f"{LOGS}/case/train_{{head}}_seed{{tseed}}.log",
        benchmark:
            f"{LOGS}/benchmarks/case/train_{{head}}_seed{{tseed}}.tsv"
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        threads: MODEL_THREADS
        resources:
            mem_mb=4000,
        params:
            code=CODE["case_study"],
            **plan.case_params(encoders=list(CASE["base_encoders"]), threads=MODEL_THREADS),
        shell:
            COMMANDS["case-train"]

    rule case_evaluate:
        input:
            **case_step_inputs(images=plan.image_emb(), reprs=plan.case_reprs(plan.case_runs)),
        output:
            csv=plan.case_bkr,
            hits=plan.case_hits,
        log:
            f"{LOGS}/case/evaluate.log",
        benchmark:
            f"{LOGS}/benchmarks/case/evaluate.tsv"
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        params:
            code=CODE["case_study"],
            **plan.case_params(models=plan.case_runs),
        shell:
            COMMANDS["case-evaluate"]

    rule case_report:
        input:
            **case_step_inputs(chosen=plan.chosen, bkr=plan.case_bkr),
        output:
            **with_captions(plan.case_reports),
            done=touch(f"{FLAGS}/case_report.done"),
        log:
            f"{LOGS}/case/report.log",
        benchmark:
            f"{LOGS}/benchmarks/case/report.tsv"
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        params:
            code=CODE["case_study"],
            **plan.case_params(threads=MODEL_THREADS),
        shell:
            COMMANDS["case-report"]

    rule human_sheets:
        input:
            **case_step_inputs(chosen=plan.chosen, reprs=plan.case_reprs(plan.human_runs, plan.human_langs)),
        output:
            **{k: plan.human_files[k] for k in ("template", "html", "key", "page")},
        log:
            f"{LOGS}/case/human_sheets.log",
        benchmark:
            f"{LOGS}/benchmarks/case/human_sheets.tsv"
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        params:
            code=CODE["human_study"],
            **plan.human_sheets_params(),
        shell:
            COMMANDS["human-sheets"]

    # the simulated rater and the tally exist only where a tally can be made (plan.human_tally),
    # so `make figures` never forces a rule the run cannot run
    if plan.human_tally:

        rule human_simulate:
            input:
                **{"dataset": DATASET, "template": plan.human_files["template"], "key": plan.human_files["key"]},
            output:
                plan.human_files["simulated"],
            log:
                f"{LOGS}/case/human_simulate.log",
            benchmark:
                f"{LOGS}/benchmarks/case/human_simulate.tsv"
            shadow:
                SHADOW
            conda:
                CONDA_ENV
            params:
                code=CODE["human_study"],
                seed=HUMAN["seed"],
            shell:
                COMMANDS["human-simulate"]

        rule human_tally:
            input:
                ratings=plan.human_ratings,
                key=plan.human_files["key"],
            output:
                **with_captions({k: plan.human_files[k] for k in ("tally_md", "tally_json")}),
                done=touch(f"{FLAGS}/human_tally.done"),
            log:
                f"{LOGS}/case/human_tally.log",
            benchmark:
                f"{LOGS}/benchmarks/case/human_tally.tsv"
            shadow:
                SHADOW
            conda:
                CONDA_ENV
            params:
                code=CODE["human_study"],
                **plan.human_tally_params(),
            shell:
                COMMANDS["human-tally"]
