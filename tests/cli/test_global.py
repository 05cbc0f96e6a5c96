"""Global options: --version, --help, usage errors and their exit codes."""
from harness import check, run, run_json

rc, out, err = run("--version")
check(rc == 0, f"--version exited {rc}: {err}")
check(out.startswith("scion "), f"--version output: {out!r}")
check("build: cuda" in out, "--version names the build options")

version = run_json("--version")
check("version" in version and "cuda_devices" in version, f"--json --version: {version}")

rc, out, _ = run("--help")
check(rc == 0 and "Exit codes" in out, "--help lists the exit codes")

rc, _, err = run("--no-such-option")
check(rc == 2, f"an unknown option exits 2, got {rc}")
check("error" in err, f"an unknown option is reported on stderr: {err!r}")

rc, _, err = run("-C", "/no/such/dir", "--json")
check(rc == 2, f"-C with a missing directory exits 2, got {rc}")
print("ok")
