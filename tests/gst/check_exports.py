#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares libgsttensormem's dynamic exports with its installed headers.

Usage: check_exports.py LIBRARY HEADER...

Every exported symbol must be a function declared in an installed header
(C, or a C++ entry point of a companion .hpp), including the _get_type of a
G_DECLARE_* type. Anything else fails the check: the elements' interface
to the library (namespace gst_tensormem), the standard library's inline
code, libtensormem's. In the other direction,
every function an installed header declares with GST_TENSOR_MEM_API must
be exported, or an application linking to it fails.
"""
import re
import subprocess
import sys

LINKER_SYMBOLS = {"_edata", "_end", "__bss_start", "_init", "_fini"}


def exported(library):
    out = subprocess.run(["nm", "-DC", "--defined-only", library], check=True, capture_output=True,
                         text=True).stdout
    names = []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[2] not in LINKER_SYMBOLS:
            names.append(parts[2])
    return names


def declared(headers):
    """Functions the headers declare, and those marked GST_TENSOR_MEM_API."""
    every, api = set(), set()
    for path in headers:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"//[^\n]*", " ", text)
        for m in re.finditer(r"\b(gst_\w+)\s*\(", text):
            every.add(m.group(1))
        for m in re.finditer(r"G_DECLARE_\w+_TYPE\s*\(\s*\w+\s*,\s*(\w+)", text):
            every.add(m.group(1) + "_get_type")
            api.add(m.group(1) + "_get_type")
        for m in re.finditer(r"GST_TENSOR_MEM_API\s+[^;{(]*?\b(\w+)\s*\(", text):
            api.add(m.group(1))
    return every, api


def base_name(symbol):
    """A demangled function symbol without its parameters and return type."""
    name = symbol.split("(", 1)[0]
    return name.rsplit(" ", 1)[-1]


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    library, headers = sys.argv[1], sys.argv[2:]
    symbols = exported(library)
    if not symbols:
        print(f"no exported symbols read from {library}")
        return 1
    every, api = declared(headers)
    stray = []
    exported_names = set()
    for symbol in symbols:
        name = base_name(symbol)
        exported_names.add(name)
        if name in every:
            continue
        stray.append(symbol)
    missing = sorted(api - exported_names)
    print(f"{len(symbols)} exports of {library}: {len(symbols) - len(stray)} declared in the "
          f"{len(headers)} installed headers, {len(stray)} not")
    for symbol in stray:
        print(f"FAIL: exported, declared in no installed header: {symbol}")
    for name in missing:
        print(f"FAIL: declared GST_TENSOR_MEM_API in an installed header, not exported: {name}")
    return 1 if stray or missing else 0


if __name__ == "__main__":
    sys.exit(main())
