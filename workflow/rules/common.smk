# Config validation and what the rules share: the paths, settings and input functions of every
# job come from backretrieval.steps.plan (the files of backretrieval.steps.layout, the one
# config -> path mapping, and the settings of backretrieval.steps.settings).
from pathlib import Path

from backretrieval._util.code_version import SRC, step_versions
from backretrieval.config import overrides_from, validate_config
from backretrieval.steps.owner import check_reports_owner
from backretrieval.steps.prepare import check_dataset_fits
from backretrieval.steps.plan import CAPTIONS, Plan, as_json, corpus_flag, on_start, rerun_on, source_flag
from backretrieval.steps.settings import fit_requirements, report_settings
from backretrieval.study.case_config import HEADS, ITEM_KEYS, SELECT_KEYS

# The config as the Snakefile layered it (CONFIG_SOURCE names its files), validated once before
# any job runs: the schema (backretrieval.config.SCHEMA_PATH, its one copy), then every
# cross-field relation, as `backretrieval validate-config` and DVC check it, naming the file and
# field. An override is a `--config` value (config_settings.config), never a `--configfile` one.
# The relations that need the prepared dataset are the rule check_dataset.
validate_config(
    config,
    CONFIG_SOURCE,
    overrides_from(dict(getattr(getattr(workflow, "config_settings", None), "config", None) or {})),
)
# A reports folder belongs to the run (run_name) that made it (steps.owner).
check_reports_owner(config, CONFIG_SOURCE)

try:  # a model job claims every core Snakemake was given (scheduling only)
    HEAVY_THREADS = workflow.cores
except Exception:  # cluster/remote executors define no local core total
    HEAVY_THREADS = 4
plan = Plan(config, Path.cwd(), HEAVY_THREADS)
# The relations that need the prepared dataset, where it is prepared already: the check
# `backretrieval validate-config` makes, so `snakemake -n` refuses what it refuses (in the main
# process only: every job re-parses the workflow). Not yet prepared: the rule check_dataset.
if workflow.is_main_process and (Path(plan.dataset) / "dataset.json").is_file():
    check_dataset_fits(config, Path(plan.dataset))

# Each step's code version (backretrieval._util.code_version), every rule's param `code`: a job
# reruns when the code its step runs changes, and not for a comment or a docstring. The main
# process of a run in this checkout, on its own source tree, records them in
# workflow/code_versions.yaml, DVC's params of the code.
_HOME = Path(workflow.basedir).resolve()
_OWN = workflow.is_main_process and Path.cwd().resolve() == _HOME and SRC.resolve() == _HOME / "src"
CODE = step_versions(_HOME if _OWN else None)

# Every job runs in a minimal shadow directory (only its declared inputs linked), so an
# undeclared read fails; `sandbox: false` skips it (same bytes; Snakemake records no shadow).
SHADOW = "minimal" if config.get("sandbox", True) else None
CONDA_ENV = "../envs/backretrieval.yaml"
RUN, DATASET, CHECK, LOGS, FLAGS = plan.run, plan.dataset, plan.check, plan.logs, plan.flags
REPORTS, PARALLEL = plan.reports, plan.parallel
MODEL_THREADS = plan.model_threads
CASE, HUMAN = plan.case, plan.human


# ---- input functions ---------------------------------------------------------------------
# No input is marked ancient: a job whose ancient input's producer reruns is then not even checked
# for its own changes, in that run or any later one, so a changed corpus would never reach its
# encoders (https://github.com/snakemake/snakemake/issues/4166). The dataset check is an input of
# the default target only.
def dataset_inputs(wildcards):
    """The prepared dataset."""
    return {"dataset": DATASET}


def corpus_languages(wildcards):
    """A corpus's languages: its own, else the config's."""
    return config["corpora"][wildcards.corpus].get("languages") or config["languages"]


def embed_inputs(wildcards):
    """The dataset and the files the encoder reads besides it (a word-vector training corpus,
    precomputed matrices)."""
    return {**dataset_inputs(wildcards), "extra": plan.encoder_extra_inputs(wildcards)}


def case_embed_inputs(wildcards):
    """A case-study step's dataset (and training corpus), the encoder's files, and the
    same encoder's main embeddings (case_embed runs after them: it reads the cache they filled)."""
    extra = {"extra": plan.encoder_extra_inputs(wildcards), "after": plan.case_embed_after(wildcards)}
    return {**plan.case_inputs(wildcards), **extra}


def case_step_inputs(**more):
    """A case-study step's inputs: the prepared dataset and, when set, the training corpus
    (plan.case_inputs), then ``more``."""
    return {**plan.case_inputs(), **more}


def with_captions(files):
    """Outputs by name, those with a caption (steps.plan.CAPTIONS) shown in Snakemake's report."""
    return {
        n: report(p, category=CAPTIONS[n][0], caption=CAPTIONS[n][1]) if n in CAPTIONS else p for n, p in files.items()
    }


onstart:
    on_start(config, workflow.persistence)


wildcard_constraints:
    encoder="|".join(config["encoders"]),
    direction="|".join(config["directions"]),
    head="|".join(HEADS),
    tseed="|".join(map(str, plan.case_training_seeds)),
