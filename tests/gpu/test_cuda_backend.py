"""The CUDA backend through the scion command, on a machine with a device (the `gpu`
suite; exits 77 where the backend cannot run and no NVIDIA device is visible, and fails
where one is: visible_devices.py). The plugin loads and lists every device nvidia-smi
lists; `--device auto` and `--device cuda` choose it; and the example family is trained and
tested on the GPU and on the CPU, and every test's failure rate on the GPU-trained family is
within 0.3 of the CPU-trained one's. Not the same verdicts: the two devices sum in another
order, and after a few hundred steps that alone moves the models as far as another CPU
library does. On the CPU, oneDNN's products against OpenBLAS's moved failure rates by up to
0.2 and flipped one verdict (review-lora's positive-vocabulary, 2026-11-27); on an H100 the
first run flipped one too (review-lora's critic-vocabulary). The step-by-step equality of
GPU and CPU training is tests/gpu/cuda_family_training.cpp's.

Requires model code that reaches backend memory only through copy_to_device/copy_to_host
(docs/architecture.md, "Backends"). Results on a GPU: docs/gpu.md."""
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


def failure_rates(device):
    """Trains and tests the example family on `device`; returns each test's failure rate."""
    work = copy_example("sentiment", temp_dir())
    for command in ("train", "adapt"):  # the base, then its descendants
        rc, _, err = run("--device", device, "-q", command, cwd=work)
        check(rc == 0, f"--device {device} {command}: {rc} {err}")
    rc, out, err = run("--device", device, "--json", "test", cwd=work)
    check(rc in (0, 1), f"--device {device} test: {rc} {err}")
    report = json.loads(out)
    return {(t["model"], t["test"]): t["failure_rate"] for t in report["tests"]}


gpu, cpu = failure_rates("cuda"), failure_rates("cpu")
check(gpu.keys() == cpu.keys() and gpu, f"the same tests ran on both devices: {sorted(gpu)} vs {sorted(cpu)}")
apart = {k: (gpu[k], cpu[k]) for k in gpu if abs(gpu[k] - cpu[k]) > 0.3}
check(not apart, f"failure rates of the GPU- and CPU-trained families within 0.3: {apart}")
print(f"ok: {len(gpu)} tests, failure rates at most {max(abs(gpu[k] - cpu[k]) for k in gpu):.3f} apart")
