# Case study (paper Section 3.2): only when params.yaml has a `case_study` section.
if CASE:

    rule case_embed:
        input:
            DATASET_DIR,
            encoder_extra_inputs,
            [CASE["train_corpus"]] if CASE.get("train_corpus") else [],
        output:
            case_embed_outputs("{encoder}"),
        params:
            config=CONFIG,
            spec=lambda wc: json.dumps(config["encoders"][wc.encoder], sort_keys=True),
            slice=slice_hash("case_study"),
        wildcard_constraints:
            encoder="|".join(CASE_EMBED_ENCODERS),
        threads: embed_threads
        resources:
            mem_mb=4000,
        conda:
            CONDA_ENV
        log:
            f"{LOGS}/case/embed/{{encoder}}.log",
        shell:
            "backretrieval case-embed --config {params.config} --encoder {wildcards.encoder} > {log} 2>&1"

    rule case_select:
        input:
            [case_repr(e, lang) for e in CASE["base_encoders"] for lang in CASE["languages"]],
            image_emb(),
        output:
            f"{CASE_ROOT}/chosen_base.json",
            f"{CASE_ROOT}/select_bkr.csv",
        params:
            config=CONFIG,
            slice=slice_hash("case_study"),
        conda:
            CONDA_ENV
        log:
            f"{LOGS}/case/select.log",
        shell:
            "backretrieval case-select --config {params.config} > {log} 2>&1"

    rule case_train:
        input:
            chosen=f"{CASE_ROOT}/chosen_base.json",
            fields=[case_field(e, lang, f) for e in CASE["base_encoders"] for lang in CASE["languages"] for f in ("title", "body")],
        output:
            head=f"{CASE_ROOT}/heads/{{head}}.pt",
            meta=f"{CASE_ROOT}/heads/{{head}}.json",
            history=f"{CASE_ROOT}/heads/{{head}}.history.csv",
            curve=report(f"{CASE_REPORTS}/figures/loss_{{head}}.png", category="Case study", caption="../report/loss.rst"),
            reprs=[f"{CASE_ROOT}/repr_heads/{{head}}/{lang}.npz" for lang in CASE["languages"]],
        params:
            config=CONFIG,
            slice=slice_hash("case_study"),
        wildcard_constraints:
            head="triplet|tripletxl",
        threads: HEAVY_THREADS
        resources:
            mem_mb=4000,
        conda:
            CONDA_ENV
        log:
            f"{LOGS}/case/train_{{head}}.log",
        shell:
            "backretrieval case-train --config {params.config} --head {wildcards.head} > {log} 2>&1"

    rule case_evaluate:
        input:
            [case_repr(m, lang) for m in CASE_MODELS for lang in CASE["languages"]],
            image_emb(),
        output:
            f"{CASE_ROOT}/bkr.csv",
            f"{CASE_ROOT}/bkr_hits.npz",
        params:
            config=CONFIG,
            slice=slice_hash("case_study"),
        conda:
            CONDA_ENV
        log:
            f"{LOGS}/case/evaluate.log",
        shell:
            "backretrieval case-evaluate --config {params.config} > {log} 2>&1"

    rule case_report:
        input:
            f"{CASE_ROOT}/bkr.csv",
            f"{CASE_ROOT}/bkr_hits.npz",
            f"{CASE_ROOT}/chosen_base.json",
        output:
            table2=report(f"{CASE_REPORTS}/table2.md", category="Case study", caption="../report/table2.rst"),
            table2_tex=f"{CASE_REPORTS}/table2.tex",
            table2_csv=f"{CASE_REPORTS}/table2.csv",
            sig=f"{CASE_REPORTS}/table2_significance.csv",
            fig3=report(f"{CASE_REPORTS}/figures/fig3_boxplot.png", category="Case study", caption="../report/fig3.rst"),
            fig3_svg=f"{CASE_REPORTS}/figures/fig3_boxplot.svg",
            fig3_pdf=f"{CASE_REPORTS}/figures/fig3_boxplot.pdf",
            metrics=f"{CASE_REPORTS}/metrics.json",
            done=touch(f"{FLAGS}/case_report.done"),
        params:
            config=CONFIG,
        conda:
            CONDA_ENV
        log:
            f"{LOGS}/case/report.log",
        shell:
            "backretrieval case-report --config {params.config} > {log} 2>&1"

    rule human_sheets:
        input:
            f"{CASE_ROOT}/chosen_base.json",
            [case_repr(m, lang) for m in CASE_MODELS for lang in (HUMAN["source_lang"], HUMAN["target_lang"])],
        output:
            template=f"{CASE_ROOT}/human/ratings_template.csv",
            html=f"{CASE_ROOT}/human/rating_sheet.html",
            key=f"{CASE_ROOT}/human/key.sealed.json",
            page=f"{CASE_REPORTS}/rating_sheet.html",
        params:
            config=CONFIG,
            slice=slice_hash("human_study"),
        conda:
            CONDA_ENV
        log:
            f"{LOGS}/case/human_sheets.log",
        shell:
            "backretrieval human-sheets --config {params.config} > {log} 2>&1"

    rule human_simulate:
        input:
            f"{CASE_ROOT}/human/ratings_template.csv",
            f"{CASE_ROOT}/human/key.sealed.json",
        output:
            f"{CASE_ROOT}/human/ratings.simulated.csv",
        params:
            config=CONFIG,
        conda:
            CONDA_ENV
        log:
            f"{LOGS}/case/human_simulate.log",
        shell:
            "backretrieval human-simulate --config {params.config} > {log} 2>&1"

    rule human_tally:
        input:
            ratings=HUMAN_RATINGS,
            key=f"{CASE_ROOT}/human/key.sealed.json",
        output:
            md=report(f"{CASE_REPORTS}/human_study.md", category="Case study", caption="../report/human.rst"),
            json=f"{CASE_REPORTS}/human_study.json",
            done=touch(f"{FLAGS}/human_tally.done"),
        params:
            config=CONFIG,
        conda:
            CONDA_ENV
        log:
            f"{LOGS}/case/human_tally.log",
        shell:
            "backretrieval human-tally --config {params.config} > {log} 2>&1"
