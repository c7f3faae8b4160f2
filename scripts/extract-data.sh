#!/usr/bin/env bash
# Extract the real matrices of ../shared/data into the ignored folder data/
# (never committed). Idempotent; prints a visible note and succeeds when
# ../shared is absent, so tests that need the data skip instead of failing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SPF_SHARED_DIR:-$root/../shared}
dest=$root/data
if [ ! -d "$shared/data" ]; then
  echo "NOTE: $shared/data not found; real-data tests will be skipped"
  exit 0
fi
mkdir -p "$dest"
for archive in dlmc-dev graphs-dev; do
  stamp=$dest/.$archive.extracted
  src=$shared/data/$archive.tar.xz
  if [ -f "$stamp" ] && [ "$stamp" -nt "$src" ]; then
    continue
  fi
  echo "extracting $archive.tar.xz into data/"
  tar -xJf "$src" -C "$dest"
  touch "$stamp"
done
cp "$shared/data/manifest.csv" "$dest/manifest.csv"
