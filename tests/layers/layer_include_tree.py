#!/usr/bin/env python3
"""Builds the include tree of one layer, so that an upward include fails to compile.

Every library compiles with its own tree on its include path instead of the repository
root: TREE_ROOT/<layer>/ holds one symbolic link per folder the layer may include
(itself and the folders below it, as its meson.build lists them). `#include
"runtime/tensor.h"` from spec/ then finds no file, because spec's tree has no runtime/.
A nested folder listed without its parent (runtime/text, a library of its own) is linked
alone inside a real parent folder, so the rest of the parent stays out of reach.
The tree is made at configure time (meson's run_command); links, so it never goes stale.
Prints the compiler argument (-I<tree>) for the library's cpp_args.
Usage: layer_include_tree.py SOURCE_ROOT TREE_ROOT LAYER FOLDER...
"""
import os
import shutil
import sys


def main():
    source_root, tree_root, layer, folders = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    tree = os.path.join(tree_root, layer.replace("/", "_"))
    if os.path.isdir(tree) and not os.path.islink(tree):
        shutil.rmtree(tree)
    os.makedirs(tree)
    for folder in folders:
        if "/" in folder and folder.split("/")[0] in folders:
            continue  # a nested folder (runtime/evaluation) is reachable through its parent's link
        target = os.path.join(source_root, folder)
        if not os.path.isdir(target):
            sys.exit(f"{layer}: no folder {target}")
        # A nested folder without its parent (runtime/text) gets a real parent folder in
        # the tree holding only its own link: `#include "runtime/text/..."` finds it and
        # `#include "runtime/tensor.h"` finds nothing.
        link = os.path.join(tree, folder)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(target, link)
    print("-I" + tree)


if __name__ == "__main__":
    main()
