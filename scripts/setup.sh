#!/usr/bin/env bash
# Installs the Debian packages tilejit builds with, configures and builds it (Ninja, ccache).
# Safe to run again: apt and the build are incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build ccache pkg-config python3
  llvm-22-dev libfmt-dev nlohmann-json3-dev libcli11-dev libxxhash-dev libsqlite3-dev
  libboost-context-dev libdlpack-dev googletest libgtest-dev libbenchmark-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "tilejit setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Warnings are errors in CI.
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
cmake --preset default -DTILEJIT_WERROR=$werror >/dev/null
cmake --build --preset default
