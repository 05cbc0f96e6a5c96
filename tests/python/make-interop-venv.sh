#!/usr/bin/env bash
# Makes the Python that scion's interop tests use (tests/python/README.md): a venv with
# Debian's python3-torch from the system site packages, plus pinned pure-Python (and a few
# binary) wheels installed one by one with --no-deps, so pip never replaces the system
# torch or numpy. About 150 MB.
#
# Usage: tests/python/make-interop-venv.sh [DIR]   (default: .interop-venv in the repo)
# The tests find it at $SCION_INTEROP_PYTHON, else DIR/bin/python; without it they skip (77).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$repo/.interop-venv}

if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "make-interop-venv: Debian's python3-torch is missing; install it (bootstrap.sh does)" >&2
  exit 3
fi

/usr/bin/python3 -m venv --system-site-packages "$dir"
pins=(
  transformers==4.40.2
  peft==0.10.0
  accelerate==0.30.1
  tokenizers==0.19.1
  huggingface_hub==0.23.4
  safetensors==0.4.3
  regex==2024.5.15
  tqdm==4.66.4
  packaging==24.0
  filelock==3.14.0
  fsspec==2024.5.0
  psutil==5.9.8
  typing_extensions==4.12.2
)
for pin in "${pins[@]}"; do
  "$dir/bin/pip" install --quiet --disable-pip-version-check --no-deps "$pin"
done
"$dir/bin/python" -c 'import transformers, peft, tokenizers; print("interop venv ready:", transformers.__version__, peft.__version__, tokenizers.__version__)'
