#!/usr/bin/env python3
"""Fails when a function in the checked folders is longer than the limit (the house rule
"a function fits on a screen", docs/architecture.md; issue #28: no function over 80 lines in workbench/).

A function's length is its physical lines, from the first line of its declaration to its
closing brace, comments and blank lines included: what a reader scrolls through. Lambdas
and local classes count toward the function that holds them.

The C++ is read by a brace counter, not a compiler: comments, string and character
literals (raw strings too) and preprocessor lines are blanked first, then each `{` at
namespace or class scope is classified by the text before it: `namespace`, `extern "C"`,
`class`/`struct`/`union` open a scope to look inside; `enum` bodies, initialisers
(`= {...}`, `name{...}`, a constructor's `member_{...}`) are skipped; anything else whose
text has a call-like `name(` (or a lambda's `](`) outside template arguments is a
function. `--self-test` checks the counter on cases built to fool it, and that a function
one line over the limit fails.

Prints the longest function of every folder under SOURCE_ROOT that has C++ (for the
record), then each function over the limit in the checked folders, and exits 1 when there
is one.
Usage: check_function_length.py SOURCE_ROOT [--limit N] [--check FOLDER ...]
       check_function_length.py --self-test
"""
import argparse
import os
import re
import sys

SOURCES = (".cpp", ".h", ".cu", ".cuh")
SKIPPED_DIRS = {"build", ".git", "subprojects"}
IDENT = re.compile(r"[A-Za-z_0-9]")
SPECIFIERS = {"const", "noexcept", "override", "final", "mutable", "volatile"}


def blank_code(text):
    """`text` with comments, literals and preprocessor lines turned into spaces (newlines
    kept, so line numbers hold). Quotes stay, so `extern "C"` still reads as one."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            # A preprocessor line, with its backslash continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        if c == "\n":
            out.append(c)
            at_line_start = True
            i += 1
            continue
        if not c.isspace():
            at_line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        raw = re.match(r'(?:u8|u|U|L)?R"([^()\\ ]{0,16})\(', text[i:i + 24])
        if raw and (i == 0 or not IDENT.match(text[i - 1])):
            close = ")" + raw.group(1) + '"'
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:end - 1]) + '"')
            i = end
            continue
        if c in "\"'":
            # A digit separator (1'000'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n and text[j] == c else ""))
            i = j + 1 if j < n and text[j] == c else j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def strip_template_arguments(header):
    """`header` without the text inside <...> (so `std::function<void(int)> f` has no
    call-like parenthesis); `operator<`-style names are left to the caller."""
    out, depth = [], 0
    for i, c in enumerate(header):
        if c == "<" and not header.startswith("<<", i) and not header.startswith("<=", i):
            depth += 1
            continue
        if c == ">" and depth > 0 and (i == 0 or header[i - 1] != "-"):
            depth -= 1
            continue
        if depth == 0:
            out.append(c)
    return "".join(out)


def depth0_equals(header):
    """Whether `header` has an assignment `=` outside parentheses (an initialiser)."""
    depth = 0
    for i, c in enumerate(header):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "=" and depth == 0:
            before = header[i - 1] if i > 0 else ""
            after = header[i + 1] if i + 1 < len(header) else ""
            if before in "=!<>+-*/%&|^" or after == "=":
                continue
            if re.search(r"\boperator\s*$", header[:i]):
                continue
            return True
    return False


def classify(header):
    """What a `{` after `header` (the code since the previous ; { } or access label)
    opens: 'scope', 'function' or 'skip'."""
    h = " ".join(header.split())
    h = re.sub(r"^(\[\[[^\]]*\]\]\s*)+", "", h)  # attributes
    bare = re.sub(r"^template\s*<.*?>\s*(?=(class|struct|union|enum)\b)", "", h)
    if re.match(r"^(inline\s+)?namespace\b", h) or re.match(r'^extern\s*"', h):
        return "scope"
    if re.match(r"^(typedef\s+)?(class|struct|union)\b", bare) and "(" not in re.sub(
            r"\balignas\s*\([^)]*\)", "", strip_template_arguments(bare)):
        return "scope"
    if re.match(r"^(typedef\s+)?enum\b", bare):
        return "skip"
    if re.search(r"\]\s*(\([^)]*\))?\s*(mutable\s*)?(->[^{]*)?$", h) and "[" in h:
        return "function"  # a lambda, at namespace scope or as a member's initialiser
    if depth0_equals(h):
        return "skip"
    if re.search(r"\boperator\b", h) or re.search(r"[\w\]>~]\s*\(", strip_template_arguments(h)):
        return "function"
    return "skip"


def member_brace_init(header):
    """Whether `{` after `header` initialises a member in a constructor's initialiser list
    (`Foo(int a) : a_{a}`), not the constructor's body."""
    h = " ".join(header.split())
    if not re.search(r"\)\s*(noexcept\s*)?:(?!:)", h):
        return False
    last = re.search(r"([A-Za-z_][A-Za-z_0-9]*)\s*$", h)
    return bool(last) and last.group(1) not in SPECIFIERS


def functions(text):
    """(name line, first line, last line) of every function in `text`, 1-based."""
    code = blank_code(text)
    found = []
    line_of = [0] * (len(code) + 1)
    line = 1
    for i, c in enumerate(code):
        line_of[i] = line
        if c == "\n":
            line += 1
    line_of[len(code)] = line

    def matching(open_at):
        depth = 0
        for j in range(open_at, len(code)):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    return j
        return len(code) - 1

    def scan(start, end):
        header_start = start
        i = start
        while i < end:
            c = code[i]
            if c in ";}":
                header_start = i + 1
            elif c == ":" and re.search(r"\b(public|private|protected)\s*$", code[header_start:i]):
                header_start = i + 1
            elif c == "{":
                header = code[header_start:i]
                close = matching(i)
                if member_brace_init(header):
                    i = close + 1
                    continue
                kind = classify(header)
                if kind == "scope":
                    scan(i + 1, close)
                    header_start = close + 1
                elif kind == "function":
                    first = header_start + len(header) - len(header.lstrip())
                    found.append((code[first:i].strip(), line_of[first], line_of[close]))
                    header_start = close + 1
                else:
                    # An initialiser or enum body: the declaration goes on to its `;`.
                    pass
                i = close + 1
                continue
            i += 1

    scan(0, len(code))
    return found


def function_name(header):
    h = " ".join(header.split())
    operator = re.search(r"((?:[\w:]+::)?operator\s*(?:\(\)|[^\s(]+))\s*\(", h)
    if operator:
        return operator.group(1)
    lambda_name = re.search(r"([\w:]+)\s*=\s*\[", h)
    if lambda_name:
        return lambda_name.group(1)
    m = re.search(r"([~\w:]+)\s*\(", strip_template_arguments(h))
    return m.group(1) if m else h[:40]


def source_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(SOURCES):
                yield os.path.join(dirpath, name)


def measure(root):
    """folder -> [(length, path, line, name)] for every function under `root`."""
    by_folder = {}
    for path in source_files(root):
        rel = os.path.relpath(path, root)
        folder = os.path.dirname(rel) or "."
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for header, first, last in functions(text):
            by_folder.setdefault(folder, []).append(
                (last - first + 1, rel, first, function_name(header)))
    return by_folder


SELF_TEST = {
    # name: (source, expected [(name, length)])
    "plain": ("int f(int a) {\n  return a;\n}\n", [("f", 3)]),
    "class scope and inline members": (
        "namespace n {\nclass C : public B<int> {\n public:\n  int g() const {\n    return 1;\n  }\n"
        " private:\n  int x_{0};\n  std::function<void(int)> cb_{nullptr};\n};\n}  // namespace n\n",
        [("g", 3)]),
    "braces in comments, strings, raw strings and chars": (
        "void h() {\n  // {\n  const char* s = \"}{\";\n  auto r = R\"x(}})x\";\n  char c = '{';\n"
        "  /* } */\n}\n", [("h", 7)]),
    "constructor initialiser braces": (
        "Foo::Foo(int a)\n    : a_{a},\n      b_(a) {\n  go();\n}\n", [("Foo::Foo", 5)]),
    "table initialisers and enums are not functions": (
        "const std::map<std::string, int> kTable = {\n  {\"a\", f(1)},\n};\nenum class E { kA, kB };\n"
        "struct S {\n  int v;\n};\nint k() { return 0; }\n", [("k", 1)]),
    "lambdas count toward their function": (
        "void outer() {\n  auto l = [&](int x) {\n    return x;\n  };\n  l(1);\n}\n", [("outer", 6)]),
    "a lambda at namespace scope is a function": (
        "const auto kF = [](int x) {\n  return x;\n};\n", [("kF", 3)]),
    "operators and trailing returns": (
        "bool operator<(const A& a, const A& b) {\n  return a.x < b.x;\n}\n"
        "auto m() -> std::vector<int> {\n  return {};\n}\n", [("operator<", 3), ("m", 3)]),
    "extern C and preprocessor lines": (
        "#define X { \\\n  }\nextern \"C\" {\nvoid on_signal(int) {\n  g = 1;\n}\n}\n",
        [("on_signal", 3)]),
}


def self_test(limit):
    failures = []
    for name, (source, expected) in SELF_TEST.items():
        got = [(function_name(h), last - first + 1) for h, first, last in functions(source)]
        if got != expected:
            failures.append(f"{name}: expected {expected}, got {got}")
    # One line over the limit fails; exactly the limit passes.
    for length, should_fail in ((limit, False), (limit + 1, True)):
        body = "".join(f"  x += {i};\n" for i in range(length - 2))
        found = functions("int long_one(int x) {\n" + body + "}\n")
        over = [f for f in found if f[2] - f[1] + 1 > limit]
        if bool(over) != should_fail:
            failures.append(f"a function of {length} lines {'passed' if should_fail else 'failed'}"
                            f" against the limit {limit}: {found}")
    for f in failures:
        print("self-test FAILED:", f)
    print(f"self-test: {len(SELF_TEST) + 2 - len(failures)} of {len(SELF_TEST) + 2} cases pass")
    return not failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?")
    parser.add_argument("--limit", type=int, default=80)
    parser.add_argument("--check", nargs="*", default=["workbench"],
                        help="folders (relative to SOURCE_ROOT, with their subfolders) held to the limit")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    ok = self_test(args.limit)
    if args.self_test or not args.root:
        return 0 if ok else 1
    by_folder = measure(args.root)
    print(f"longest function per folder (lines, declaration to closing brace; limit {args.limit} "
          f"in {', '.join(f + '/' for f in args.check)}):")
    for folder in sorted(by_folder):
        length, path, line, name = max(by_folder[folder])
        print(f"  {folder + '/':<28} {length:>4}  {name} ({path}:{line})")
    over = []
    for folder, found in by_folder.items():
        if any(folder == c or folder.startswith(c + "/") for c in args.check):
            over += [f for f in found if f[0] > args.limit]
    for length, path, line, name in sorted(over, reverse=True):
        print(f"{path}:{line}: {name} is {length} lines, over the limit of {args.limit}: "
              "take it apart (a function fits on a screen: docs/architecture.md)")
    return 1 if over or not ok else 0


if __name__ == "__main__":
    sys.exit(main())
