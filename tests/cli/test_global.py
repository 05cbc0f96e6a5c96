"""Global options: --version, --help, usage errors and their exit codes."""
from harness import check, run, run_json

rc, out, err = run("--version")
check(rc == 0, f"--version exited {rc}: {err}")
check(out.startswith("scion "), f"--version output: {out!r}")
check("build: cuda" in out, "--version names the build options")
check("cpu: oneDNN " in out and ", isa " in out and ", bf16 " in out,
      f"--version names oneDNN's ISA and the bf16 support: {out!r}")

version = run_json("--version")
check("version" in version and "cuda_devices" in version, f"--json --version: {version}")
cpu = version.get("cpu", {})
check(cpu.get("isa") and isinstance(cpu.get("native_bf16"), bool)
      and isinstance(cpu.get("bf16_kernel"), bool), f"--json --version cpu: {cpu}")
check(not cpu["native_bf16"] or cpu["bf16_kernel"], f"native bf16 implies a bf16 kernel: {cpu}")

rc, out, _ = run("--help")
check(rc == 0 and "Exit codes" in out, "--help lists the exit codes")

rc, _, err = run("--no-such-option")
check(rc == 2, f"an unknown option exits 2, got {rc}")
check("error" in err, f"an unknown option is reported on stderr: {err!r}")

rc, _, err = run("-C", "/no/such/dir", "--json")
check(rc == 2, f"-C with a missing directory exits 2, got {rc}")
print("ok")
