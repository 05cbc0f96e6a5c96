#!/usr/bin/env python3
"""Fails when a folder includes a folder above it, or folders include each other in a
cycle (docs/architecture.md, "Layers").

Each folder may include only the folders listed for it below; runtime/evaluation counts
as its own folder so that it stays below assertions/. Prints the include graph per
folder (how many #include lines go from one folder into another) and every upward
include, then exits 1 when there is one. The compiler enforces the same table through
each library's include tree (layer_include_tree.py, called from the folders'
meson.build); given BUILD_ROOT, this also fails when a tree disagrees with the table,
and it checks what the compiler cannot: headers no .cpp of their folder includes, and
runtime/ including runtime/evaluation/ (both reach the same runtime/ link).
Usage: check_layers.py SOURCE_ROOT [BUILD_ROOT]
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


def find_cycle(graph):
    """A cycle [a, b, ..., a] of folders in `graph` (folder -> folders it includes), or None.

    The ALLOWED table is an order, so an include it allows cannot close a cycle; this checks
    the table itself and the includes found, so that loosening the table cannot let one in.
    """
    state = {}

    def visit(node, path):
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target, path + [target])
                if found:
                    return found
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def tree_mismatches(build_root):
    """Layers whose include tree (BUILD_ROOT/layers) opens other folders than ALLOWED."""
    problems = []
    for folder, allowed in ALLOWED.items():
        if folder == "cli":
            continue  # the executable compiles against the repository root
        tree = os.path.join(build_root, "layers", folder.replace("/", "_"))
        if not os.path.isdir(tree):
            problems.append(f"{folder}/: no include tree at {tree}")
            continue
        expected = {f.split("/")[0] for f in allowed | {folder}}
        links = set(os.listdir(tree))
        if links != expected:
            problems.append(f"{folder}/: its meson.build opens {sorted(links)}, "
                            f"check_layers.py allows {sorted(expected)}")
    return problems


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
    # The detector itself must see a cycle when there is one.
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    for name, edges in (("the ALLOWED table", ALLOWED), ("the includes", graph)):
        cycle = find_cycle(edges)
        if cycle:
            upward.append(f"{name} form a cycle: {' -> '.join(cycle)}")
    if len(sys.argv) > 2:
        upward += tree_mismatches(sys.argv[2])
    for problem in upward:
        print(problem, file=sys.stderr)
    return 1 if upward else 0


if __name__ == "__main__":
    sys.exit(main())
