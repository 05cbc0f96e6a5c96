#!/usr/bin/env bash
# The main job on the bundled example family (what `./bootstrap.sh run` does): check the
# spec, train the base and adapt its descendants (co-batched), then show the family.
set -euo pipefail
scion=$(realpath "$1")
cd "$(dirname "$0")/sentiment"
"$scion" validate
"$scion" run
"$scion" lineage tree
