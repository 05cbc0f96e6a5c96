"""The CUDA plugin carries machine code for every architecture of -Dgpu_architectures and the
PTX of the lowest (runtime/cuda/meson.build), so no GPU of those compiles the kernels when a
process starts.

Checked twice: in the build's commands (compile_commands.json: every source of the plugin
is compiled with each -gencode), and in the plugin itself, whose embedded fat binaries must
hold exactly those images: cuobjdump --list-elf / --list-ptx where cuobjdump is installed,
and always a reading of the ELF section .nv_fatbin here (below), the two compared when both
ran. The fat binary layout read here is not documented by NVIDIA; it is the one nvcc 12 and
13 write, as tools that list fat binaries read it: a 16-byte header (magic 0xBA55ED50, u16
version, u16 header size, u64 size of the entries), then entries, each with u16 kind (1 PTX,
2 ELF) at 0, u32 header size at 4, u64 payload size at 8 and u32 architecture (80 for
sm_80) at 28. A layout that does not parse fails the test, naming the offset.

Usage: check_plugin_architectures.py PLUGIN ARCHITECTURES COMPILE_COMMANDS_JSON"""
import json
import re
import shutil
import struct
import subprocess
import sys

FATBIN_MAGIC = 0xBA55ED50


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def elf_section(data, wanted):
    """(offset, size) of the section named `wanted` in a 64-bit little-endian ELF file."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        fail("the plugin is not a 64-bit ELF file")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx][4]
    for name, _type, _flags, _addr, offset, size in headers:
        if data[names + name:data.index(b"\0", names + name)].decode() == wanted:
            return offset, size
    return None


def fatbin_images(data):
    """{("elf" | "ptx", architecture)} of every fat binary in the .nv_fatbin section."""
    section = elf_section(data, ".nv_fatbin")
    if section is None:
        fail("the plugin has no .nv_fatbin section: no device code at all")
    start, size = section
    images, pos = set(), start
    while pos < start + size:
        magic, _version, header, length = struct.unpack_from("<IHHQ", data, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # fat binaries are 8-byte aligned, with zero padding between them
            continue
        entry, end = pos + header, pos + header + length
        while entry < end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
            arch = struct.unpack_from("<I", data, entry + 28)[0]
            if kind not in (1, 2) or entry_header < 32 or not 10 <= arch <= 1000:
                fail(f"an unreadable fat binary entry at offset {entry:#x} (kind {kind}, arch {arch})")
            images.add(("ptx" if kind == 1 else "elf", arch))
            entry += entry_header + payload
        pos = end
    return images


def cuobjdump_images(plugin):
    """The same set as cuobjdump lists it, or None without cuobjdump."""
    tool = shutil.which("cuobjdump") or (shutil.which("cuobjdump", path="/usr/local/cuda/bin"))
    if tool is None:
        return None
    images = set()
    for flag, kind in (("--list-elf", "elf"), ("--list-ptx", "ptx")):
        out = subprocess.run([tool, flag, plugin], capture_output=True, text=True).stdout
        images |= {(kind, int(m)) for m in re.findall(r"\.sm_(\d+)[a-z]?\.(?:cubin|ptx)", out)}
    return images


def main():
    plugin, architectures, commands = sys.argv[1:4]
    wanted = sorted(int(a) for a in architectures.split(","))
    expected = {("elf", a) for a in wanted} | {("ptx", wanted[0])}
    flags = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in wanted]
    flags.append(f"-gencode=arch=compute_{wanted[0]},code=compute_{wanted[0]}")

    compiled = [c for c in json.load(open(commands)) if "libscion_cuda.so.p" in c.get("output", c["command"])]
    if not compiled:
        fail(f"no command compiles the plugin in {commands}")
    for c in compiled:
        missing = [f for f in flags if f not in c["command"]]
        if missing:
            fail(f"{c['file']} is compiled without {missing}")
    print(f"build log: {len(compiled)} plugin sources compiled with {' '.join(flags)}")

    found = fatbin_images(open(plugin, "rb").read())
    listed = cuobjdump_images(plugin)
    print(f"plugin .nv_fatbin: {sorted(found)}")
    if listed is not None:
        print(f"cuobjdump: {sorted(listed)}")
        if listed != found:
            fail(f"cuobjdump lists {sorted(listed)}, the .nv_fatbin reading {sorted(found)}")
    else:
        print("cuobjdump: not installed here (the .nv_fatbin reading alone)")
    if found != expected:
        fail(f"the plugin carries {sorted(found)}; expected {sorted(expected)} (-Dgpu_architectures={architectures})")
    print("ok")


if __name__ == "__main__":
    main()
