"""Whether this machine shows NVIDIA GPUs, asked without scion's CUDA plugin: the rule that
decides whether a gpu-suite test that cannot run is skipped (exit 77) or failed. The same
rule as tests/gpu/visible_devices.h, which says why: where a device is visible, a missing
libcuda, an old driver or a plugin not found must not turn the gpu suite into green SKIPs.

Visible: a device node nvidia<N> in /dev (or in $SCION_TEST_DEV_DIR), or a "GPU <n>: ..."
line from `nvidia-smi -L` ($SCION_TEST_NVIDIA_SMI names the program, default nvidia-smi on
the PATH). The count is the larger of the two."""
import os
import re
import subprocess


def visible_nvidia_devices():
    """(count, evidence)."""
    dev = os.environ.get("SCION_TEST_DEV_DIR") or "/dev"
    try:
        nodes = sorted(n for n in os.listdir(dev) if re.fullmatch(r"nvidia[0-9]+", n))
    except OSError:
        nodes = []
    smi = os.environ.get("SCION_TEST_NVIDIA_SMI") or "nvidia-smi"
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    listed = [line for line in out.splitlines() if line.startswith("GPU ")]
    evidence = [os.path.join(dev, nodes[0])] if nodes else []
    if listed:
        evidence.append("nvidia-smi -L: " + listed[0])
    return max(len(nodes), len(listed)), ", ".join(evidence)


def cannot_run_here(reason, needed=1):
    """Exits 77 (SKIP) where fewer than `needed` devices are visible, else 1 (FAIL)."""
    count, evidence = visible_nvidia_devices()
    if count >= needed:
        print(f"FAIL: {count} NVIDIA device(s) visible ({evidence}), but the CUDA backend cannot run: {reason}")
        raise SystemExit(1)
    print(f"skip: {reason} (NVIDIA devices visible: {count}, needed: {needed})")
    raise SystemExit(77)
