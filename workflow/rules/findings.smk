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
            " backretrieval step findings --analysis {params.analysis:q} {params.run:q} --run-name {params.run_name:q}"
            " --out-dir {params.out_dir:q} --settings {params.settings:q} {params.job:q} > {log:q} 2>&1"


# ---- intermediate artifacts: other backbones' features (an analysis's input `backbones`) -------
use rule embed_images as findings_embed_backbone with:
    output:
        FP.backbone_image("{backbone}"),
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


# ---- an analysis's own dataset and its embeddings (its OwnData), findings_<analysis>_<kind> ----
for _name in FP.own:
    if "dataset" in FP.intermediates(_name):

        rule:
            name:
                f"findings_{_name}_dataset"
            output:
                directory(FP.own_dataset(_name)),
            log:
                f"{LOGS}/findings/{_name}_dataset.log",
            shadow:
                SHADOW
            conda:
                CONDA_ENV
            params:
                **FP.own_params(_name, "dataset", code=CODE["prepare"]),
            shell:
                "backretrieval step prepare --spec {params.spec:q} --languages {params.languages:q} --out-dir {output:q} > {log:q} 2>&1"

    if "embed_text" in FP.intermediates(_name):

        rule:
            name:
                f"findings_{_name}_embed_text"
            input:
                dataset=FP.own_dataset(_name),
            output:
                FP.own_texts(_name),
            log:
                f"{LOGS}/findings/{_name}_embed/{{encoder}}.log",
            wildcard_constraints:
                encoder="|".join(FP.own[_name].encoders),
            shadow:
                SHADOW
            conda:
                CONDA_ENV
            threads: HEAVY_THREADS
            resources:
                mem_mb=4000,
            params:
                **FP.own_params(_name, "embed_text", code=CODE["embed"], threads=MODEL_THREADS),
            shell:
                "backretrieval step embed-text --dataset {input.dataset:q} --encoder {wildcards.encoder:q}"
                " --spec {params.spec:q} --text-field {params.field:q} --languages {params.languages:q} --out {output:q}"
                " {params.skip:q} --cache-dir {params.cache:q} --threads {params.threads:q} > {log:q} 2>&1"

    if "embed_images" in FP.intermediates(_name):

        rule:
            name:
                f"findings_{_name}_embed_images"
            input:
                dataset=FP.own_dataset(_name),
            output:
                FP.own_image(_name),
            log:
                f"{LOGS}/findings/{_name}_embed_images.log",
            benchmark:
                f"{LOGS}/benchmarks/findings/{_name}_embed_images.tsv"
            shadow:
                SHADOW
            conda:
                CONDA_ENV
            threads: HEAVY_THREADS
            resources:
                mem_mb=4000,
            params:
                **FP.own_params(_name, "embed_images", code=CODE["embed"], threads=MODEL_THREADS),
            shell:
                "backretrieval step embed-images --dataset {input.dataset:q} --image-backbone {params.backbone:q}"
                " --spec {params.spec:q} --out {output:q} --cache-dir {params.cache:q} --threads {params.threads:q} > {log:q} 2>&1"


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
        "backretrieval step findings-document --records {input.own:q} {params.others:q} --out-doc {output.doc:q}"
        " --out-dir {output.summary:q} --readme {params.readme:q} > {log:q} 2>&1"


rule findings:
    """Every findings analysis of the current config, then
    docs/FINDINGS.md from every configuration's findings records."""
    input:
        FP.records,
        FP.doc,
        f"{FP.artifacts}/findings.done",
