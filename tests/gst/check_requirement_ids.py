#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every requirement ID the code and tests cite (PBO-MAP-02, HAZ-07, ...) has
a line in docs/requirements.md, so a reader can look it up in the repository."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
pattern = re.compile(r'\b(?:SHR|PBO|ABI|CUDA|HAZ|D3D)(?:-[A-Z0-9]{2,8})?-[0-9]{2}\b')
cited = {}
for folder in ('lib', 'gst', 'tests', 'examples'):
    for path in (root / folder).rglob('*'):
        if path.suffix in ('.cpp', '.hpp', '.h', '.c') and path.is_file():
            for rid in pattern.findall(path.read_text(encoding='utf-8', errors='replace')):
                cited.setdefault(rid, str(path.relative_to(root)))
doc = (root / 'docs' / 'requirements.md').read_text(encoding='utf-8')
listed = set(re.findall(r'^\| ((?:SHR|PBO|ABI|CUDA|HAZ|D3D)(?:-[A-Z0-9]{2,8})?-[0-9]{2}) \|', doc, re.M))
missing = sorted(set(cited) - listed)
for rid in missing:
    print(f'{rid} (cited in {cited[rid]}) has no line in docs/requirements.md')
print(f'{len(cited)} IDs cited, {len(missing)} missing')
sys.exit(1 if missing or not cited else 0)
