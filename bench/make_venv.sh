#!/usr/bin/env bash
# Makes bench/.venv: a current PyTorch for the benchmark peers, beside Debian's
# python3-torch 1.13 (the fallback: run the peers with python3 when this venv is absent).
#
# PyTorch's own CPU index is tried first: its wheels carry no CUDA dependencies. Where
# that host cannot be reached (as on the development machine, 2026-11-24: its name does
# not resolve for pip), PyPI's Linux wheel is installed with --no-deps, which leaves out
# its ~3 GB of CUDA packages. libtorch still links CUDA libraries at load time: the
# ones a CUDA 13 toolkit in the loader's path provides (cudart, cuBLAS, cuDNN, ...) and
# four it does not, installed here from PyPI at the versions torch 2.15.0 pins (about
# 660 MB). On a machine without a CUDA toolkit, the import fails and says which library
# is missing: install torch with its dependencies instead, or use Debian's.
#
# Then the W5 peer's Hugging Face stack (bench/peers/w5_peft.py), pinned and installed one
# by one with --no-deps so that pip never replaces this torch: transformers 4.40.2, peft
# 0.10.0, accelerate 0.30.1, tokenizers 0.19.1, huggingface_hub 0.23.4, safetensors 0.4.3
# (the interop venv's pins, tests/python/make-interop-venv.sh: they import and train on
# torch 2.15.0), and the pure-Python (and psutil, regex, PyYAML binary) packages they
# import, which this venv, unlike the interop one, does not take from Debian.
# Run again on an existing venv whose torch imports, it only adds what is missing there.
#   bench/make_venv.sh        # then: bench/.venv/bin/python bench/peers/w3_torch.py ...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${BENCH_VENV:-$here/.venv}
python="$venv/bin/python"
[ -x "$python" ] || python3 -m venv "$venv"
pip=("$python" -m pip --disable-pip-version-check)
if "$python" -c "import torch" 2>/dev/null; then
  source="an earlier run (already in $venv)"
elif "${pip[@]}" install --quiet --upgrade pip &&
     "${pip[@]}" install --quiet torch numpy --index-url https://download.pytorch.org/whl/cpu; then
  source="download.pytorch.org/whl/cpu"
else
  "${pip[@]}" install --quiet --no-deps torch
  "${pip[@]}" install --quiet filelock typing-extensions sympy networkx jinja2 fsspec numpy setuptools
  if ! "$python" -c "import torch" 2>/dev/null; then
    "${pip[@]}" install --quiet --no-deps nvidia-cufile==1.17.1.22 nvidia-cusparselt-cu13==0.8.1 \
      nvidia-nvshmem-cu13==3.7.2 nvidia-nccl-cu13==2.30.7
  fi
  source="PyPI, --no-deps (CUDA toolkit libraries from the system)"
fi
if ! "$python" -c "import torch" ; then
  echo "make_venv: this PyTorch does not import here (above); the peers fall back to" \
       "Debian's python3-torch (run them with python3)" >&2
  exit 3
fi
peer_pins=(
  transformers==4.40.2 peft==0.10.0 accelerate==0.30.1 tokenizers==0.19.1
  huggingface_hub==0.23.4 safetensors==0.4.3
  regex==2024.5.15 tqdm==4.66.4 packaging==24.0 psutil==5.9.8 pyyaml==6.0.1
  requests==2.32.3 urllib3==2.2.1 idna==3.7 certifi==2024.2.2 charset-normalizer==3.3.2
)
for pin in "${peer_pins[@]}"; do
  "${pip[@]}" install --quiet --no-deps "$pin"
done
"$python" - "$source" <<'PY'
import sys, torch
import peft, tokenizers, transformers
from peft import LoraConfig, get_peft_model  # noqa: F401 (what the W5 peer imports)
print(f"bench venv: torch {torch.__version__} from {sys.argv[1]}; "
      f"CPU capability {torch.backends.cpu.get_cpu_capability()}; "
      f"oneDNN {'on' if torch.backends.mkldnn.is_available() else 'off'}; "
      f"transformers {transformers.__version__}, peft {peft.__version__}, "
      f"tokenizers {tokenizers.__version__}")
PY
