"""`scion report` in a real browser: headless Chromium renders the page, takes a
screenshot, and its DOM (as the browser parsed it) holds the family tree, the test matrix
and the training curves. Skips (77) where no Chromium is installed; `./bootstrap.sh test`
installs one. Set SCION_REPORT_SCREENSHOT=PATH to keep the screenshot."""
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

from harness import check, run
from report_family import MODELS, TESTS, trained_family

browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                if shutil.which(b)), None)
if browser is None:
    print("skip: no chromium installed (./bootstrap.sh test installs it)")
    sys.exit(77)


def chromium(*args, profile):
    # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--no-first-run", f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)
    return proc


def unfilter(raw, width, height, channels):
    """The PNG scanlines of `raw` with their filters (None, Sub, Up, Average, Paeth) undone."""
    stride, rows, previous = width * channels, [], bytearray(width * channels)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        previous = line
    return rows


def png_pixels(path):
    """Width, height and the distinct colours (sampled) of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "the screenshot is a PNG")
    pos, idat, width, height, channels = 8, b"", 0, 0, 3
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            check(depth == 8 and colour in (2, 6), f"8-bit RGB(A) screenshot, got depth {depth} type {colour}")
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    rows = unfilter(zlib.decompress(idat), width, height, channels)
    colours = {bytes(line[i:i + 3]) for line in rows[::5] for i in range(0, len(line), channels * 3)}
    return width, height, colours


work, tested = trained_family()
rc, _, err = run("report", "-o", "report.html", cwd=work)
check(rc == 0, f"scion report: {err}")
page = "file://" + os.path.join(work, "report.html")
profile = os.path.join(work, "chromium-profile")

shot = os.environ.get("SCION_REPORT_SCREENSHOT") or os.path.join(work, "report.png")
proc = chromium(f"--screenshot={shot}", "--window-size=1280,2200", page, profile=profile)
check(os.path.isfile(shot), f"chromium wrote a screenshot\n{proc.stderr[-2000:]}")
width, height, colours = png_pixels(shot)
check((width, height) == (1280, 2200), f"screenshot of the window size, got {width}x{height}")
check(len(colours) > 20, f"the screenshot shows a rendered page ({len(colours)} colours sampled)")

proc = chromium("--dump-dom", page, profile=profile)
check(proc.returncode == 0 and "<html" in proc.stdout, f"chromium dumps the DOM\n{proc.stderr[-2000:]}")
dom = proc.stdout
tree = re.search(r'<svg class="lineage-tree".*?</svg>', dom, re.S)
check(tree, "the DOM holds the family tree as SVG")
boxes = set(re.findall(r'<g class="node [^"]*" data-model="([^"]+)"', tree.group(0)))
check(boxes == set(MODELS), f"a box per model in the rendered tree: {boxes}")
matrix = re.search(r'<table class="test-matrix">.*?</table>', dom, re.S)
check(matrix, "the DOM holds the test matrix")
cells = re.findall(r'<td class="cell[^"]*" data-test="([^"]+)" data-model="([^"]+)"', matrix.group(0))
check(set(cells) == {(t["test"], t["model"]) for t in tested["tests"]}, f"matrix cells in the DOM: {cells}")
check(all(f"<th>{t}</th>" in matrix.group(0) for t in TESTS), "a row per test")
curves = re.findall(r'<div class="curve-card" data-model="([^"]+)"', dom)
check(set(curves) == set(MODELS), f"a curve card per model in the DOM: {curves}")
check(len(re.findall(r'<g class="series s0" data-series="loss"><path d="M', dom)) == len(MODELS),
      "each card draws its loss line")
check("<script" not in dom, "nothing scripted the page")
print(f"ok: screenshot {width}x{height} at {shot}")
