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
It also keeps docs/architecture.md from going stale: the folder graph there (which folder
includes which, between the markers below) must be the one the includes make, and the
page's map of runtime/ must name every folder inside runtime/. With --write-docs it
rewrites the graph instead of failing.
Usage: check_layers.py SOURCE_ROOT [BUILD_ROOT] [--write-docs]
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


GRAPH_BEGIN = "<!-- folder graph: written by tests/layers/check_layers.py --write-docs -->"
GRAPH_END = "<!-- end of folder graph -->"
RUNTIME_MAP = "## Map of runtime/"


def graph_text(graph):
    """The folder graph as docs/architecture.md holds it: edges only, no counts (counts
    move with every include; an edge appearing or going is what a reader must see)."""
    lines = ["```"]
    for folder in ALLOWED:
        lines.append(f"{folder:20} -> {', '.join(sorted(graph[folder])) or '(nothing)'}")
    lines.append("```")
    return "\n".join(lines)


def docs_problems(root, graph, write):
    """What docs/architecture.md says wrong about the folders; rewrites the graph if `write`."""
    path = os.path.join(root, "docs", "architecture.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    begin, end = text.find(GRAPH_BEGIN), text.find(GRAPH_END)
    if begin < 0 or end < begin:
        return [f"{path}: no folder graph between '{GRAPH_BEGIN}' and '{GRAPH_END}'"]
    inside = text[begin + len(GRAPH_BEGIN):end].strip()
    problems = []
    if inside != graph_text(graph):
        if write:
            text = text[:begin + len(GRAPH_BEGIN)] + "\n" + graph_text(graph) + "\n" + text[end:]
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        else:
            problems.append(f"{path}: the folder graph is stale (the includes now make:\n"
                            f"{graph_text(graph)}\n); run tests/layers/check_layers.py "
                            f"{root} --write-docs")
    at = text.find(RUNTIME_MAP)
    section = text[at:text.find("\n## ", at + 1)] if at >= 0 else ""
    for entry in sorted(os.scandir(os.path.join(root, "runtime")), key=lambda e: e.name):
        if entry.is_dir() and f"`{entry.name}/`" not in section:
            problems.append(f"{path}: '{RUNTIME_MAP}' does not name runtime/{entry.name}/")
    return problems


def main():
    write_docs = "--write-docs" in sys.argv
    sys.argv = [a for a in sys.argv if a != "--write-docs"]
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
    upward += docs_problems(root, graph, write_docs)
    for problem in upward:
        print(problem, file=sys.stderr)
    return 1 if upward else 0


if __name__ == "__main__":
    sys.exit(main())
