#!/usr/bin/env bash
# The main job on the bundled example family (what `./bootstrap.sh run` does).
set -euo pipefail
scion=$(realpath "$1")
cd "$(dirname "$0")/sentiment"
"$scion" validate
"$scion" plan
# Trains what is out of date, then tests the family and prints its matrix. Exit status 1
# means a behavioural test exceeded its max_failure_rate: a finding, reported above.
"$scion" run || [ $? -eq 1 ]
"$scion" lineage tree
