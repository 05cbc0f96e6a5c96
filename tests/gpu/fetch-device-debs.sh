#!/usr/bin/env bash
# fetch-device-debs.sh: downloads, on a Debian 12 machine with network, the Debian packages
# scion needs to build and run, into .device-debs/ (git-ignored), so that
# tests/gpu/run-on-device.sh can build on a GPU machine that has the CUDA toolkit, a C++
# compiler, meson and ninja but neither these packages nor a network: carry .device-debs/
# there with the working tree, and run-on-device.sh unpacks them into a prefix of their own
# (/opt/scion-deps) when meson cannot find them. Nothing is installed here.
#
# The list is the build dependencies of bootstrap.sh (less MPI, which the one-GPU checks do
# not need) with the run-time libraries they bring; a GPU machine of another distribution
# must be at least as new (glibc 2.36, Debian 12's).
set -euo pipefail
cd "$(dirname "$0")/../.."
packages=(
  libyaml-cpp-dev libyaml-cpp0.7 libsqlite3-dev libsqlite3-0 libcli11-dev libfmt-dev libfmt9
  nlohmann-json3-dev libssl-dev libssl3 libopenblas-dev libopenblas-pthread-dev
  libopenblas0-pthread libopenblas0 libgfortran5 libdnnl-dev libdnnl2 catch2
  libmuparser-dev libmuparser2v5 libutf8proc-dev libutf8proc2 pkgconf pkgconf-bin libpkgconf3
)
mkdir -p .device-debs
cd .device-debs
apt-get download "${packages[@]}"
du -sh . | sed 's/^/.device-debs: /'
