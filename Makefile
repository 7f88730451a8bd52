# The two commands of the README:
#   make run    set up, run the default pipeline (offline, embedded synthetic dataset), and
#               store its outputs in DVC's cache (dvc commit: dvc.lock is unchanged when the
#               results are byte-identical to the committed ones; `git diff dvc.lock` shows it),
#               push them to the default DVC remote, and verify the reports (`make verify`)
#   make test   set up, then run the test suite (CI runs `make lint` first: .ci/run)
# Another versioned configuration (scripts/dvc_runs.yaml) the same way:
#   make raw-data && make run CONFIG=config/multi30k.yaml
.PHONY: setup lock run raw-data pull status verify test lint report bench figures dvc-yaml results-doc evaluate-example exp-show
SHELL := /bin/bash
VENV := .venv/bin
# The environment of the targets that do not set one up (figures, report, verify, ...): the active
# interpreter when it imports backretrieval (a conda env of environment.yml, another venv), else
# .venv's, else one line saying to run `make setup`; VENV=<bin folder> on the command line: that one
ifeq ($(origin VENV),command line)
ACTIVATE = source $(VENV)/activate
else
ACTIVATE = if python -c 'import backretrieval' >/dev/null 2>&1; then :; \
  elif [ -f $(VENV)/activate ]; then source $(VENV)/activate; \
  else echo "make $@: no environment with backretrieval (none active, no .venv): run \`make setup\` (conda: activate the environment of environment.yml)" >&2; exit 1; fi
endif
SNAKEMAKE ?= snakemake
CONFIG ?= params.yaml
# the DVC stages of $(CONFIG) (<run_name>-<stage>: data, embeddings, metrics, report, case_study)
# as dvc commit and push take them: dvc.yaml for the default run (the file holds only its
# stages), else their names, prefixed runs/dvc.yaml:
STAGES = $$(python scripts/dvc_stages.py --targets $(CONFIG))
# $(CONFIG) read safely and refused in one line, before Snakemake reads it, when it is not a plain
# YAML mapping: Snakemake runs a YTE template's Python (`__use_yte__: true`) while it loads the
# file, before the workflow's checks (scripts/plain_config.py; params.yaml is the checkout's own)
PLAIN = $(if $(filter params.yaml,$(CONFIG)),:,python scripts/plain_config.py $(CONFIG))
# its reports folder (reports_dir), which `make verify` compares with the committed one
REPORTS ?= $$(python -c 'from backretrieval.config import load_config; print(load_config("$(CONFIG)")["reports_dir"])')

setup:
	bash scripts/setup.sh

# the environment lock (requirements.lock, which setup installs with: pip -c) rewritten from the
# current .venv, not from a fresh resolve: pip freeze, the editable package left out, torch's
# +cpu label dropped. Upgrading a package: pip install -U it in .venv, make test, make lock.
# Everything at the newest versions pyproject.toml allows (a fresh resolve): rm -rf .venv &&
# LOCK=none make setup && make lock. Commit the lock; the next reports name its new hash.
lock:
	bash scripts/setup.sh lock

# dvc commit --no-relink stores the outputs in DVC's cache and leaves the files as Snakemake wrote
# them (their modification times in the DAG's order), so the next `snakemake -n` has nothing to do
# in this configuration or any other that shares a prepared corpus with it
run: setup
	source $(VENV)/activate && $(PLAIN) && time snakemake --cores all $(if $(filter params.yaml,$(CONFIG)),,--configfile $(CONFIG)) \
	  && stages=$(STAGES) && dvc commit --force --no-relink --quiet $$stages \
	  && if [ -n "$$(dvc remote default 2>/dev/null)" ]; then dvc push $$stages; fi \
	  && reports=$(REPORTS) && if git cat-file -e "HEAD:$$reports" 2>/dev/null; then backretrieval verify "$$reports"; \
	  else echo "verify: $$reports has no committed reports yet (a new run): nothing to compare; commit them to make them the reference"; fi

# data/raw/, the real-data configurations' raw inputs (data.dvc): copied from the local mirror
# ../shared/datasets where it is here (`dvc update`; data.dvc then shows any change in
# `git diff`), else restored from the DVC remote (`dvc pull`), never from upstream. Both replace
# data/raw/ whole (`dvc update` silently): first refused, naming them, while data/raw/ holds
# files DVC does not track (a user's own data belongs in data/own/)
raw-data: setup
	source $(VENV)/activate && python scripts/dvc_pull.py --check-untracked data.dvc \
	  && if [ -d ../shared/datasets ]; then dvc update --quiet data.dvc \
	  && git diff --exit-code --stat data.dvc; else dvc pull data.dvc; fi

# every output the lock files record, from the DVC remote (REMOTE=<name> for another), each
# object re-hashed after the download: a corrupted one is named by its workspace path, kept out
# of the cache and the workspace, and the target fails (scripts/dvc_pull.py); refused before any
# download, naming them, while an output's folder holds files DVC does not track. Then every
# output is touched in the DAG's order (a fresh clone has no Snakemake records to compare
# checksums with; a plain --touch touches only the jobs it would run, which can leave a folder
# DVC wrote last newer than what it feeds)
pull:
	$(ACTIVATE) && python scripts/dvc_pull.py $(if $(REMOTE),-r $(REMOTE)) \
	  && if [ -f Snakefile ]; then $(SNAKEMAKE) --touch --forceall --cores 1 --quiet $(if $(filter params.yaml,$(CONFIG)),,--configfile $(CONFIG)); fi

# what is out of date for CONFIG, a line per tool and stage: the jobs Snakemake would run (by rule,
# with its reasons) and each DVC stage whose deps, params or outs changed, with what to run
# (a fresh clone: the outputs it lacks -> make pull or make run)
status:
	$(ACTIVATE) && $(PLAIN) && python scripts/status.py $(CONFIG)

# The run's reports vs the committed ones (git HEAD), field by field within the tolerances of
# `backretrieval verify --tolerances`: byte-identical on the machine that made them, within
# tolerance elsewhere; names every field outside it and exits 1. CONFIG=config/multi30k.yaml
# (or REPORTS=reports/multi30k) for another run.
verify:
	$(ACTIVATE) && $(PLAIN) && backretrieval verify $(REPORTS)

# `dvc exp show` with the columns a person compares: the default run's main parameters and
# summary metrics (23 columns; plain `dvc exp show` lists every key of every run's params file,
# every metric and every dep: 969 columns), selected by file in scripts/exp_show.py.
# EXP_ARGS passes more options, e.g. `make exp-show EXP_ARGS=--csv` or `EXP_ARGS='-A --md'`.
exp-show:
	$(ACTIVATE) && python scripts/exp_show.py $(EXP_ARGS)

test: setup
	source $(VENV)/activate && python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=20

# Static checks, configured in pyproject.toml: ruff lint, ruff and snakefmt format checks (they
# change nothing), Snakemake's own lint, mypy on the typed core (metrics/, stats/, steps/).
# Apply the formatters: ruff format src tests scripts benchmarks && snakefmt Snakefile workflow
lint: setup
	source $(VENV)/activate && ruff check src tests scripts benchmarks \
	  && ruff format --check src tests scripts benchmarks \
	  && snakefmt --check Snakefile workflow \
	  && snakemake --lint \
	  && mypy

# dvc.yaml and runs/dvc.yaml from the Snakemake DAG (a few stages per run config of scripts/dvc_runs.yaml)
dvc-yaml:
	$(ACTIVATE) && python scripts/dvc_stages.py

report:
	$(ACTIVATE) && $(PLAIN) && python scripts/snakemake_hint.py report -- $(SNAKEMAKE) --cores 2 \
	  $(if $(filter params.yaml,$(CONFIG)),,--configfile $(CONFIG)) --report "$(REPORTS)/report.html"

bench:
	$(ACTIVATE) && python benchmarks/run_all.py

# Rebuild every table and figure from the run's artifacts: the report rules (report,
# case_report, human_tally) rerun, and only they (nothing upstream is computed; a missing
# artifact fails the target, with one line saying what to run: scripts/snakemake_hint.py;
# --forcerun, not --forceall, under which Snakemake keeps an existing output whose job cannot
# run and so passes silently). CONFIG=config/multi30k.yaml make figures   for a named configuration.
CONFIG ?= params.yaml
SNAKEMAKE_ARGS ?=
# A configuration without a case study has no case_report/human_tally rule: the rules are those
# of `snakemake --list-rules` among the three (Snakemake refuses to force an undefined rule).
FIGURE_RULES = report case_report human_tally
figures:
	$(ACTIVATE) && $(PLAIN) && rules=$$($(SNAKEMAKE) --configfile $(CONFIG) --list-rules 2>/dev/null | grep -xE '$(subst $() ,|,$(FIGURE_RULES))' | tr '\n' ' ') \
	  && python scripts/snakemake_hint.py figures -- $(SNAKEMAKE) --cores 2 --configfile $(CONFIG) $(SNAKEMAKE_ARGS) --forcerun $$rules \
	  --allowed-rules $$rules all

# docs/RESULTS.md from the reports of every run configuration in scripts/dvc_runs.yaml, as they
# are (only the results_doc rule runs, one job, so in Snakemake's own process: --force-use-threads;
# tests/test_results_doc.py checks the committed file)
results-doc:
	$(ACTIVATE) && snakemake --cores 1 --force-use-threads --allowed-rules results_doc --forcerun results_doc -- results_doc

# The README's `backretrieval evaluate` example run from scratch; its output is written into
# docs/EVALUATE.md (tests/test_evaluate_example.py checks that it is current)
evaluate-example:
	$(ACTIVATE) && python scripts/evaluate_example.py
