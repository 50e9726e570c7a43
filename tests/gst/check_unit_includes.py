#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""No two units of gst/tensormem/ include each other, directly or through
others: the unit include graph must have no cycle. A unit is a name's
.h, .hpp and .cpp together with its -private.h/.cpp (gsttensordmabuf.h,
gsttensordmabuf.hpp, gsttensordmabuf.cpp and gsttensordmabuf-private.h are
one unit), so a C++ companion header or a private header cannot hide a
cycle.

Each unit also has a level (LEVELS below, the layers docs/architecture.md
describes): an include from a unit to one of a higher level climbs. At most
five climbs are allowed; each is printed. A unit without a level fails the
check until it is given one."""
import glob
import os
import re
import sys

folder = sys.argv[1]
edges = {}

# 0: what everything reads; 1: the memory model's objects and metas;
# 2: the backend table, the base memory and what every family shares;
# 3: the storage families; 4: what elements run on the families;
# 5: the umbrella headers, for applications, and the elements' registration.
LEVELS = {
    0: ['tensormem-prelude', 'gsttensorstorage', 'gsttensorformat', 'gsttensorcaps', 'gsttensorcancel',
        'gsttensorcontextshare', 'gsttensorsidecache', 'gsttensormethodtable', 'gsttensormodelinfo',
        'gsttensorbatchmeta', 'gsttensormemresizemeta'],
    1: ['gsttensormemallocator', 'gsttensorreadcompletion', 'gsttensorcudameta', 'gsttensorglcontext',
        'gsttensord3d11device', 'gsttensorfencemeta', 'gsttensorglsync', 'gsttensoranalytics', 'gsttensorwritable'],
    2: ['gsttensorbackend', 'gsttensormapping', 'gsttensorbasememory', 'gsttensormemvalidate', 'gsttensorbufferpool'],
    3: ['gsttensormemory', 'gsttensordmabuf', 'gsttensorpbo', 'gsttensord3d11', 'gsttensorframecopy', 'gsttensorgstgl'],
    4: ['gsttensoruploader', 'gsttensordownloader', 'gsttensorconverter', 'gsttensorbatchstore', 'gsttensorbatchassembler', 'gsttensorbatchaggregator',
        'gsttensordlpack'],
    5: ['gsttensormem', 'tensormem', 'gsttensorelements'],
}
level_of = {unit: level for level, units in LEVELS.items() for unit in units}


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
unleveled = sorted(unit for unit in edges if unit not in level_of)
for unit in unleveled:
    print(f'unit {unit} has no level: give it one in LEVELS')
climbs = [(unit, nxt) for unit in sorted(edges) for nxt in sorted(edges[unit])
          if nxt in level_of and unit in level_of and level_of[nxt] > level_of[unit]]
for unit, nxt in climbs:
    print(f'climb: {unit} (level {level_of[unit]}) includes {nxt} (level {level_of[nxt]})')
print(f'{len(edges)} units, {len(cycles)} cycles, {len(climbs)} climbs')
sys.exit(1 if cycles or unleveled or len(climbs) > 5 or len(edges) < 5 else 0)
