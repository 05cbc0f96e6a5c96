"""The CUDA plugin on a machine with a device (the `gpu` suite; exits 77 where no CUDA
device is visible). What it checks is what the plugin does today: it loads, lists every
device nvidia-smi lists, and `--device cuda` is refused (exit 3) because the CUDA backend
implements no ops yet; when ops land, this test grows the op-by-op comparison."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from harness import SCION, check, copy_example, run, run_json, temp_dir  # noqa: E402

version = run_json("--version")
backend = version["cuda_backend"]
if not backend["built"]:
    print("skip: scion was built without the CUDA plugin")
    raise SystemExit(77)
if not backend["devices"]:
    print(f"skip: no CUDA device: {backend.get('why_no_device')}")
    raise SystemExit(77)

check(backend["loaded"], f"a device is listed only by a loaded plugin: {backend}")
smi = shutil.which("nvidia-smi")
if smi:
    listed = subprocess.run([smi, "-L"], capture_output=True, text=True).stdout.strip().splitlines()
    check(len(listed) == len(backend["devices"]), f"the plugin sees nvidia-smi's devices: {listed} vs {backend}")
work = copy_example("sentiment", temp_dir())
rc, _, err = run("--device", "cuda", "validate", cwd=work)
check(rc == 3 and "implements no training or evaluation ops" in err, f"--device cuda is refused honestly: {err}")
print("ok")
