# Case study (paper Section 3.2): only when params.yaml has a `case_study` section.
# Its rules have priority 1 (scheduling only): the chain case_embed -> select -> train ->
# evaluate -> report is the longest path of the default DAG, so it runs as soon as it can and
# the many independent metric jobs fill the cores around it.
if CASE:

    rule case_embed:
        input:
            unpack(case_inputs),
            check=ancient(CHECK),
            extra=encoder_extra_inputs,
            after=case_embed_after,
        output:
            fields=case_fields("{encoder}"),
            reprs=[case_repr("{encoder}", lang) for lang in CASE_LANGS],
        log:
            f"{LOGS}/case/embed/{{encoder}}.log",
        benchmark:
            f"{LOGS}/benchmarks/case/embed/{{encoder}}.tsv"
        wildcard_constraints:
            encoder="|".join(CASE_EMBED_ENCODERS),
        priority: 1
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        threads: embed_threads
        resources:
            mem_mb=4000,
        params:
            case=CASE_JSON,
            corpus=corpus_flag,
            rerun_trigger=lambda wc: rerun_on(config["encoders"][wc.encoder]),
            threads=MODEL_THREADS,
            spec=lambda wc, input: encoder_spec(wc.encoder),
            cache=lambda wc, input: absolute(config["cache_dir"]),
        shell:
            "backretrieval case-embed --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
            " --encoder {wildcards.encoder:q} --spec {params.spec:q} --out-fields {output.fields:q} --out-repr {output.reprs:q}"
            " --cache-dir {params.cache:q} --threads {params.threads:q} > {log:q} 2>&1"

    rule case_select:
        input:
            unpack(case_inputs),
            images=image_emb(),
            reprs=case_reprs(CASE["base_encoders"]),
        output:
            chosen=CHOSEN,
            csv=str(layout.select_bkr_path(config)),
        log:
            f"{LOGS}/case/select.log",
        benchmark:
            f"{LOGS}/benchmarks/case/select.tsv"
        priority: 1
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        params:
            case=CASE_JSON,
            corpus=corpus_flag,
            encoders=list(CASE["base_encoders"]),
        shell:
            "backretrieval case-select --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
            " --image-emb {input.images:q} --encoders {params.encoders:q} --repr {input.reprs:q}"
            " --out-chosen {output.chosen:q} --out-bkr {output.csv:q} > {log:q} 2>&1"

    # one job per (head, training seed): the {tseed} wildcard is one of case_study.training_seeds
    HEAD_FILES = layout.head_paths(config, "{head}", "{tseed}")

    rule case_train:
        input:
            unpack(case_inputs),
            chosen=CHOSEN,
            fields=[f for e in CASE["base_encoders"] for f in case_fields(e)],
        output:
            head=str(HEAD_FILES["head"]),
            meta=str(HEAD_FILES["meta"]),
            history=str(HEAD_FILES["history"]),
            curve=report(str(HEAD_FILES["curve"]), category="Case study", caption="../report/loss.rst"),
            reprs=[str(layout.head_repr_path(config, "{head}", "{tseed}", lang)) for lang in CASE_LANGS],
        log:
            f"{LOGS}/case/train_{{head}}_seed{{tseed}}.log",
        benchmark:
            f"{LOGS}/benchmarks/case/train_{{head}}_seed{{tseed}}.tsv"
        wildcard_constraints:
            head="triplet|tripletxl",
            tseed="|".join(map(str, CASE_TRAINING_SEEDS)),
        priority: 1
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        threads: MODEL_THREADS
        resources:
            mem_mb=4000,
        params:
            case=CASE_JSON,
            corpus=corpus_flag,
            encoders=list(CASE["base_encoders"]),
            threads=MODEL_THREADS,
        shell:
            "backretrieval case-train --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
            " --head {wildcards.head:q} --training-seed {wildcards.tseed:q} --chosen {input.chosen:q} --encoders {params.encoders:q} --fields {input.fields:q}"
            " --out-head {output.head:q} --out-meta {output.meta:q} --out-history {output.history:q}"
            " --out-curve {output.curve:q} --out-repr {output.reprs:q} --threads {params.threads:q} > {log:q} 2>&1"

    rule case_evaluate:
        input:
            unpack(case_inputs),
            images=image_emb(),
            reprs=case_reprs(CASE_RUNS),
        output:
            csv=CASE_BKR,
            hits=CASE_HITS,
        log:
            f"{LOGS}/case/evaluate.log",
        benchmark:
            f"{LOGS}/benchmarks/case/evaluate.tsv"
        priority: 1
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        params:
            case=CASE_JSON,
            corpus=corpus_flag,
            models=CASE_RUNS,
        shell:
            "backretrieval case-evaluate --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
            " --image-emb {input.images:q} --models {params.models:q} --repr {input.reprs:q}"
            " --out-bkr {output.csv:q} --out-hits {output.hits:q} > {log:q} 2>&1"

    rule case_report:
        input:
            unpack(case_inputs),
            chosen=CHOSEN,
            bkr=CASE_BKR,
            hits=CASE_HITS,
        output:
            table2=report(CASE_REPORTS["table2"], category="Case study", caption="../report/table2.rst"),
            table2_tex=CASE_REPORTS["table2_tex"],
            table2_csv=CASE_REPORTS["table2_csv"],
            sig=CASE_REPORTS["sig"],
            fig3_png=report(CASE_REPORTS["fig3_png"], category="Case study", caption="../report/fig3.rst"),
            fig3_svg=CASE_REPORTS["fig3_svg"],
            fig3_pdf=CASE_REPORTS["fig3_pdf"],
            metrics=CASE_REPORTS["metrics"],
            done=touch(f"{FLAGS}/case_report.done"),
        log:
            f"{LOGS}/case/report.log",
        benchmark:
            f"{LOGS}/benchmarks/case/report.tsv"
        priority: 1
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        params:
            case=CASE_JSON,
            corpus=corpus_flag,
            threads=MODEL_THREADS,
        shell:
            "backretrieval case-report --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
            " --chosen {input.chosen:q} --bkr {input.bkr:q} --hits {input.hits:q} --out-table2 {output.table2:q}"
            " --out-table2-tex {output.table2_tex:q} --out-table2-csv {output.table2_csv:q} --out-sig {output.sig:q}"
            " --out-fig3-png {output.fig3_png:q} --out-fig3-svg {output.fig3_svg:q} --out-fig3-pdf {output.fig3_pdf:q}"
            " --out-metrics {output.metrics:q} --threads {params.threads:q} > {log:q} 2>&1"

    rule human_sheets:
        input:
            unpack(case_inputs),
            chosen=CHOSEN,
            reprs=case_reprs(HUMAN_RUNS, [HUMAN["source_lang"], HUMAN["target_lang"]]),
        output:
            template=HUMAN_FILES["template"],
            html=HUMAN_FILES["html"],
            key=HUMAN_FILES["key"],
            page=HUMAN_FILES["page"],
        log:
            f"{LOGS}/case/human_sheets.log",
        benchmark:
            f"{LOGS}/benchmarks/case/human_sheets.tsv"
        priority: 1
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        params:
            case=CASE_JSON,
            corpus=corpus_flag,
            human=as_json({k: v for k, v in HUMAN.items() if k != "ratings"}),
            models=HUMAN_RUNS,
            languages=[HUMAN["source_lang"], HUMAN["target_lang"]],
        shell:
            "backretrieval human-sheets --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
            " --human {params.human:q} --chosen {input.chosen:q} --models {params.models:q}"
            " --languages {params.languages:q} --repr {input.reprs:q} --out-template {output.template:q}"
            " --out-html {output.html:q} --out-key {output.key:q} --out-page {output.page:q} > {log:q} 2>&1"

    # the simulated rater and the tally exist only where a tally can be made (HUMAN_TALLY), so
    # `make figures` never forces a rule the run cannot run
    if HUMAN_TALLY:

        rule human_simulate:
            input:
                dataset=DATASET,
                template=HUMAN_FILES["template"],
                key=HUMAN_FILES["key"],
            output:
                HUMAN_FILES["simulated"],
            log:
                f"{LOGS}/case/human_simulate.log",
            benchmark:
                f"{LOGS}/benchmarks/case/human_simulate.tsv"
            priority: 1
            shadow:
                SHADOW
            conda:
                CONDA_ENV
            params:
                seed=HUMAN["seed"],
            shell:
                "backretrieval human-simulate --dataset {input.dataset:q} --template {input.template:q} --key {input.key:q}"
                " --seed {params.seed:q} --out {output:q} > {log:q} 2>&1"

        rule human_tally:
            input:
                ratings=HUMAN_RATINGS,
                key=HUMAN_FILES["key"],
            output:
                md=report(HUMAN_FILES["tally_md"], category="Case study", caption="../report/human.rst"),
                json=HUMAN_FILES["tally_json"],
                done=touch(f"{FLAGS}/human_tally.done"),
            log:
                f"{LOGS}/case/human_tally.log",
            benchmark:
                f"{LOGS}/benchmarks/case/human_tally.tsv"
            priority: 1
            shadow:
                SHADOW
            conda:
                CONDA_ENV
            params:
                unverified=["--allow-unverified-key"] if HUMAN["allow_unverified_key"] else [],
                simulated=[] if HUMAN.get("ratings") else ["--simulated"],
            shell:
                "backretrieval human-tally --ratings {input.ratings:q} --key {input.key:q} {params.unverified:q}"
                " {params.simulated:q} --out-tally-md {output.md:q} --out-tally-json {output.json:q} > {log:q} 2>&1"
