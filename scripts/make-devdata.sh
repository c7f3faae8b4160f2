#!/usr/bin/env bash
# Build devdata/: the subset of the extracted data/ that travels with the
# working tree to the GPU machine (the device tree limit is 64 MiB in all;
# data/ is ~100 MiB). scripts/device-check.sh uses devdata/ as data/ there.
#
# Holds: the DLMC Transformer and ResNet-50 magnitude-pruned weights at the
# sparsities in $DEVDATA_SPARSITIES (default "0.9 0.95": the dlmc set of
# spforge-bench and every DLMC file the GPU tests read), the DLMC lists
# (rn50_batchsizes.txt gives N), and a few small Matrix Market graphs for the
# graphs set. About 25 MiB with the defaults. devdata/ is kept out of git
# (.git/info/exclude) so it never gets committed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$root/data
dest=$root/devdata
sparsities=${DEVDATA_SPARSITIES:-0.9 0.95}
# Single files the CPU tests read besides those (test_constraints).
files="dlmc/rn50/random_pruning/0.9/bottleneck_1_block_group2_1_1.smtx"
graphs="cerespmm/176bit.mtx cerespmm/G59.mtx cerespmm/cora.mtx cerespmm/citeseer.mtx
        cerespmm/fv2.mtx lagraph/cryg2500.mtx"

if [ ! -d "$src/dlmc" ]; then
  echo "make-devdata: $src/dlmc not found; run scripts/extract-data.sh first" >&2
  exit 1
fi
cd "$root"
if ! git check-ignore -q devdata/ 2>/dev/null; then
  exclude=$(git rev-parse --git-path info/exclude)
  mkdir -p "$(dirname "$exclude")"
  echo "/devdata/" >>"$exclude"
fi

rm -rf "$dest"
mkdir -p "$dest/dlmc"
cp "$src/dlmc/rn50_batchsizes.txt" "$dest/dlmc/"
for model in rn50 transformer; do
  for s in $sparsities; do
    from=$src/dlmc/$model/magnitude_pruning/$s
    if [ -d "$from" ]; then
      mkdir -p "$dest/dlmc/$model/magnitude_pruning"
      cp -r "$from" "$dest/dlmc/$model/magnitude_pruning/$s"
    else
      echo "make-devdata: no $from (skipped)" >&2
    fi
  done
done
for g in $graphs $files; do
  if [ -f "$src/$g" ]; then
    mkdir -p "$dest/$(dirname "$g")"
    cp "$src/$g" "$dest/$g"
  fi
done
du -sh "$dest"
