#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""No two units of gst/tensormem/ include each other, directly or through
others: the unit include graph must have no cycle. A unit is a name's
.h, .hpp and .cpp together with its -private.h/.cpp (gsttensordmabuf.h,
gsttensordmabuf.hpp, gsttensordmabuf.cpp and gsttensordmabuf-private.h are
one unit), so a C++ companion header or a private header cannot hide a
cycle."""
import glob
import os
import re
import sys

folder = sys.argv[1]
edges = {}


def unit_of(name):
    return name[:-len('-private')] if name.endswith('-private') else name


for path in sorted(glob.glob(os.path.join(folder, '*.cpp')) + glob.glob(os.path.join(folder, '*.h')) +
                   glob.glob(os.path.join(folder, '*.hpp'))):
    unit = unit_of(os.path.splitext(os.path.basename(path))[0])
    with open(path, encoding='utf-8') as f:
        included = [unit_of(i) for i in re.findall(r'#include [<"](?:gst/tensormem/)?([\w-]+)\.h(?:pp)?[>"]', f.read())]
    edges.setdefault(unit, set()).update(i for i in included if i != unit)

state = {}
cycles = []


def visit(unit, trail):
    state[unit] = 'open'
    for nxt in sorted(edges.get(unit, ())):
        if nxt not in edges:
            continue
        if state.get(nxt) == 'open':
            cycles.append(trail[trail.index(nxt):] + [nxt] if nxt in trail else [unit, nxt])
        elif nxt not in state:
            visit(nxt, trail + [nxt])
    state[unit] = 'done'


for unit in sorted(edges):
    if unit not in state:
        visit(unit, [unit])
for cycle in cycles:
    print('include cycle: ' + ' -> '.join(cycle))
print(f'{len(edges)} units, {len(cycles)} cycles')
sys.exit(1 if cycles or len(edges) < 5 else 0)
