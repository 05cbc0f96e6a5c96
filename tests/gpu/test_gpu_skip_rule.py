"""The gpu suite's rule for "cannot run here" (visible_devices.h / .py): a program that
cannot make its CUDA backend exits 77 (SKIP) where no NVIDIA device is visible, and 1
(FAIL, with the reason) where one is, so that a GPU machine with a missing libcuda, an old
driver or a plugin that was not found shows red, not a suite of green SKIPs.

Runs on any machine: the plugin is hidden (SCION_CUDA_PLUGIN names no file) so the backend
never starts, and the devices are faked: an empty SCION_TEST_DEV_DIR and a missing
SCION_TEST_NVIDIA_SMI show none; a fake nvidia-smi that lists GPUs, or device node files
nvidia0, nvidia1 in SCION_TEST_DEV_DIR, show some.

Usage: test_gpu_skip_rule.py SCION SOURCE_ROOT BACKEND_OPS CUDA_GRADCHECK CUDA_FAMILY_TRAINING
                             NCCL_ALL_REDUCE"""
import os
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCION, SOURCE_ROOT, BACKEND_OPS, GRADCHECK, FAMILY_TRAINING, NCCL = (os.path.abspath(a) for a in sys.argv[1:7])

work = tempfile.mkdtemp(prefix="scion-gpu-skip-rule-")
no_nodes = os.path.join(work, "dev-empty")
one_node = os.path.join(work, "dev-one")
two_nodes = os.path.join(work, "dev-two")
for folder, nodes in ((no_nodes, []), (one_node, ["nvidia0"]), (two_nodes, ["nvidia0", "nvidia1"])):
    os.makedirs(folder)
    for node in nodes + ["nvidiactl"]:  # nvidiactl is no device: never counted
        open(os.path.join(folder, node), "w").close()
fake_smi = os.path.join(work, "nvidia-smi")
with open(fake_smi, "w") as f:
    f.write("#!/bin/sh\n[ \"$1\" = -L ] || exit 2\n"
            "echo 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-fake-0000-0000-000000000000)'\n"
            "echo 'GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-11111111-fake-0000-0000-000000000000)'\n")
os.chmod(fake_smi, os.stat(fake_smi).st_mode | stat.S_IEXEC)
missing_smi = os.path.join(work, "no-such-nvidia-smi")

# Every way a gpu-suite program can start, the plugin hidden so its backend cannot be made.
PROGRAMS = {
    "backend_ops": ([BACKEND_OPS, "--backend", "cuda", "--precision", "fp32", "--op", "squared_norm"], 1),
    "cuda_gradcheck": ([GRADCHECK], 1),
    "cuda_family_training": ([FAMILY_TRAINING], 1),
    "nccl_all_reduce": ([NCCL], 2),
    "test_cuda_backend.py": ([sys.executable, os.path.join(HERE, "test_cuda_backend.py"), SCION, SOURCE_ROOT], 1),
}
SITUATIONS = {
    # name: (SCION_TEST_DEV_DIR, SCION_TEST_NVIDIA_SMI, devices visible)
    "nothing visible": (no_nodes, missing_smi, 0),
    "nvidia-smi lists 2 GPUs": (no_nodes, fake_smi, 2),
    "/dev/nvidia0": (one_node, missing_smi, 1),
    "/dev/nvidia0 and nvidia1": (two_nodes, missing_smi, 2),
}

failures = []
for situation, (dev_dir, smi, visible) in SITUATIONS.items():
    env = dict(os.environ, SCION_CUDA_PLUGIN=os.path.join(work, "no-plugin", "libscion_cuda.so"),
               SCION_TEST_DEV_DIR=dev_dir, SCION_TEST_NVIDIA_SMI=smi)
    for name, (command, needed) in PROGRAMS.items():
        proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        out = proc.stdout + proc.stderr
        want = 1 if visible >= needed else 77
        says = "visible" in out and ("FAIL" in out if want == 1 else "skip" in out)
        status = "ok" if proc.returncode == want and says else "WRONG"
        print(f"{status:5s} {situation:26s} {name:22s} exit {proc.returncode} (want {want})")
        if status != "ok":
            failures.append(f"{name} with {situation}: exit {proc.returncode}, want {want}:\n{out[-1500:]}")
        elif want == 1 and not any(reason in out for reason in (
                "no-plugin", "not found", "not built", "built without the CUDA plugin")):
            # the plugin missing where it was looked for, or a build configured without it
            failures.append(f"{name} with {situation}: the FAIL does not say why the backend cannot run:\n{out[-1500:]}")

for failure in failures:
    print(f"FAIL: {failure}", file=sys.stderr)
sys.exit(1 if failures else 0)
