#!/usr/bin/env bash
# The main job on the bundled example family (what `./bootstrap.sh run` does): check the
# spec, train the base and adapt its descendants (co-batched), test the family, and
# show its tree.
#
#   examples/run-main-job.sh SCION [WORK_DIR]
#
# It works in WORK_DIR/sentiment (default build/main-job/sentiment), a copy of
# examples/sentiment refreshed from the repository on every run, so the example itself
# stays as the repository has it (the tests copy it too) while the store in the copy
# keeps what earlier runs trained: a second run trains nothing.
set -euo pipefail
scion=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(realpath -m "${2:-$here/../build/main-job}")/sentiment
mkdir -p "$work"
tar -C "$here/sentiment" --exclude=.scion -cf - . | tar -C "$work" -xf -
cd "$work"
"$scion" validate
# Trains what is out of date, then tests the family and prints its matrix. Exit status 1
# means a behavioural test exceeded its max_failure_rate: a finding, reported above.
"$scion" run || [ $? -eq 1 ]
"$scion" lineage tree
echo
echo "The family's store is $work/.scion; explore it with, for example:"
echo "  cd $work && $scion lineage blame product-lora"
