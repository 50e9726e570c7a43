#!/usr/bin/env python3
"""Makes the private GStreamer plugin directory the tests and examples run
against: symbolic links to the named plugins of the system's plugin
directory, nothing else.

Usage: gst-test-plugins.py SYSTEM_PLUGIN_DIR OUT_DIR NAME...

Without it every test process scans (and, with GST_REGISTRY_FORK=no, loads)
whatever plugins the machine has installed, so the results, the run time and
what leak checkers see depend on the machine. A plugin that is not installed
is reported and left out; the tests that need it say so when they run.
"""
import os
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    system_dir, out_dir, names = argv[0], argv[1], argv[2:]
    os.makedirs(out_dir, exist_ok=True)
    for entry in os.listdir(out_dir):
        os.unlink(os.path.join(out_dir, entry))
    missing = []
    for name in names:
        file_name = "libgst%s.so" % name
        source = os.path.join(system_dir, file_name)
        if os.path.exists(source):
            os.symlink(source, os.path.join(out_dir, file_name))
        else:
            missing.append(name)
    if missing:
        print("not installed in %s: %s" % (system_dir, " ".join(missing)))
    else:
        print("%d plugins" % len(names))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
