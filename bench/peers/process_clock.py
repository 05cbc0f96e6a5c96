"""Seconds since this process started (before the interpreter imported anything), for
the peers' time to the first step (docs/benchmarks.md: process start to the end of step 1).
Linux: /proc/self/stat's start time (clock ticks since boot) against CLOCK_BOOTTIME, as
scion's runtime/process_clock.h does, so both sides count from the same moment."""
import os
import time


def seconds_since_start():
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    start_ticks = int(fields[19])  # field 22 of stat(5); fields[0] here is field 3
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")
