"""The Python with transformers and peft that interop tests compare against:
$SCION_INTEROP_PYTHON, else the venv tests/python/make-interop-venv.sh makes in the
source tree (.interop-venv). Tests skip (77) without one."""
import os
import subprocess
import sys


def interop_python(source_root):
    candidates = [os.environ.get("SCION_INTEROP_PYTHON"),
                  os.path.join(source_root, ".interop-venv", "bin", "python")]
    for python in candidates:
        if python and os.path.exists(python):
            probe = subprocess.run([python, "-c", "import transformers, peft, torch"],
                                   capture_output=True, text=True)
            if probe.returncode == 0:
                return python
    print("SKIP: no Python with transformers and peft; run tests/python/make-interop-venv.sh "
          "(or set SCION_INTEROP_PYTHON)")
    sys.exit(77)


def run_python(python, code, *args):
    proc = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        print(f"FAIL: the interop Python failed:\n{proc.stderr}", file=sys.stderr)
        sys.exit(1)
    return proc.stdout
