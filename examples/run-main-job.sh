#!/usr/bin/env bash
# The main job on the bundled example family (what `./bootstrap.sh run` does).
set -euo pipefail
scion=$(realpath "$1")
cd "$(dirname "$0")/sentiment"
"$scion" validate
"$scion" plan
