"""The CPU binary needs no CUDA library (issue #16): scion links none, starts and trains
with the CUDA libraries hidden, and `--version` says truthfully whether the CUDA plugin
was built, whether it loaded and which devices it sees. `--device cuda` without a usable
device (or plugin) is refused with exit 3. The plugin is found relative to the
executable (issue #25): a copied build opens its own copy, and `--version` names the
file."""
import json
import os
import re
import shutil
import subprocess

from harness import EXAMPLES, SCION, check, copy_example, run, run_json, temp_dir

# 1. No CUDA library among the binary's direct dependencies (readelf reads NEEDED).
dynamic = subprocess.run(["readelf", "-d", SCION], capture_output=True, text=True, check=True).stdout
needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dynamic)
check(needed, f"readelf lists scion's libraries: {dynamic}")
cuda_libs = [n for n in needed if re.match(r"lib(cuda|cudart|cublas|cublasLt|cudnn|nccl|nvrtc)", n)]
check(not cuda_libs, f"scion links no CUDA library, but needs {cuda_libs}")

# 2. --version says what was built, and what loaded.
version = run_json("--version")
backend = version["cuda_backend"]
check(backend["built"] == version["build"]["cuda_plugin"], f"built agrees with the build options: {version}")
if not backend["loaded"] or not backend["devices"]:
    check(backend.get("why_no_device"), f"without a device, --version says why: {backend}")
rc, out, _ = run("--version")
check(rc == 0 and "compute: cpu (--device cpu)" in out,
      f"the CPU computes unless another device is asked for:\n{out}")
rc, out, _ = run("--device", "auto", "--version")
check(rc == 0 and "cuda backend: " in out, f"--version names the backend's state:\n{out}")
# ... and which device --device chooses: auto is CUDA only with a usable device.
if backend["loaded"] and backend["devices"]:
    check("compute: cuda (--device auto: cuda:0" in out, f"auto chooses the device:\n{out}")
else:
    check("compute: cpu (--device auto: " in out and version["compute"].startswith("cpu"),
          f"auto without a device computes on the CPU and says why:\n{out}\n{version}")
    rc, out, _ = run("--device", "cuda", "--version")
    check(rc == 0 and "compute: none (--device cuda: no CUDA device" in out,
          f"--version says --device cuda has nothing to run on:\n{out}")
rc, out, _ = run("--device", "cpu", "--version")
check(rc == 0 and "compute: cpu (--device cpu)" in out, f"--device cpu computes on the CPU:\n{out}")

# 3. The plugin hidden: scion still starts, says it did not load, and refuses --device cuda.
hidden = dict(os.environ, SCION_CUDA_PLUGIN="/nonexistent/libscion_cuda.so")
proc = subprocess.run([SCION, "--json", "--version"], capture_output=True, text=True, env=hidden)
check(proc.returncode == 0, f"--version without the plugin exits 0: {proc.stderr}")
if backend["built"]:
    check('"loaded":false' in proc.stdout.replace(" ", "") and "was not found" in proc.stdout and
          "/nonexistent/libscion_cuda.so" in proc.stdout,
          f"without the plugin, --version says it was not found, and where: {proc.stdout}")
work = copy_example("sentiment", temp_dir())
proc = subprocess.run([SCION, "--device", "cuda", "validate"], cwd=work, capture_output=True, text=True,
                      env=hidden)
check(proc.returncode == 3 and "--device cuda" in proc.stderr, f"--device cuda without a plugin exits 3: "
      f"{proc.returncode} {proc.stderr}")
rc, _, err = run("--device", "cpu", "validate", cwd=work)
check(rc == 0, f"--device cpu works: {err}")
rc, _, err = run("--device", "tpu", "validate", cwd=work)
check(rc == 2, f"an unknown device is a usage error: {rc} {err}")
if not backend["devices"]:
    rc, _, err = run("--device", "cuda", "validate", cwd=work)
    check(rc == 3 and "no CUDA device" in err, f"--device cuda without a device exits 3: {rc} {err}")

# 4. The CUDA libraries themselves hidden (a private mount namespace lays an empty
# folder over the toolkit): scion starts and trains; the plugin reports why it did not
# load. Needs unprivileged user namespaces; skipped (this part only) without them.
cuda_dirs = sorted({os.path.realpath(d) for d in ("/usr/local/cuda", "/opt/cuda") if os.path.isdir(d)})
unshare = shutil.which("unshare")
if cuda_dirs and unshare:
    mounts = " && ".join(f"mount -t tmpfs none {d}" for d in cuda_dirs)
    script = f'{mounts} && "$0" --json --version && "$0" -q train base'
    small = temp_dir()
    shutil.copytree(os.path.join(EXAMPLES, "sentiment", "data"), os.path.join(small, "data"))
    with open(os.path.join(small, "scion.yaml"), "w") as f:
        f.write("datasets:\n  reviews: {path: data/reviews.jsonl, labels: [negative, positive]}\n"
                "models:\n  base:\n    architecture: {type: encoder, layers: 1, width: 16, heads: 2, "
                "max_length: 32}\n    train: {data: reviews, objective: classification, steps: 2, "
                "batch_size: 4}\n")
    proc = subprocess.run([unshare, "-rm", "sh", "-c", script, SCION], cwd=small, capture_output=True,
                          text=True)
    if proc.returncode != 0 and "unshare" in proc.stderr:
        print(f"note: no mount namespace here, CUDA libraries not hidden: {proc.stderr.strip()}")
    else:
        check(proc.returncode == 0, f"with the CUDA libraries hidden, scion starts and trains: {proc.stderr}")
        if backend["built"]:
            check("did not load" in proc.stdout, f"the hidden libraries are named as the reason: {proc.stdout}")
        print("CUDA libraries hidden: scion started and trained")
# 5. The plugin is looked for relative to the executable, so a copy of the build opens its
# own plugin, never the build tree it came from (no absolute build path is compiled in).
if backend["built"]:
    plugin = os.path.join(os.path.dirname(SCION), "..", "runtime", "cuda", "libscion_cuda.so")
    check(os.path.isfile(plugin), f"the build tree holds the plugin at {plugin}")
    check(os.path.realpath(backend["plugin"]) == os.path.realpath(plugin),
          f"the build tree's scion opens the build tree's plugin: {backend}")
    copied = temp_dir()
    os.makedirs(os.path.join(copied, "cli"))
    os.makedirs(os.path.join(copied, "runtime", "cuda"))
    shutil.copy2(SCION, os.path.join(copied, "cli", "scion"))
    shutil.copy2(plugin, os.path.join(copied, "runtime", "cuda", "libscion_cuda.so"))
    flat = temp_dir()  # the binary with the plugin next to it
    shutil.copy2(SCION, os.path.join(flat, "scion"))
    shutil.copy2(plugin, os.path.join(flat, "libscion_cuda.so"))
    alone = temp_dir()  # the binary without any plugin near it
    shutil.copy2(SCION, os.path.join(alone, "scion"))
    unset = {k: v for k, v in os.environ.items() if k != "SCION_CUDA_PLUGIN"}
    for exe, want in ((os.path.join(copied, "cli", "scion"), os.path.join(copied, "runtime", "cuda", "libscion_cuda.so")),
                      (os.path.join(flat, "scion"), os.path.join(flat, "libscion_cuda.so"))):
        proc = subprocess.run([exe, "--json", "--version"], capture_output=True, text=True, env=unset)
        check(proc.returncode == 0, f"{exe} --version: {proc.stderr}")
        moved = json.loads(proc.stdout)["cuda_backend"]
        check(moved["plugin"] == want and moved["loaded"] == backend["loaded"],
              f"{exe} opens {want}, as the build tree's scion opens its own: {moved}")
        check(moved["plugin_search"][0] == os.path.join(os.path.dirname(exe), "libscion_cuda.so"),
              f"next to the executable comes first: {moved['plugin_search']}")
        text = subprocess.run([exe, "--version"], capture_output=True, text=True, env=unset).stdout
        check(want in text, f"--version names the file it opened or tried:\n{text}")
    proc = subprocess.run([os.path.join(alone, "scion"), "--json", "--version"], capture_output=True,
                          text=True, env=unset)
    lonely = json.loads(proc.stdout)["cuda_backend"]
    check(not lonely["loaded"] and "plugin" not in lonely and
          os.path.join(alone, "libscion_cuda.so") in lonely["plugin_search"] and
          "was not found" in lonely["why_no_device"] and alone in lonely["why_no_device"],
          f"a copy without a plugin says where it looked: {lonely}")
    # A file that is not a plugin, first in the search: reported, not passed over.
    with open(os.path.join(alone, "libscion_cuda.so"), "w") as f:
        f.write("not a shared object")
    proc = subprocess.run([os.path.join(alone, "scion"), "--version"], capture_output=True, text=True,
                          env=unset)
    check(f"cuda backend: not loaded from {os.path.join(alone, 'libscion_cuda.so')}" in proc.stdout and
          "did not load" in proc.stdout, f"a broken plugin is named, not skipped:\n{proc.stdout}")
    print("plugin lookup: the copied build, the flat copy and the plugin-less copy each as expected")
print("ok")
