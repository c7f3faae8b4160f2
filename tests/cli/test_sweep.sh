#!/usr/bin/env bash
# `spforge stat` and `spforge run --n 64` on the real dev data set through
# scripts/sweep-data.sh (every file: the whole sweep takes well under a
# minute on 2 cores). Skips (77) with a visible message when data/ is absent.
set -u
data=${SPF_DATA_DIR:?}
if [ ! -d "$data" ] || [ -z "$(find "$data" -name '*.smtx' -o -name '*.mtx' | head -1)" ]; then
  echo "SKIP: no extracted data at $data (run scripts/extract-data.sh with ../shared beside the project)"
  exit 77
fi
exec bash "${SPF_SOURCE_DIR:?}/scripts/sweep-data.sh"
