"""`scion report` without a browser: the page is one well-formed, self-contained HTML file
whose tree, matrix, violations, blame, curves and recipes agree with what the store holds
and `scion test --json` reported; text from the spec is escaped; -o - writes to stdout; an
existing file is replaced only with --force."""
import json
import os
import re
from html.parser import HTMLParser

from harness import check, run
from report_family import MODELS, TESTS, trained_family

VOID = {"meta", "br", "hr", "img", "input", "link", "wbr", "col", "area", "base", "source"}


class Page(HTMLParser):
    """Checks that every element is closed in order and keeps each one's tag and
    attributes, with the text of the elements in `self.text`."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.elements, self.errors, self.text = [], [], [], []

    def handle_starttag(self, tag, attrs):
        element = {"tag": tag, "attrs": dict(attrs), "parents": [e["tag"] for e in self.stack]}
        self.elements.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag, attrs):
        self.elements.append({"tag": tag, "attrs": dict(attrs), "parents": [e["tag"] for e in self.stack]})

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1]["tag"] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1]['tag'] if self.stack else 'nothing'}")
            return
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)

    def with_class(self, name, tag=None):
        return [e for e in self.elements if name in e["attrs"].get("class", "").split()
                and (tag is None or e["tag"] == tag)]


def parse(html):
    page = Page()
    page.feed(html)
    page.close()
    check(not page.errors, f"the page is well formed: {page.errors[:5]}")
    check(not page.stack, f"every element is closed: {[e['tag'] for e in page.stack]}")
    return page


work, tested = trained_family()

rc, out, err = run("report", cwd=work)
check(rc == 0, f"scion report exited {rc}\n{err}")
path = os.path.join(work, "report.html")
check(os.path.isfile(path) and "report.html" in out, f"writes report.html by default: {out}")
with open(path, encoding="utf-8") as f:
    html = f.read()
page = parse(html)
check(html.startswith("<!DOCTYPE html>"), "an HTML5 document")

# Self-contained: nothing is fetched, nothing runs.
for tag in ("script", "link", "img", "iframe", "object", "embed"):
    check(not [e for e in page.elements if e["tag"] == tag], f"no <{tag}> element")
for e in page.elements:
    for name, value in e["attrs"].items():
        check(name != "src" and not name.startswith("on"), f"no {name}= attribute: {e}")
        if name == "href":
            check(value.startswith("#"), f"links stay inside the page: {value}")
check(not re.search(r"url\((?!#)|@import|@font-face", html), "the stylesheet loads nothing")
check(not re.search(r"https?://(?!www\.w3\.org/2000/svg)", html), "no address but the SVG namespace")
ids = {e["attrs"]["id"] for e in page.elements if "id" in e["attrs"]}
for e in page.elements:
    if e["attrs"].get("href", "").startswith("#") and len(e["attrs"]["href"]) > 1:
        target = e["attrs"]["href"][1:]
        check(target in ids or target == "arrow", f"link to #{target} has a target")

# The tree: one box per model, an edge per parent, the share drawn.
trees = page.with_class("lineage-tree", "svg")
check(len(trees) == 1, f"one family tree, got {len(trees)}")
nodes = {e["attrs"]["data-model"]: e for e in page.with_class("node", "g")}
check(set(nodes) == set(MODELS), f"a box per model: {sorted(nodes)}")
check(all("status-ok" in n["attrs"]["class"] for n in nodes.values()), "every model is trained")
check(len(page.with_class("edge", "g")) == 3, "an edge per parent link")
check(len(page.with_class("share", "g")) == 1, "the share between a and b is drawn")
check("22 shared" in html or re.search(r"\d+ shared · \d+ own", html), "boxes give shared and own tensors")

# The matrix: a row per test, a cell per (test, model) with the rate `scion test` reported.
matrix = page.with_class("test-matrix", "table")
check(len(matrix) == 1, "one test matrix")
cells = {(e["attrs"]["data-test"], e["attrs"]["data-model"]): e for e in page.with_class("cell", "td")
         if "data-test" in e["attrs"]}
expected = {(t["test"], t["model"]): t for t in tested["tests"]}
check(set(cells) == set(expected), f"matrix cells {sorted(cells)} are the tested pairs {sorted(expected)}")
for key, t in expected.items():
    rate = float(cells[key]["attrs"]["data-rate"])
    check(abs(rate - t["failure_rate"]) < 1e-4, f"{key}: rate {rate} vs scion test's {t['failure_rate']}")
    over = "over" in cells[key]["attrs"]["class"].split()
    check(over == t["exceeded"], f"{key}: outlined over its threshold exactly when it exceeds it")
failing = [k for k, t in expected.items() if t["failures"] > 0]
check(failing, "some test fails on this tiny family (negation)")
for key in failing:
    links = [e for e in page.elements if e["tag"] == "a" and "td" in e["parents"]
             and e["attrs"].get("href", "").startswith("#cases-")]
    check(links, "failing cells link to their cases")
details = page.with_class("failing", "details")
check(len(details) == len(failing), f"a failing-cases block per failing cell: {len(details)} vs {len(failing)}")
check("(=)" in html, "the second test run shows no change since the first")

# Escaping: the lexicon's markup shows as text and makes no element.
check(not [e for e in page.elements if e["tag"] == "i"], "test inputs make no elements")
text = "".join(page.text)
check("<i>plot</i>" in text and 'film & "score"' in text, "inputs show as written")

# Violations and blame.
check(page.with_class("violations", "table") or "no violations stored" in text, "a violations section")
if tested["violations"]["total"]:
    check("praise-is-positive" in text, "the violated assertion is listed")
blame = page.with_class("blame", "table")
check(blame, "a blame table for the failing tests")
check(re.search(r"negation</td><td class=\"num\">\d+</td><td>base \(\d+\)", html),
      "negation's failures on descendants come from the base")

# Curves: a card per trained model with a loss line; validation points where recorded.
cards = {e["attrs"]["data-model"] for e in page.with_class("curve-card")}
check(cards == set(MODELS), f"a curve card per model: {cards}")
series = page.with_class("series", "g")
check(sum(1 for s in series if s["attrs"]["data-series"] == "loss") == len(MODELS), "a loss line per model")
check(any(s["attrs"]["data-series"] == "val_loss" for s in series), "validation loss is plotted")
check(any(s["attrs"]["data-series"] == "val_accuracy" for s in series), "validation accuracy is plotted")
paths = [e for e in page.elements if e["tag"] == "path" and "g" in e["parents"]]
check(any(p["attrs"]["d"].count("L") >= 10 for p in paths), "a loss line has a point per step")

# Recipes.
recipes = [e for e in page.with_class("recipe") if e["attrs"].get("id", "").startswith("model-")]
check(len(recipes) == len(MODELS), "a recipe per model")
check("adapt.lora" in text and "train.steps" in text and "virtual_tokens: 4" in text, "recipes list fields")

# An existing file is replaced only with --force; -o - writes to stdout; --json says what it wrote.
rc, _, err = run("report", cwd=work)
check(rc == 2 and "--force" in err, f"an existing report.html is kept without --force: {rc} {err}")
rc, out, err = run("--json", "report", "-o", "family.html", cwd=work)
check(rc == 0, f"report -o family.html: {err}")
written = json.loads(out)
check(written["models"] == len(MODELS) and written["matrix_cells"] == len(expected), f"--json: {written}")
rc, out, err = run("report", "-o", "-", cwd=work)
check(rc == 0 and out.startswith("<!DOCTYPE html>"), f"-o - writes the page to stdout: {err}")
parse(out)
rc, _, err = run("report", "-o", os.path.join(work, ".scion", "x.html"), cwd=work)
check(rc == 2, f"a report inside the store is refused: {err}")
print("ok")
