"""A rank killed (SIGKILL) in the middle of a task-parallel wave (docs/distributed.md,
"Failures"): `mpirun -np 2 scion run --parallel task` on a family of two trunks, one per
rank. One rank finishes and stores its model of the wave and waits in the wave's exchange
while the other, killed, trains (rank 1 killed in wave 0, rank 0 in wave 1). mpirun must end the job (no rank left waiting in a
collective: every wait here is bounded, and a hang fails the test), the store must pass
`scion fsck`, the models stored before the kill must be exactly the ones one process
stores, and the same command run again must train only what is left. Then the same with
rank 0 killed while the other rank still trains. Skips (77) without mpirun or without MPI in the
build."""
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time

from harness import SCION, check, run, spec_workspace
from mpi_support import (MPI_ENV, MPI_OPTIONS, TWO_TRUNKS_MODELS, TWO_TRUNKS_SPEC, require_mpirun,
                         stored_tensors)

MPIRUN = require_mpirun()

# Bounds on every wait: a rank left waiting for a dead one would otherwise stall CI. The
# slow step is training on a machine shared with builds; a hang waits forever.
START_TIMEOUT = 240  # until the victim's run is under way
END_TIMEOUT = 120    # from the kill until mpirun has ended the job

SPEC = TWO_TRUNKS_SPEC
MODELS = TWO_TRUNKS_MODELS
LONG = 100000  # steps: far longer than any test waits


def solo(*args, cwd):
    proc = subprocess.run([SCION, *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env=MPI_ENV)
    return proc.returncode, proc.stdout, proc.stderr


def mpirun(*args, cwd, launch=(), env=MPI_ENV):
    proc = subprocess.run([MPIRUN, "-np", "2", *MPI_OPTIONS, *launch, SCION, *args], cwd=cwd,
                          capture_output=True, text=True, timeout=240, env=env)
    return proc.returncode, proc.stdout.replace("\r\n", "\n"), proc.stderr


def tensors(work, model):
    """name -> the raw bytes of each stored tensor."""
    return {name: raw for name, (_, raw) in stored_tensors(work, model).items()}


def runs(work):
    """(model, run id, status, pid) of every training run, oldest first."""
    with sqlite3.connect(os.path.join(work, ".scion", "lineage.db"), timeout=10) as conn:
        return conn.execute("SELECT m.name, r.id, r.status, r.pid FROM runs r JOIN models m "
                            "ON m.id = r.model_id WHERE r.kind IN ('train', 'adapt') "
                            "ORDER BY r.id").fetchall()


def statuses(work):
    try:
        return {model: (status, pid) for model, _, status, pid in runs(work)}
    except sqlite3.Error:  # not created yet, or busy: ask again
        return {}


def with_steps(spec, model, steps):
    """SPEC with `model`'s step count replaced."""
    lines = spec.split("\n")
    at = lines.index(f"  {model}:")
    for i in range(at + 1, len(lines)):
        if "steps:" in lines[i]:
            lines[i] = re.sub(r"steps: \d+", f"steps: {steps}", lines[i])
            return "\n".join(lines)
    raise AssertionError(model)


single = spec_workspace(SPEC)
rc, out, err = solo("run", cwd=single)
check(rc == 0, f"one process trains the family: {out}{err}")
reference = {model: tensors(single, model) for model in MODELS}


def kill_mid_wave(victim_model, long_models, stored_first, victim_rank):
    """Trains SPEC with the step counts `long_models` (model -> steps) under `mpirun -np 2
    --parallel task`; once the models `stored_first` are stored and `victim_model`'s run is
    under way, kills the rank that trains it (rank `victim_rank`: the greedy assignment
    puts the trunk of most estimated FLOPs on rank 0). Checks the job's end, the store,
    and a second run of the same command."""
    label = f"killing rank {victim_rank} while it trains {victim_model}"
    spec = SPEC
    for model, steps in long_models.items():
        spec = with_steps(spec, model, steps)
    work = spec_workspace(spec)
    command = [MPIRUN, "-np", "2", *MPI_OPTIONS, SCION, "run", "--parallel", "task"]
    # A session of its own, so that a hung job can be ended whole (mpirun and its ranks).
    proc = subprocess.Popen(command, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=MPI_ENV, start_new_session=True)
    try:
        victim = None
        deadline = time.time() + START_TIMEOUT
        while victim is None and time.time() < deadline and proc.poll() is None:
            now = statuses(work)
            if (all(now.get(m, ("",))[0] == "finished" for m in stored_first)
                    and now.get(victim_model, ("",))[0] == "running"):
                victim = now[victim_model][1]
            else:
                time.sleep(0.2)
        check(victim is not None, f"{label}: the victim's run starts once {stored_first} are stored "
                                  f"(runs: {statuses(work)}, job ended: {proc.poll()})")
        time.sleep(1)  # well inside the victim's training
        os.kill(victim, signal.SIGKILL)
        try:
            out, err = proc.communicate(timeout=END_TIMEOUT)
        except subprocess.TimeoutExpired:
            check(False, f"{label}: the job did not end within {END_TIMEOUT} s of the kill: a rank "
                         "waits for the killed one")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # mpirun sees the rank die on a signal, ends the others and exits with the killed
    # rank's status (docs/distributed.md, "Failures": a killed rank cannot reach the
    # agreement that would give exit 3).
    check(proc.returncode == 137, f"{label}: mpirun exits 137 (128 + SIGKILL), got {proc.returncode}")
    check(re.search(rf"process rank {victim_rank} .* exited on signal 9", err),
          f"{label}: mpirun names the killed rank:\n{err}")
    print(f"{label}: mpirun exited {proc.returncode}")

    rc, out, err = run("fsck", cwd=work)
    check(rc == 0, f"{label}: the store is consistent: {out}{err}")
    for model in stored_first:
        check(tensors(work, model) == reference[model],
              f"{label}: {model}, stored before the kill, holds one process's tensors")
    after = runs(work)
    stored_runs = {model: run_id for model, run_id, status, _ in after if status == "finished"}
    victim_run = next(run_id for model, run_id, _, _ in after if model == victim_model)

    # Again, with the victim's own step count: only what is left trains.
    with open(os.path.join(work, "scion.yaml"), "w") as f:
        f.write(SPEC)
    # Launched from a hostfile (one machine here: localhost with 2 slots), as on several.
    hostfile = os.path.join(work, "hosts")
    with open(hostfile, "w") as f:
        f.write("localhost slots=2\n")
    rc, out, err = mpirun("--json", "run", "--parallel", "task", cwd=work,
                          launch=["--hostfile", hostfile])
    check(rc == 0, f"{label}: the same command run again finishes the work: {err}")
    summary = {m["model"]: m["status"] for m in json.loads(out)["models"]}
    for model in stored_runs:
        check(summary.get(model) == "up to date", f"{label}: {model} is not trained again: {summary}")
    final = runs(work)
    finished = [(model, run_id) for model, run_id, status, _ in final if status == "finished"]
    for model, run_id in stored_runs.items():
        check([r for m, r in finished if m == model] == [run_id],
              f"{label}: {model} keeps its one finished run: {finished}")
    # The killed rank's run no longer says 'running': the next writer marked it abandoned.
    check([status for _, run_id, status, _ in final if run_id == victim_run] == ["abandoned"],
          f"{label}: the killed rank's run is marked abandoned: {final}")
    for model in MODELS:
        check(tensors(work, model) == reference[model],
              f"{label}: after the second run {model} holds one process's tensors")
    rc, out, err = run("fsck", cwd=work)
    check(rc == 0, f"{label}: the store is consistent after the second run: {out}{err}")


# Rank 1 is killed in wave 0 while it trains the base `right`; rank 0 has stored `left`
# and waits in the wave's exchange for rank 1, which never comes. (left-lora's step count
# only makes the left trunk the larger one, so that it goes to rank 0; it never trains.)
kill_mid_wave("right", {"right": LONG, "left-lora": 10 * LONG}, ["left"], victim_rank=1)
# Rank 0 is killed in wave 1 while it adapts right-prefix; rank 1 has stored left-lora and
# waits in the exchange.
kill_mid_wave("right-prefix", {"right-prefix": LONG}, ["left", "right", "left-lora"], victim_rank=0)
# Rank 0 is killed in wave 1 while it adapts left-lora, and rank 1 is still training its
# own model of the wave (or has just stored it): mpirun ends rank 1 wherever it is.
kill_mid_wave("left-lora", {"left-lora": LONG}, ["left", "right"], victim_rank=0)
# Ranks on two machines: rank 1 runs under another host name (a UTS namespace of its own,
# where unprivileged user namespaces are allowed). `--parallel task` would have both write
# the store over a network file system: refused on every rank, exit 2, before the store is
# opened. `--parallel auto` runs data parallel instead: rank 0 alone records every run.
OTHER_HOST = ('if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec unshare -Ur --uts sh -c '
              '\'hostname scion-test-other-machine && exec "$0" "$@"\' "$0" "$@"; fi; exec "$0" "$@"')
probe = subprocess.run(["unshare", "-Ur", "--uts", "true"], capture_output=True) if shutil.which("unshare") else None
if probe is None or probe.returncode != 0:
    print("not checked: ranks on two machines (no unprivileged UTS namespaces here)")
else:
    # The two "machines" share one kernel: no single-copy transfers across the namespaces.
    two_hosts_env = dict(MPI_ENV, OMPI_MCA_btl_vader_single_copy_mechanism="none")
    work = spec_workspace(SPEC)
    rc, out, err = mpirun("run", "--parallel", "task", cwd=work, launch=["sh", "-c", OTHER_HOST],
                          env=two_hosts_env)
    check(rc == 2, f"--parallel task on two machines is refused with exit 2, got {rc}:\n{err}")
    check(err.count("on 2 machines (") == 2 and "rank 0 on " in err
          and "rank 1 on scion-test-other-machine" in err,
          f"every rank says which ranks are on which machine:\n{err}")
    check(not os.path.exists(os.path.join(work, ".scion")), "the refused job opened no store")
    rc, out, err = mpirun("--json", "run", "--parallel", "auto", cwd=work,
                          launch=["sh", "-c", OTHER_HOST], env=two_hosts_env)
    check(rc == 0, f"--parallel auto on two machines runs: {err}")
    check("every wave runs data parallel" in err, f"rank 0 says it runs data parallel:\n{err}")
    pids = {pid for _, _, _, pid in runs(work)}
    check(len(pids) == 1, f"rank 0 alone recorded the runs: {runs(work)}")
    rc, out, err = run("fsck", cwd=work)
    check(rc == 0, f"the store is consistent: {out}{err}")
    print("two machines: task refused, auto ran data parallel")
print("ok")
