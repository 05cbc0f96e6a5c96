"""The man page and bash/zsh completions the build generates from the CLI definition list
every command scion's own --help lists, and bash completes with them."""
import os
import re
import shutil
import subprocess
import sys

from harness import check, run

man, bash_file, zsh_file = (os.path.abspath(p) for p in sys.argv[3:6])


def commands(args):
    """The subcommands `scion ARGS --help` lists."""
    rc, out, err = run(*args, "--help")
    check(rc == 0, f"{args} --help exited {rc}")
    section = out.split("Subcommands:")[-1].split("\n\n")[0] if "Subcommands:" in out else ""
    return re.findall(r"^  (\S+)", section, re.M)


top = commands([])
check(len(top) >= 15 and "init" in top and "export-runs" in top, f"scion --help lists: {top}")
nested = {name: commands([name]) for name in top}
check(nested["lineage"], f"lineage has subcommands: {nested}")

texts = {}
for path in (man, bash_file, zsh_file):
    with open(path) as f:
        texts[path] = f.read().replace("\\-", "-")  # roff's escaped hyphens
for name in top:
    for path, text in texts.items():
        check(re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), f"{path} lacks '{name}'")
    check(f'.SS "scion {name}"' in texts[man], f"the man page has no section for {name}")
for parent, subs in nested.items():
    for sub in subs:
        check(f'.SS "scion {parent} {sub}"' in texts[man],
              f"the man page lacks scion {parent} {sub}")

bash = shutil.which("bash")
if bash:
    def complete(*words):
        script = (f"source {bash_file}; COMP_WORDS=(scion {' '.join(words)}); "
                  f"COMP_CWORD={len(words)}; _scion; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
        out = subprocess.run([bash, "-c", script], capture_output=True, text=True, check=True).stdout
        return set(out.split())
    check(complete("") >= set(top), f"bash completes every command: {sorted(complete(''))}")
    check(complete("lin") == {"lineage"}, f"bash completes 'lin': {complete('lin')}")
    check(complete("lineage", "") >= set(nested["lineage"]), "bash completes lineage's commands")
    check("--compare" in complete("test", "--"), f"bash completes test's options: {complete('test', '--')}")
    check("--format" in complete("lineage", "metrics", "--f"), "bash completes nested options")
zsh = shutil.which("zsh")
if zsh:
    rc = subprocess.run([zsh, "-n", zsh_file]).returncode
    check(rc == 0, "the zsh completion parses")
man_tool = shutil.which("man")
if man_tool:
    proc = subprocess.run([man_tool, "-l", "-Tutf8", man], capture_output=True, text=True,
                          env={**os.environ, "MANWIDTH": "80"})
    check(proc.returncode == 0 and "export-runs" in proc.stdout, f"man renders the page: {proc.stderr}")
print(f"ok: {len(top)} commands in the man page and completions")
