#!/usr/bin/env bash
# Installs the Debian packages tuner builds against. Idempotent: when every
# package is already present it only checks and returns; otherwise it runs
# apt-get update once and installs what is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libsqlite3-dev
  libssl-dev
  libboost-program-options-dev
  googletest libgtest-dev
  nlohmann-json3-dev
  libxgboost-dev
  coinor-libcbc-dev
  libopenmpi-dev openmpi-bin
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -f /usr/local/cuda/include/nvrtc.h ]; then
  echo "setup: the CUDA toolkit (NVRTC) is expected at /usr/local/cuda (set CUDA_HOME otherwise)" >&2
fi
