# Findings (docs/FINDINGS.md): every analysis of the current config over the main pipeline's
# artifacts -> <reports_dir>/findings/<analysis>.{csv,md,json} (+ figures/), then docs/FINDINGS.md,
# reports/findings_summary/* and the README's verdict block from every configuration's committed
# findings records. Target: `snakemake findings`. One rule per analysis, findings_<name>, made
# by the loop below (steps.findings_plan.FindingsPlan: its files and settings); adding an analysis adds its rule.
from backretrieval.steps.findings_plan import FindingsPlan

FP = FindingsPlan(plan)

for _name in FP.classes:

    rule:
        name:
            f"findings_{_name}"
        input:
            **FP.run(_name)[0],
        output:
            **FP.outputs_of(_name),
        log:
            f"{LOGS}/findings/{_name}.log",
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        params:
            **FP.params(_name),
            code=CODE["findings"],
        shell:
            "OMP_NUM_THREADS={threads:q} OPENBLAS_NUM_THREADS={threads:q} MKL_NUM_THREADS={threads:q}"
            " backretrieval findings --analysis {params.analysis:q} {params.run:q} --run-name {params.run_name:q}"
            " --out-dir {params.out_dir:q} --settings {params.settings:q} {params.job:q} > {log:q} 2>&1"


# ---- the intermediate artifacts of image quality and sample size -------------------------------
use rule embed_images as findings_embed_backbone with:
    output:
        FP.iq_image("{backbone}"),
    log:
        f"{LOGS}/findings/embed_backbone/{{backbone}}.log",
    benchmark:
        f"{LOGS}/benchmarks/findings/embed_backbone/{{backbone}}.tsv"
    wildcard_constraints:
        backbone="|".join(FP.backbones) or "(?!x)x",
    threads: HEAVY_THREADS
    params:
        backbone=lambda wc: wc.backbone,
        spec=lambda wc: as_json(FP.backbones[wc.backbone]),
        threads=MODEL_THREADS,


if FP.synthetic:

    rule findings_sample_size_dataset:
        output:
            directory(FP.ss_dataset),
        log:
            f"{LOGS}/findings/sample_size_dataset.log",
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        params:
            code=CODE["prepare"],
            spec=FP.ss_dataset_spec(),
            languages=FP.ss["synthetic"]["languages"],
        shell:
            "backretrieval prepare --spec {params.spec:q} --languages {params.languages:q} --out-dir {output:q} > {log:q} 2>&1"

    use rule embed_text as findings_sample_size_embed_text with:
        input:
            dataset=FP.ss_dataset,
        output:
            [FP.ss_text("{encoder}", lang) for lang in FP.ss_langs],
        log:
            f"{LOGS}/findings/sample_size_embed/{{encoder}}.log",
        benchmark:
            f"{LOGS}/benchmarks/findings/sample_size_embed/{{encoder}}.tsv"
        wildcard_constraints:
            encoder="|".join(FP.ss["encoders"]),
        threads: HEAVY_THREADS
        params:
            rerun_trigger=lambda wc: rerun_on(FP.ss["encoders"][wc.encoder]),
            spec=lambda wc, input: as_json(FP.ss["encoders"][wc.encoder]),
            languages=FP.ss_langs,
            skip=[],

    use rule embed_images as findings_sample_size_embed_images with:
        input:
            dataset=FP.ss_dataset,
        output:
            FP.ss_image,
        log:
            f"{LOGS}/findings/sample_size_embed_images.log",
        benchmark:
            f"{LOGS}/benchmarks/findings/sample_size_embed_images.tsv"
        threads: HEAVY_THREADS
        params:
            threads=MODEL_THREADS,


# ---- across configurations: docs/FINDINGS.md, the overall verdict ------------------------------
# readme: README.md's verdict block, rewritten in place (outside the declared files: a failed job
# must never delete the README)
rule findings_document:
    input:
        **FP.document_inputs(),
    output:
        doc=FP.doc,
        summary=directory(FP.summary),
        done=touch(f"{FP.artifacts}/findings.done"),
    log:
        f"{LOGS}/findings/document.log",
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    params:
        code=CODE["findings"],
        others=lambda wc, input: [p for p in input.others if p.endswith(".json")],
        readme=lambda wc, input: plan.absolute("README.md"),
    shell:
        "backretrieval findings-document --records {input.own:q} {params.others:q} --out-doc {output.doc:q}"
        " --out-dir {output.summary:q} --readme {params.readme:q} > {log:q} 2>&1"


rule findings:
    """Every findings analysis of the current config, then
    docs/FINDINGS.md from every configuration's findings records."""
    input:
        FP.records,
        FP.doc,
        f"{FP.artifacts}/findings.done",
