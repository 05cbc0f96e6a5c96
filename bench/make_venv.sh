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
#   bench/make_venv.sh        # then: bench/.venv/bin/python bench/peers/w3_torch.py ...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv="$here/.venv"
python3 -m venv "$venv"
pip="$venv/bin/pip"
python="$venv/bin/python"
"$pip" install --quiet --upgrade pip
if "$pip" install --quiet torch numpy --index-url https://download.pytorch.org/whl/cpu; then
  source="download.pytorch.org/whl/cpu"
else
  "$pip" install --quiet --no-deps torch
  "$pip" install --quiet filelock typing-extensions sympy networkx jinja2 fsspec numpy setuptools
  if ! "$python" -c "import torch" 2>/dev/null; then
    "$pip" install --quiet --no-deps nvidia-cufile==1.17.1.22 nvidia-cusparselt-cu13==0.8.1 \
      nvidia-nvshmem-cu13==3.7.2 nvidia-nccl-cu13==2.30.7
  fi
  source="PyPI, --no-deps (CUDA toolkit libraries from the system)"
fi
if ! "$python" -c "import torch" ; then
  echo "make_venv: this PyTorch does not import here (above); the peers fall back to" \
       "Debian's python3-torch (run them with python3)" >&2
  exit 3
fi
"$python" - "$source" <<'PY'
import sys, torch
print(f"bench venv: torch {torch.__version__} from {sys.argv[1]}; "
      f"CPU capability {torch.backends.cpu.get_cpu_capability()}; "
      f"oneDNN {'on' if torch.backends.mkldnn.is_available() else 'off'}")
PY
