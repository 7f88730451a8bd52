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
# The environment lock (LOCK, default requirements.lock): the package, its extras and their
# dependencies are installed at the versions the lock pins (pip constraints, -c), so every
# machine set up from one commit has the same packages (the reports name the lock's hash).
#   LOCK=none bash scripts/setup.sh           no lock: the newest versions pyproject.toml allows
#   make lock  (bash scripts/setup.sh lock)   rewrite the lock from the current .venv: pip freeze,
#                                             the editable package left out, local version labels
#                                             (torch's +cpu) dropped so the CPU and CUDA indexes both match
# torch itself comes from its index as above (TORCH_VERSION; the lock pins the same version).
#
# Idempotent: a re-run with everything installed checks (pyproject.toml unchanged since the last
# install, every requirement present, every installed package at its locked version, the torch
# build) and installs nothing.
# Conda users: see environment.yml (and environment-dev.yml for the test and lint tools).
set -euo pipefail

TORCH_VERSION=2.13.0
TORCH_CPU_INDEX=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}
TORCH_PROBE_TIMEOUT=${TORCH_PROBE_TIMEOUT:-5}
EXTRAS="models,workflow,cluster,mteb,test,dev"
# LASER: laserembeddings pins torch<2; installed without its pins (its encoder code is tested
# on our torch in tests/test_encoders.py). --no-deps so nothing can replace the chosen torch.
NO_DEPS_PKGS="laserembeddings subword-nmt sacremoses transliterate"
LOCK=${LOCK:-requirements.lock}

# lock_args: the pip arguments (one a line) that install at the lock's versions; nothing for LOCK=none.
lock_args() {
  if [ "$LOCK" = none ]; then
    echo "setup: note: LOCK=none: installing without the environment lock" >&2
    return 0
  fi
  if [ ! -f "$LOCK" ]; then
    echo "setup: error: no environment lock $LOCK (LOCK=none installs without one; make lock writes it)" >&2
    return 2
  fi
  printf '%s\n' -c "$LOCK"
}

# write_lock FILE: the lock of the current .venv (make lock): pip freeze without the editable
# package, local version labels dropped; refused when a package is no release (a path or URL).
write_lock() {
  python - "$1" <<'PYEOF'
import os
import subprocess
import sys

out = sys.argv[1]
freeze = subprocess.run(
    [sys.executable, "-m", "pip", "freeze", "--exclude-editable"], capture_output=True, text=True, check=True
).stdout
pins = []
for line in freeze.splitlines():
    if not line.strip() or line.startswith("#"):
        continue
    if "==" not in line:
        sys.exit(f"setup: error: {line!r} is no release pin (installed from a path or URL?): not locked")
    name, version = line.split("==", 1)
    pins.append(f"{name}=={version.split('+', 1)[0]}")
pins.sort(key=str.lower)
header = [
    "# The environment lock: every package scripts/setup.sh installs into .venv, at the version it",
    "# installs (pip install -c). Written by `make lock` from the current .venv (pip freeze, the",
    "# editable backretrieval left out, local version labels such as torch's +cpu dropped); do not",
    "# edit by hand. Reports name its sha256 (metrics.json: environment/lock).",
]
tmp = out + ".tmp"
with open(tmp, "w", encoding="utf-8") as fh:
    fh.write("\n".join(header + pins) + "\n")
os.replace(tmp, out)
print(f"setup: wrote {out} ({len(pins)} packages)")
PYEOF
}

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
  python - "$EXTRAS" "$LOCK" $NO_DEPS_PKGS <<'PYEOF'
import importlib.metadata as md
import re
import sys

try:
    from packaging.requirements import Requirement
except ImportError:  # a venv with pip only
    from pip._vendor.packaging.requirements import Requirement

extras, lock = set(sys.argv[1].split(",")), sys.argv[2]
if lock != "none":  # every installed package that the lock pins at the pinned version
    with open(lock, encoding="utf-8") as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, _, pinned = line.partition("==")
            try:
                have = md.version(name)
            except md.PackageNotFoundError:
                continue  # installed when something requires it (checked below)
            if re.sub(r"\+.*", "", have) != pinned:
                sys.exit(1)
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
for name in sys.argv[3:]:
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
  case "${1:-}" in
    "") ;;
    lock)
      if [ ! -x .venv/bin/python ]; then
        echo "setup: error: no .venv to lock (run bash scripts/setup.sh first)" >&2
        exit 2
      fi
      . .venv/bin/activate
      write_lock "${LOCK/#none/requirements.lock}"
      return
      ;;
    *)
      echo "setup: error: unknown argument '$1' (none installs; 'lock' writes the environment lock)" >&2
      exit 2
      ;;
  esac
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
    local lock
    lock=$(lock_args)
    # shellcheck disable=SC2086  # one pip argument a line
    python -m pip install -q -e ".[$EXTRAS]" "torch==$TORCH_VERSION" $lock
    # shellcheck disable=SC2086
    python -m pip install -q --no-deps $lock $NO_DEPS_PKGS
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
