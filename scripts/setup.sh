#!/usr/bin/env bash
# Set up the project environment: a local virtualenv (.venv) with CPU torch, the package and
# its model/workflow/test extras, and the Debian packages some features use (bilingual
# dictionaries for the word-level models, Chromium for the rating-page browser test).
# Idempotent: re-running only installs what is missing. Conda users: see environment.yml.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip
# CPU torch first and pinned: otherwise a dependency could pull a multi-GB CUDA build.
python - 2>/dev/null <<'PYEOF' || python -m pip install -q "torch==2.13.0"
import importlib.metadata as m, sys
v = m.version("torch")
sys.exit(0 if v.startswith("2.13.0") else 1)
PYEOF
python -m pip install -q -e ".[models,workflow,cluster,test,dev]" "torch==2.13.0"
# LASER: laserembeddings pins torch<2; installed without its pins (its encoder code is tested
# on our torch in tests/test_encoders.py). --no-deps so nothing can replace the CPU torch.
python -m pip install -q --no-deps laserembeddings subword-nmt sacremoses transliterate

# Debian packages (optional features; tests skip with a reason where they are missing)
APT_PKGS="dict-freedict-eng-deu dict-freedict-deu-eng dict-freedict-eng-fra dict-freedict-fra-eng dict-freedict-eng-spa dict-freedict-spa-eng dict-freedict-eng-rus dict-freedict-eng-ces dict-freedict-ces-eng dict-freedict-eng-ara dict-freedict-ara-eng chromium chromium-driver"
if command -v apt-get >/dev/null 2>&1; then
  missing=""
  for p in $APT_PKGS; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    if [ "$(id -u)" = "0" ]; then
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing) >/dev/null \
        || echo "setup: warning: could not install Debian packages:$missing (related tests will skip)" >&2
    else
      echo "setup: note: Debian packages missing:$missing (install them as root; related tests skip)" >&2
    fi
  fi
fi
echo "setup: OK ($(python --version), torch $(python -c 'import torch; print(torch.__version__)'))"
