#!/usr/bin/env bash
# The main job on the bundled example family (what `./bootstrap.sh run` does): check the
# spec, train the base and adapt its descendants (co-batched), test the family, and
# show its tree.
set -euo pipefail
scion=$(realpath "$1")
cd "$(dirname "$0")/sentiment"
"$scion" validate
# Trains what is out of date, then tests the family and prints its matrix. Exit status 1
# means a behavioural test exceeded its max_failure_rate: a finding, reported above.
"$scion" run || [ $? -eq 1 ]
"$scion" lineage tree
