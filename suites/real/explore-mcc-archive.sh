#!/bin/sh
# Explores the net of one Model Checking Contest instance archive (NAME.tgz holding
# NAME/model.pnml and the contest's formula files) with pnexplore: unpacks it into the run's own
# folder and explores model.pnml with the options given after the archive.
#   explore-mcc-archive.sh ARCHIVE.tgz [pnexplore explore options...]
set -e
archive=$1
shift
tar -xzf "$archive"
set -- */model.pnml "$@"
[ -f "$1" ] || { echo "explore-mcc-archive.sh: $archive holds no NAME/model.pnml" >&2; exit 2; }
exec "$(dirname "$0")/../../build/bin/pnexplore" explore "$@"
