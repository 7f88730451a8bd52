#!/usr/bin/env bash
# Set up the project environment: a local virtualenv (.venv) with torch, the package and its
# model/workflow/test extras, and the Debian packages some features use (bilingual
# dictionaries for the word-level models, Chromium for the rating-page browser test).
#
# torch build (TORCH_BUILD, default cpu):
#   bash scripts/setup.sh                      CPU torch: from the PyTorch CPU wheel index
#                                              (https://download.pytorch.org/whl/cpu) when it
#                                              answers, else from the configured pip index
#   TORCH_BUILD=cuda bash scripts/setup.sh     a CUDA build (PyPI's Linux wheels are CUDA
#   TORCH_BUILD=cuda make setup                builds; TORCH_CUDA_INDEX=https://download.pytorch.org/whl/cu126
#                                              picks a CUDA version); replaces an installed CPU build
# The last line names the build installed (torch.version.cuda, the available backends).
# Other settings: TORCH_CPU_INDEX (the CPU index URL), TORCH_PROBE_TIMEOUT (seconds, default 5),
# SETUP_FORCE=1 (reinstall the package and extras even when nothing changed), PYTHON.
#
# Idempotent: a re-run with everything installed checks (pyproject.toml unchanged since the last
# install, every requirement present, the torch build) and installs nothing.
# Conda users: see environment.yml (and environment-dev.yml for the test and lint tools).
set -euo pipefail

TORCH_VERSION=2.13.0
TORCH_CPU_INDEX=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}
TORCH_PROBE_TIMEOUT=${TORCH_PROBE_TIMEOUT:-5}
EXTRAS="models,workflow,cluster,mteb,test,dev"
# LASER: laserembeddings pins torch<2; installed without its pins (its encoder code is tested
# on our torch in tests/test_encoders.py). --no-deps so nothing can replace the chosen torch.
NO_DEPS_PKGS="laserembeddings subword-nmt sacremoses transliterate"

# index_reachable URL: exit 0 when URL/torch/ answers within TORCH_PROBE_TIMEOUT seconds.
index_reachable() {
  "${PROBE_PYTHON:-python3}" - "$1" "$TORCH_PROBE_TIMEOUT" <<'PYEOF'
import sys
import urllib.request

url, timeout = sys.argv[1].rstrip("/") + "/torch/", float(sys.argv[2])
try:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        sys.exit(0 if resp.status == 200 else 1)
except Exception:
    sys.exit(1)
PYEOF
}

# torch_pip_args BUILD: the pip arguments (one a line) that choose where torch comes from;
# nothing = the configured index. A note on stderr says which. BUILD: cpu | cuda.
torch_pip_args() {
  case "$1" in
    cpu)
      if index_reachable "$TORCH_CPU_INDEX"; then
        echo "setup: torch: CPU wheel index $TORCH_CPU_INDEX" >&2
        printf '%s\n' --index-url "$TORCH_CPU_INDEX"
      else
        echo "setup: torch: $TORCH_CPU_INDEX unreachable (${TORCH_PROBE_TIMEOUT}s); using the configured pip index" \
          "(on Linux, PyPI's torch is a CUDA build: check the build named below)" >&2
      fi
      ;;
    cuda)
      if [ -n "${TORCH_CUDA_INDEX:-}" ]; then
        echo "setup: torch: CUDA wheel index $TORCH_CUDA_INDEX" >&2
        printf '%s\n' --index-url "$TORCH_CUDA_INDEX"
      else
        echo "setup: torch: CUDA build from the configured pip index" >&2
      fi
      ;;
    *)
      echo "setup: error: TORCH_BUILD must be cpu or cuda; got '$1'" >&2
      return 2
      ;;
  esac
}

# installed_torch_build: cpu | cuda | none (from the installed metadata; no torch import).
installed_torch_build() {
  python - <<'PYEOF'
import importlib.metadata as md

try:
    dist = md.distribution("torch")
except md.PackageNotFoundError:
    print("none")
    raise SystemExit
version = dist.version
if "+cpu" in version:
    print("cpu")
elif "+cu" in version or "+rocm" in version:
    print("cuda")
else:  # PyPI wheels carry no label: a Linux CUDA build requires the nvidia-* runtime wheels
    try:
        from packaging.requirements import Requirement
    except ImportError:  # a venv with pip only
        from pip._vendor.packaging.requirements import Requirement

    reqs = [Requirement(r) for r in dist.requires or []]
    nvidia = [r for r in reqs if r.name.startswith("nvidia-") and (r.marker is None or r.marker.evaluate({"extra": ""}))]
    print("cuda" if nvidia else "cpu")
print(version.split("+")[0], end="")
PYEOF
}

# requirements_met: exit 0 when the package's installed metadata matches pyproject.toml (the
# stamp of the last install) and every requirement of its extras is installed.
requirements_met() {
  [ "${SETUP_FORCE:-0}" != "1" ] || return 1
  [ -f .venv/.setup-stamp ] || return 1
  [ "$(cat .venv/.setup-stamp)" = "$(setup_stamp)" ] || return 1
  python - "$EXTRAS" $NO_DEPS_PKGS <<'PYEOF'
import importlib.metadata as md
import sys

try:
    from packaging.requirements import Requirement
except ImportError:  # a venv with pip only
    from pip._vendor.packaging.requirements import Requirement

extras = set(sys.argv[1].split(","))
try:
    reqs = [Requirement(r) for r in md.requires("backretrieval") or []]
except md.PackageNotFoundError:
    sys.exit(1)
for r in reqs:
    if r.marker is not None and not any(r.marker.evaluate({"extra": e}) for e in extras | {""}):
        continue
    try:
        if not r.specifier.contains(md.version(r.name), prereleases=True):
            sys.exit(1)
    except md.PackageNotFoundError:
        sys.exit(1)
for name in sys.argv[2:]:
    try:
        md.version(name)
    except md.PackageNotFoundError:
        sys.exit(1)
PYEOF
}

setup_stamp() {
  echo "$(sha256sum pyproject.toml | cut -d' ' -f1) extras=$EXTRAS no-deps=$NO_DEPS_PKGS"
}

main() {
  cd "$(dirname "$0")/.."
  local build=${TORCH_BUILD:-cpu}
  case "$build" in cpu | cuda) ;; *)
    echo "setup: error: TORCH_BUILD must be cpu or cuda; got '$build'" >&2
    exit 2
    ;;
  esac
  local py=${PYTHON:-python3}
  if [ ! -x .venv/bin/python ]; then
    "$py" -m venv .venv
  fi
  . .venv/bin/activate
  PROBE_PYTHON=python

  # torch first, from the index of the chosen build: otherwise a dependency could pull the
  # configured index's default build (a multi-GB CUDA build on Linux).
  local have have_build have_version
  have=$(installed_torch_build)
  have_build=${have%%$'\n'*}
  have_version=${have#*$'\n'}
  if [ "$have_build" != "$build" ] || [ "$have_version" != "$TORCH_VERSION" ]; then
    local args
    args=$(torch_pip_args "$build")
    if [ "$build" = cpu ] && [ -z "$args" ] && [ "$have_version" = "$TORCH_VERSION" ]; then
      # no CPU index reachable: the configured index would only give this build again
      echo "setup: note: keeping the installed torch $have_version ($have_build build)" >&2
    else
      python -m pip install -q --upgrade pip
      if [ "$have_build" != "none" ]; then
        python -m pip uninstall -q -y torch
      fi
      # shellcheck disable=SC2086  # one pip argument a line
      python -m pip install -q "torch==$TORCH_VERSION" $args
    fi
  fi

  if ! requirements_met; then
    python -m pip install -q -e ".[$EXTRAS]" "torch==$TORCH_VERSION"
    # shellcheck disable=SC2086
    python -m pip install -q --no-deps $NO_DEPS_PKGS
    setup_stamp >.venv/.setup-stamp
  fi

  # Debian packages (optional features; tests skip with a reason where they are missing)
  local apt_pkgs="dict-freedict-eng-deu dict-freedict-deu-eng dict-freedict-eng-fra dict-freedict-fra-eng dict-freedict-eng-spa dict-freedict-spa-eng dict-freedict-eng-rus dict-freedict-eng-ces dict-freedict-ces-eng dict-freedict-eng-ara dict-freedict-ara-eng chromium chromium-driver"
  if command -v apt-get >/dev/null 2>&1; then
    local missing="" p
    for p in $apt_pkgs; do
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
  local summary
  summary=$(python - "$build" <<'PYEOF'
import sys

import torch

cuda = torch.version.cuda
backends = ["cpu"] + (["cuda"] if torch.cuda.is_available() else []) + (["mps"] if torch.backends.mps.is_available() else [])
build = f"CUDA {cuda} build" if cuda else "CPU build"
print(f"torch {torch.__version__}, {build}, available backends: {'+'.join(backends)}")
if (sys.argv[1] == "cuda") != bool(cuda):
    print(f"setup: warning: TORCH_BUILD={sys.argv[1]} but the installed torch is a {build}", file=sys.stderr)
PYEOF
)
  echo "setup: OK ($(python --version), $summary)"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  main "$@"
fi
