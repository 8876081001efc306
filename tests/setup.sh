#!/usr/bin/env bash
# Installs what quantbridge needs to build and test, from Debian's packages,
# only when something is missing (run as root on a fresh Debian machine).
# Optional extras (clang's fuzzer runtime, chromium for report screenshots)
# are installed too; tests that need them skip when they are absent.
set -euo pipefail
# python3-venv: tests/interop/run.sh builds its pinned virtual environment with it.
need=(build-essential cmake pkg-config libglib2.0-dev libcjson-dev check git python3 python3-venv)
extra=(clang libclang-rt-14-dev chromium zsh)
missing=()
for p in "${need[@]}" "${extra[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "quantbridge setup: missing packages: ${missing[*]} (run as root to install them)" >&2
    exit 1
  fi
  echo "quantbridge setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # Required packages must install; extras are best effort.
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  for p in "${extra[@]}"; do
    apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 || \
      echo "quantbridge setup: optional package $p not installed; dependent tests will skip"
  done
fi
