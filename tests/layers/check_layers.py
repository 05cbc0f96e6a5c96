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

RUNTIME_ALL = {"runtime", "runtime/text", "runtime/data"}
ALLOWED = {
    "base": set(),
    "spec": {"base"},
    "lineage": {"base", "spec"},
    "runtime/text": {"base", "spec"},
    "runtime/data": {"base", "spec", "runtime/text"},
    "runtime": {"base", "spec", "runtime/text", "runtime/data"},
    "runtime/evaluation": {"base", "spec"} | RUNTIME_ALL,
    "assertions": {"base", "spec"},
    "report": {"base", "spec", "lineage"},
    "workbench": {"base", "spec", "lineage", "runtime/evaluation", "assertions", "report"}
    | RUNTIME_ALL,
    "cli": {"base", "spec", "lineage", "runtime/evaluation", "assertions", "report", "workbench"}
    | RUNTIME_ALL,
}
# Inside the runtime/ library (its root files and the folders not listed above): parts in
# levels, lowest first. A part may include its own level and the levels below, never one
# above. Level 0 is the machine: the Backend interface, tensors and arenas at the root,
# the backends (cpu/, cuda/), ranks (comm/) and metrics; the root's loader opens cuda/'s
# plugin ABI and reads comm/'s launch environment, and the op profile counts cpu/'s
# products, so these include each other. Level 1 is the model: model/ (the transformer,
# its passes, parameters, optimizer) and adapters/ (each method's own code, called by the
# passes and reading the model's weights). Level 2 trains it: training/.
RUNTIME_LEVELS = [{"(root)", "cpu", "cuda", "comm", "metrics"}, {"model", "adapters"},
                  {"training"}]
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


def runtime_part(path):
    """The part of the runtime/ library a path under runtime/ belongs to: "(root)" for its
    root files, else its first folder; None for a folder ALLOWED lists on its own."""
    if folder_of(path) != "runtime":
        return None
    rest = path[len("runtime/"):]
    return rest.split("/")[0] if "/" in rest else "(root)"


def runtime_level(part):
    for level, parts in enumerate(RUNTIME_LEVELS):
        if part in parts:
            return level
    return None


def tree_links(tree):
    """What an include tree opens: each link's name, and inside a real folder (the parent
    of a nested folder linked alone, runtime/ in runtime/text's tree) parent/link."""
    links = set()
    for entry in os.scandir(tree):
        if entry.is_symlink() or not entry.is_dir():
            links.add(entry.name)
        else:
            links |= {f"{entry.name}/{inner}" for inner in os.listdir(entry.path)}
    return links


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
        opened = allowed | {folder}
        # A nested folder is reached through its parent's link when the parent is open.
        expected = {f for f in opened if "/" not in f or f.split("/")[0] not in opened}
        links = tree_links(tree)
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
    inside = collections.defaultdict(collections.Counter)
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
                    part, target_part = runtime_part(path), runtime_part(match.group(1))
                    if part and target_part and part != target_part:
                        inside[part][target_part] += 1
                        level, target_level = runtime_level(part), runtime_level(target_part)
                        if level is None or target_level is None or target_level > level:
                            line = text.count("\n", 0, match.start()) + 1
                            upward.append(f"{path}:{line}: runtime/{part} includes "
                                          f"{match.group(1)}, a part of runtime/ above it "
                                          f"or in no level of RUNTIME_LEVELS")
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
    print("inside runtime/:")
    for part in sorted(inside):
        edges = ", ".join(f"{t} ({n})" for t, n in sorted(inside[part].items()))
        print(f"  {part:18} -> {edges}")
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
