"""The CUDA backend through the scion command, on a machine with a device (the `gpu`
suite; exits 77 where the backend cannot run and no NVIDIA device is visible, and fails
where one is: visible_devices.py). The plugin loads and lists every device nvidia-smi
lists; `--device auto` and `--device cuda` choose it; and the example family is trained and
tested on the GPU and on the CPU, with the same verdicts.

Requires model code that reaches backend memory only through copy_to_device/copy_to_host
(docs/architecture.md, "Backends"). Never run: no GPU was available when it was written
(docs/gpu.md)."""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, HERE)
from harness import check, copy_example, run, run_json, temp_dir  # noqa: E402
from visible_devices import cannot_run_here  # noqa: E402

version = run_json("--device", "auto", "--version")
backend = version["cuda_backend"]
if not backend["built"]:
    cannot_run_here("scion was built without the CUDA plugin")
if not backend["devices"]:
    cannot_run_here(f"no CUDA device: {backend.get('why_no_device')}")

check(backend["loaded"], f"a device is listed only by a loaded plugin: {backend}")
smi = shutil.which("nvidia-smi")
if smi:
    listed = subprocess.run([smi, "-L"], capture_output=True, text=True).stdout.strip().splitlines()
    check(len(listed) == len(backend["devices"]), f"the plugin sees nvidia-smi's devices: {listed} vs {backend}")
check(version["compute"].startswith("cuda (--device auto: cuda:0"), f"auto chooses the device: {version}")
check(run_json("--device", "cuda", "--version")["compute"].startswith("cuda"), "--device cuda is accepted")


def verdicts(device):
    """Trains and tests the example family on `device`; returns whether each test's failure
    rate exceeded its limit."""
    work = copy_example("sentiment", temp_dir())
    rc, _, err = run("--device", device, "-q", "train", cwd=work)
    check(rc == 0, f"--device {device} train: {rc} {err}")
    rc, out, err = run("--device", device, "--json", "test", cwd=work)
    check(rc in (0, 1), f"--device {device} test: {rc} {err}")
    report = json.loads(out)
    return {(t["model"], t["test"]): t["exceeded"] for t in report["tests"]}


gpu, cpu = verdicts("cuda"), verdicts("cpu")
check(gpu.keys() == cpu.keys() and gpu, f"the same tests ran on both devices: {sorted(gpu)} vs {sorted(cpu)}")
differing = [k for k in gpu if gpu[k] != cpu[k]]
check(not differing, f"the GPU-trained family passes the tests the CPU-trained one passes: {differing}")
print("ok")
