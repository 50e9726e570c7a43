#!/usr/bin/env bash
# The Debian 13 (trixie) root: scripts/debian-root.sh trixie.
#   scripts/debian13.sh setup | run CMD...
exec "$(dirname "$0")/debian-root.sh" trixie "$@"
