#!/usr/bin/env bash
# Installs the Debian packages Caravan builds and tests with; skips the
# ones already present so repeated runs are quick.
set -euo pipefail
packages=(cmake ninja-build g++ gcc ccache clang-format pkg-config gnuplot-nox libzmq3-dev libfabric-dev libucx-dev libibverbs-dev librdmacm-dev libgtest-dev libbenchmark-dev libhwloc-dev libssl-dev libgloo-dev libmicrohttpd-dev curl dpkg-dev openmpi-bin munge slurmctld slurmd slurm-client openssh-client openssh-server iproute2 clang libclang-rt-14-dev
          python3-torch python3-torchvision python3-pytest)  # python/: its tests, with /usr/bin/python3
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
