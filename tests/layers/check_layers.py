#!/usr/bin/env python3
"""Fails when a folder includes a folder above it (docs/architecture.md, "Layers").

Each folder may include only the folders listed for it below; runtime/evaluation counts
as its own folder so that it stays below assertions/. Prints the include graph per
folder (how many #include lines go from one folder into another) and every upward
include, then exits 1 when there is one.
Usage: check_layers.py SOURCE_ROOT
"""
import collections
import os
import re
import sys

ALLOWED = {
    "base": set(),
    "spec": {"base"},
    "lineage": {"base", "spec"},
    "runtime": {"base", "spec"},
    "runtime/evaluation": {"base", "spec", "runtime"},
    "assertions": {"base", "spec"},
    "report": {"base", "spec", "lineage"},
    "workbench": {"base", "spec", "lineage", "runtime", "runtime/evaluation", "assertions",
                  "report"},
    "cli": {"base", "spec", "lineage", "runtime", "runtime/evaluation", "assertions", "report",
            "workbench"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def folder_of(path):
    for folder in sorted(ALLOWED, key=len, reverse=True):
        if path.startswith(folder + "/"):
            return folder
    return None


def main():
    root = sys.argv[1]
    graph = collections.defaultdict(collections.Counter)
    upward = []
    for folder in ALLOWED:
        for directory, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp", ".cu", ".cuh")):
                    continue
                path = os.path.relpath(os.path.join(directory, name), root)
                if folder_of(path) != folder:
                    continue  # a subfolder listed on its own
                with open(os.path.join(directory, name), encoding="utf-8") as f:
                    text = f.read()
                for match in INCLUDE.finditer(text):
                    target = folder_of(match.group(1))
                    if target is None or target == folder:
                        continue
                    graph[folder][target] += 1
                    if target not in ALLOWED[folder]:
                        line = text.count("\n", 0, match.start()) + 1
                        upward.append(f"{path}:{line}: {folder}/ includes {match.group(1)}, "
                                      f"a folder above it")
    for folder in ALLOWED:
        edges = ", ".join(f"{t} ({n})" for t, n in sorted(graph[folder].items()))
        print(f"{folder:20} -> {edges}")
    for problem in upward:
        print(problem, file=sys.stderr)
    return 1 if upward else 0


if __name__ == "__main__":
    sys.exit(main())
