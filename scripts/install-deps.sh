#!/usr/bin/env bash
# Install every Debian package pdcbb needs to build, test and run its demo.
# Idempotent: re-running installs nothing new and skips `apt-get update` when all is present.
set -euo pipefail

PKGS=(
    build-essential cmake pkg-config
    libucx-dev ucx-utils liblmdb-dev lmdb-utils libyaml-dev libpmix-dev
    libopenmpi-dev openmpi-bin
    libslurm-dev slurmctld slurmd slurm-client munge slurmdbd mariadb-server
    bats bats-support bats-assert
    iproute2 procps util-linux python3 man-db groff-base
    python3-numpy python3-yaml
    libhdf5-dev python3-h5py
    clang libclang-rt-14-dev
    libfuse3-dev fuse3 fio
)

missing=()
for p in "${PKGS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#PKGS[@]} packages already installed"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: run this script as root (or with sudo) to install them" >&2
    exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
