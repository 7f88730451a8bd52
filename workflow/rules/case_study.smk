# Case study (paper Section 3.2): only when params.yaml has a `case_study` section. Its
# wildcards ({head}, {tseed}) are constrained with the others in common.smk. Each step gets the
# case_study section (resolved: study.case_config.case_cfg) as --case, or only the keys it reads
# (ITEM_KEYS, SELECT_KEYS), so a setting it does not read never reruns it; the training corpus
# (case_study.train_corpus) is a declared input.
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
            code=CODE["case_embed"],
            case=plan.case_section(ITEM_KEYS),
            corpus=corpus_flag,
            rerun_trigger=lambda wc: rerun_on(config["encoders"][wc.encoder]),
            threads=MODEL_THREADS,
            spec=lambda wc, input: plan.encoder_spec(wc.encoder),
            cache=plan.cache,
        shell:
            "backretrieval step case-embed --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
            " --encoder {wildcards.encoder:q} --spec {params.spec:q} --out-text-emb {output.fields:q} {output.reprs:q}"
            " --cache-dir {params.cache:q} --threads {params.threads:q} > {log:q} 2>&1"

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
            case=plan.case_section(SELECT_KEYS),
            corpus=corpus_flag,
            encoders=list(CASE["base_encoders"]),
        shell:
            "backretrieval step case-select --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
            " --image-emb {input.images:q} --encoders {params.encoders:q} --text-emb {input.reprs:q}"
            " --out-chosen {output.chosen:q} --out-bkr {output.csv:q} > {log:q} 2>&1"

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
            case=plan.case_section(),
            corpus=corpus_flag,
            encoders=list(CASE["base_encoders"]),
            threads=MODEL_THREADS,
        shell:
            "backretrieval step case-train --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
            " --head {wildcards.head:q} --training-seed {wildcards.tseed:q} --chosen {input.chosen:q}"
            " --encoders {params.encoders:q} --text-emb {input.fields:q}"
            " --out-head {output.head:q} --out-meta {output.meta:q} --out-history {output.history:q}"
            " --out-curve {output.curve:q} --out-text-emb {output.reprs:q} --threads {params.threads:q} > {log:q} 2>&1"

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
            case=plan.case_section(),
            corpus=corpus_flag,
            encoders=plan.case_runs,
        shell:
            "backretrieval step case-evaluate --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
            " --image-emb {input.images:q} --encoders {params.encoders:q} --text-emb {input.reprs:q}"
            " --out-bkr {output.csv:q} --out-hits {output.hits:q} > {log:q} 2>&1"

    rule case_report:
        input:
            **case_step_inputs(chosen=plan.chosen, bkr=plan.case_bkr, hits=plan.case_hits),
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
            case=plan.case_section(),
            corpus=corpus_flag,
            threads=MODEL_THREADS,
        shell:
            "backretrieval step case-report --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
            " --chosen {input.chosen:q} --bkr {input.bkr:q} --hits {input.hits:q} --out-table2 {output.table2:q}"
            " --out-table2-tex {output.table2_tex:q} --out-table2-csv {output.table2_csv:q} --out-sig {output.sig:q}"
            " --out-fig3-png {output.fig3_png:q} --out-fig3-svg {output.fig3_svg:q} --out-fig3-pdf {output.fig3_pdf:q}"
            " --out-metrics {output.metrics:q} --threads {params.threads:q} > {log:q} 2>&1"

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
            case=plan.case_section(),
            corpus=corpus_flag,
            # the human_study section but its ratings (those are the tally's input)
            human=as_json({k: v for k, v in HUMAN.items() if k != "ratings"}),
            encoders=plan.human_runs,
            languages=plan.human_langs,
        shell:
            "backretrieval step human-sheets --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
            " --human {params.human:q} --chosen {input.chosen:q} --encoders {params.encoders:q}"
            " --languages {params.languages:q} --text-emb {input.reprs:q} --out-template {output.template:q}"
            " --out-html {output.html:q} --out-key {output.key:q} --out-page {output.page:q} > {log:q} 2>&1"

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
                "backretrieval step human-simulate --dataset {input.dataset:q} --template {input.template:q}"
                " --key {input.key:q} --seed {params.seed:q} --out {output:q} > {log:q} 2>&1"

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
                unverified=["--allow-unverified-key"] if HUMAN["allow_unverified_key"] else [],
                simulated=[] if HUMAN.get("ratings") else ["--simulated"],
            shell:
                "backretrieval step human-tally --ratings {input.ratings:q} --key {input.key:q} {params.unverified:q}"
                " {params.simulated:q} --out-tally-md {output.tally_md:q} --out-tally-json {output.tally_json:q} > {log:q} 2>&1"
