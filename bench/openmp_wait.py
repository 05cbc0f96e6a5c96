#!/usr/bin/env python3
"""OpenMP waiting: `scion run` on the example family alone, and two at once, under each
wait policy of the CPU backend's OpenMP team.

Why it matters: libgomp keeps idle workers spinning after every parallel loop unless told
otherwise. Alone on a machine that is a little faster; next to another busy process the
spinning threads take the cores the other process needs. scion therefore restarts itself
with OMP_WAIT_POLICY=passive unless the user set a policy (cli/main.cpp).

Configurations, each timed --reps times, interleaved, medians reported:
  alone/<policy>  one `scion run` of examples/sentiment into an empty store;
  pair/<policy>   two such runs started together, each into its own store (wall time
                  until both end; a pair that exceeds --timeout is reported as such).
Policies: passive (OMP_WAIT_POLICY=passive: idle workers sleep at once), brief
(GOMP_SPINCOUNT=1000: they poll 1,000 times, then sleep) and active
(OMP_WAIT_POLICY=active: they spin and never sleep).

Usage: bench/openmp_wait.py build/cli/scion [--reps 3] [--timeout 400]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "examples", "sentiment")
# Environment of each policy; scion keeps the wait settings it is given.
POLICIES = {
    "passive": {"OMP_WAIT_POLICY": "passive"},
    "brief": {"GOMP_SPINCOUNT": "1000"},
    "active": {"OMP_WAIT_POLICY": "active"},
}


def workspace():
    work = os.path.join(tempfile.mkdtemp(prefix="scion-openmp-wait-"), "sentiment")
    shutil.copytree(EXAMPLE, work, ignore=shutil.ignore_patterns(".scion"))
    return work


def start(scion, policy):
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    env.pop("GOMP_SPINCOUNT", None)
    env.update(POLICIES[policy])
    work = workspace()
    proc = subprocess.Popen([scion, "-q", "run"], cwd=work, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, work


def timed(scion, policy, count, timeout):
    """Seconds until `count` runs started together all end; None past the timeout."""
    begin = time.monotonic()
    runs = [start(scion, policy) for _ in range(count)]
    late = False
    for proc, _ in runs:
        try:
            proc.wait(timeout=max(1, timeout - (time.monotonic() - begin)))
        except subprocess.TimeoutExpired:
            late = True
            proc.kill()
            proc.wait()
        if not late and proc.returncode not in (0, 1):  # 1: the example's tests fail on purpose
            raise SystemExit(f"scion run exited {proc.returncode}")
    for _, work in runs:
        shutil.rmtree(os.path.dirname(work), ignore_errors=True)
    return None if late else time.monotonic() - begin


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scion")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=400)
    args = parser.parse_args()
    scion = os.path.abspath(args.scion)
    results = {}
    for rep in range(args.reps):
        for policy in POLICIES:
            for count, name in ((1, "alone"), (2, "pair")):
                seconds = timed(scion, policy, count, args.timeout)
                results.setdefault(f"{name}/{policy}", []).append(seconds)
                shown = f"{seconds:.1f} s" if seconds is not None else f"> {args.timeout:.0f} s"
                print(f"openmp_wait rep {rep}: {name}/{policy} {shown}", flush=True)

    def median(key):
        values = results[key]
        if any(v is None for v in values):
            return None
        return statistics.median(values)

    for key in results:
        m = median(key)
        print(f"openmp_wait {key}: median={'%.1f s' % m if m is not None else 'timed out'}")
    for name in ("alone", "pair"):
        base = median(f"{name}/passive")
        for policy in ("brief", "active"):
            other = median(f"{name}/{policy}")
            if base is None:
                continue
            shown = f"={other / base:.2f}" if other is not None else f">{args.timeout / base:.2f} (timed out)"
            print(f"openmp_wait ratio {name} {policy}/passive{shown}")


if __name__ == "__main__":
    main()
