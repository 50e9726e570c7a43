#!/usr/bin/env python3
"""Every requirement ID the repository cites is defined in docs/requirements.md,
and docs/requirements.md defines no ID that nothing cites.

Usage: check-requirements.py [SOURCE_ROOT] [--list]

A citation is found in any text file under lib/ gst/ tests/ examples/ docs/
scripts/, in one of these forms:

  * AREA-TOPIC-NN or HAZ-NN (two digits), e.g. in a comment;
  * a range AREA-TOPIC-NN..MM, which cites every number from NN to MM;
  * a pair AREA-TOPIC-NN/MM, which cites both numbers;
  * a test name AREA_TOPIC_NN_what_it_checks (or AREA_TOPIC_NN_MM_..., a range),
    for the areas below only, because plain upper-case macros such as a
    ROUND_UP_32 have the same shape.

Not citations, on purpose:

  * NOT_IDS below: words that have the shape of an ID but are not one
    (UTF-16 is a text encoding);
  * a wildcard such as AREA-TOPIC-* (it names a group, not an ID);
  * docs/requirements.md itself (it defines, it does not cite) and this script.

A definition is a line of docs/requirements.md that starts a table row or a list
item with the ID: "| ID |" or "- ID" / "* ID" (the ID may be in backticks or bold).

Every test file (a name starting with "test_") that a definition row names in
its last cell must cite that ID itself: a row cannot claim a test that does
not say it covers the requirement. The name must pick exactly one file of
the repository: a bare name that two directories share (tests/lib/dmabuf/
and tests/gst/ both have a test_dmabuf.cpp) must be written as a path, so
that one file's citation cannot vouch for the other.

Exit 0 when both sets are equal and no row overstates, 1 naming every
difference, 2 on a usage error.
--list prints the cited IDs (one a line, sorted) and exits 0.
"""

import os
import re
import sys

SCANNED_DIRS = ("lib", "gst", "tests", "examples", "docs", "scripts")
REQUIREMENTS_DOC = os.path.join("docs", "requirements.md")
THIS_SCRIPT = os.path.join("scripts", "check-requirements.py")

# The areas of the seed behaviour spec. Used only for the underscore (test name)
# form; a hyphenated ID of an unknown area is still reported, not ignored.
AREAS = ("SHR", "PBO", "ABI", "D3D", "CUDA", "HAZ")

# Shape of an ID but not one. Keep this list short and say why for each entry.
NOT_IDS = {
    "UTF-16",  # text encoding (Windows wide strings), not a requirement
}

# AREA(-TOPIC)*-NN, optionally followed by ..MM or /MM.
HYPHEN_RE = re.compile(
    r"(?<![A-Za-z0-9_-])([A-Z][A-Z0-9]+(?:-[A-Z0-9]+)*)-([0-9]{2})"
    r"(?:(\.\.|/)([0-9]{2}))?(?![A-Za-z0-9])"
)
# AREA_TOPIC_NN(_MM)? at the start of a test name; the next character is not an
# upper-case letter or digit (so a macro's tail is not taken for one).
UNDERSCORE_RE = re.compile(
    r"(?<![A-Za-z0-9_])((?:%s)(?:_[A-Z][A-Z0-9]*)*)_([0-9]{2})(?:_([0-9]{2}))?(?![A-Z0-9])"
    % "|".join(AREAS)
)
# A definition line in docs/requirements.md.
DEFINITION_RE = re.compile(
    r"^\s*(?:\|\s*|[-*]\s+)[`*]*([A-Z][A-Z0-9]+(?:-[A-Z0-9]+)*-[0-9]{2})[`*]*(?=[\s|:])"
)


def expand(stem, first, last=None):
    """IDs stem-first..stem-last (both two-digit strings)."""
    if last is None:
        return ["%s-%s" % (stem, first)]
    lo, hi = int(first), int(last)
    if hi < lo:
        raise ValueError("%s-%s..%s is a backwards range" % (stem, first, last))
    return ["%s-%02d" % (stem, n) for n in range(lo, hi + 1)]


def ids_in_text(text):
    """Cited IDs in one text, as a set. Raises ValueError on a backwards range."""
    found = set()
    for m in HYPHEN_RE.finditer(text):
        stem, first, sep, second = m.groups()
        if sep == "/":
            ids = expand(stem, first) + expand(stem, second)
        else:
            ids = expand(stem, first, second)
        found.update(i for i in ids if i not in NOT_IDS)
    for m in UNDERSCORE_RE.finditer(text):
        stem, first, second = m.groups()
        found.update(expand(stem.replace("_", "-"), first, second))
    return found


def cited_ids(root):
    """{ID: sorted list of files citing it} over the scanned directories."""
    skip = {os.path.normpath(REQUIREMENTS_DOC), os.path.normpath(THIS_SCRIPT)}
    cited = {}
    for top in SCANNED_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                rel = os.path.normpath(os.path.relpath(path, root))
                if rel in skip:
                    continue
                try:
                    with open(path, encoding="utf-8") as f:
                        text = f.read()
                except (UnicodeDecodeError, OSError):
                    continue  # binary or unreadable: cites nothing
                try:
                    ids = ids_in_text(text)
                except ValueError as e:
                    sys.exit("check-requirements: %s: %s" % (rel, e))
                for i in ids:
                    cited.setdefault(i, []).append(rel)
    return cited


def defined_ids(doc_path):
    """{ID: line number} of the definitions in docs/requirements.md."""
    defined = {}
    duplicates = []
    with open(doc_path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            m = DEFINITION_RE.match(line)
            if not m:
                continue
            if m.group(1) in defined:
                duplicates.append("%s (lines %d and %d)" % (m.group(1), defined[m.group(1)], lineno))
            defined.setdefault(m.group(1), lineno)
    return defined, duplicates


def listed_tests(doc_path):
    """{ID: [test file names]} from the last cell of each definition row: the
    files a row names whose name starts with "test_" (the tests it claims)."""
    listed = {}
    with open(doc_path, encoding="utf-8") as f:
        for line in f:
            m = DEFINITION_RE.match(line)
            if not m or not line.lstrip().startswith("|"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            names = re.findall(r"[A-Za-z0-9_./-]+", cells[-1]) if len(cells) > 1 else []
            tests = [n for n in names if os.path.basename(n).startswith("test_")]
            if tests:
                listed[m.group(1)] = tests
    return listed


def test_files(root):
    """Paths (relative to root, "/"-separated) of every file under the scanned
    directories whose name starts with "test_"."""
    found = []
    for top in SCANNED_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.startswith("test_"):
                    found.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
    return found


def overstated(listed, cited, files):
    """(ID, name, why) for each test file a row names that does not cite the
    ID, that no file matches, or that several files match. A name matches a
    file whose path is the name or ends with "/" + name."""
    citing = {(i, rel.replace(os.sep, "/")) for i, rels in cited.items() for rel in rels}
    out = []
    for i, tests in sorted(listed.items()):
        for t in tests:
            matches = [f for f in files if f == t or f.endswith("/" + t)]
            if not matches:
                out.append((i, t, "which does not exist"))
            elif len(matches) > 1:
                out.append((i, t, "which names %d files (%s): give the path" % (len(matches), ", ".join(matches))))
            elif (i, matches[0]) not in citing:
                out.append((i, t, "which never cites it"))
    return out


def main(argv):
    args = [a for a in argv[1:] if a != "--list"]
    if len(args) > 1:
        print(__doc__, file=sys.stderr)
        return 2
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    cited = cited_ids(root)
    if "--list" in argv:
        for i in sorted(cited):
            print(i)
        return 0

    doc_path = os.path.join(root, REQUIREMENTS_DOC)
    if not os.path.isfile(doc_path):
        print("check-requirements: %s is missing" % REQUIREMENTS_DOC)
        return 1
    defined, duplicates = defined_ids(doc_path)

    undefined = sorted(set(cited) - set(defined))
    uncited = sorted(set(defined) - set(cited))
    for i in undefined:
        print("check-requirements: %s is cited (%s) but not defined in %s"
              % (i, ", ".join(cited[i]), REQUIREMENTS_DOC))
    for i in uncited:
        print("check-requirements: %s is defined in %s (line %d) but nothing cites it"
              % (i, REQUIREMENTS_DOC, defined[i]))
    for d in duplicates:
        print("check-requirements: %s is defined twice in %s" % (d, REQUIREMENTS_DOC))
    # Traceability that cannot overstate: a test file a row names must cite
    # the row's ID (in a comment or a test name).
    claims = overstated(listed_tests(doc_path), cited, test_files(root))
    for i, t, why in claims:
        print("check-requirements: %s lists %s, %s" % (i, t, why))
    if undefined or uncited or duplicates or claims:
        return 1
    print("check-requirements: %d requirement IDs cited, all defined in %s"
          % (len(cited), REQUIREMENTS_DOC))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
