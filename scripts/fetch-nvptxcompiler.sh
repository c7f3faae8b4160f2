#!/usr/bin/env bash
# The nvPTXCompiler static library (PTX Compiler API) for in-process PTX
# assembly (src/gpu/ptx_compiler.c), where the CUDA toolkit has none, as a
# toolkit installed from pip wheels does: puts include/nvPTXCompiler.h,
# lib/libnvptxcompiler_static.a and VERSION under .deps/nvptxcompiler/,
# where CMake looks (SPF_NVPTXCOMPILER_ROOT). The version is the toolkit's
# own (ptxas --version), so both assemblers are the same compiler.
#
# Sources, the first that serves:
#   1. the toolkit itself (lib64/libnvptxcompiler_static.a): nothing to do;
#   2. .deps/nvptxcompiler/ already holding that version: nothing to do;
#   3. a wheel nvidia_nvptxcompiler-<version>-*.whl already in .deps/ (how
#      a machine without network gets it: carry the 22 MB wheel there);
#   4. PyPI: pip download nvidia-nvptxcompiler==<version> into .deps/.
# Never fails a build: without the library the JIT runs the ptxas program,
# so this exits 0 with a note when it cannot help (no toolkit, no network).
# Usage: scripts/fetch-nvptxcompiler.sh [--quiet]
set -uo pipefail
cd "$(dirname "$0")/.."
quiet=0
[ "${1:-}" = "--quiet" ] && quiet=1
note() { [ "$quiet" = 1 ] || echo "fetch-nvptxcompiler: $*" >&2; }

ptxas=""
for cand in "${SPF_PTXAS:-}" "${CUDA_HOME:-/nonexistent}/bin/ptxas" /usr/local/cuda/bin/ptxas \
  "$(command -v ptxas 2>/dev/null)"; do
  if [ -n "$cand" ] && [ -x "$cand" ]; then ptxas=$cand; break; fi
done
if [ -z "$ptxas" ]; then
  note "no CUDA toolkit (ptxas) found: nothing to fetch"
  exit 0
fi
toolkit=$(cd "$(dirname "$ptxas")/.." && pwd)
for lib in "$toolkit"/lib64/libnvptxcompiler_static.a "$toolkit"/lib/libnvptxcompiler_static.a \
  "$toolkit"/targets/*/lib/libnvptxcompiler_static.a; do
  if [ -f "$lib" ]; then
    note "the toolkit has it: $lib"
    exit 0
  fi
done

# "Cuda compilation tools, release 13.0, V13.0.88" -> 13.0.88
version=$("$ptxas" --version | sed -n 's/.*, V\([0-9][0-9.]*\).*/\1/p' | head -n 1)
if [ -z "$version" ]; then
  note "cannot read a version from $ptxas --version"
  exit 0
fi
dest=.deps/nvptxcompiler
if [ -f "$dest/lib/libnvptxcompiler_static.a" ] && [ -f "$dest/include/nvPTXCompiler.h" ] &&
  [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$version" ]; then
  note "$dest holds $version already"
  exit 0
fi

mkdir -p .deps
wheel=$(ls .deps/nvidia_nvptxcompiler-"$version"-*.whl 2>/dev/null | head -n 1)
if [ -z "$wheel" ]; then
  python=$(command -v python3 || command -v python || true)
  if [ -z "$python" ]; then
    note "no python to run pip: the JIT will use ptxas"
    exit 0
  fi
  note "pip download nvidia-nvptxcompiler==$version"
  if ! "$python" -m pip download --no-deps --only-binary=:all: --retries 1 --timeout 20 \
    -d .deps "nvidia-nvptxcompiler==$version" >.deps/pip.log 2>&1; then
    note "pip download failed (.deps/pip.log): the JIT will use ptxas"
    exit 0
  fi
  wheel=$(ls .deps/nvidia_nvptxcompiler-"$version"-*.whl 2>/dev/null | head -n 1)
  [ -n "$wheel" ] || { note "pip saved no wheel for $version"; exit 0; }
fi

# A wheel is a zip; python's zipfile is there wherever pip is.
python=$(command -v python3 || command -v python || true)
[ -n "$python" ] || { note "no python to unpack $wheel"; exit 0; }
rm -rf "$dest.tmp"
if ! "$python" - "$wheel" "$dest.tmp" <<'EOF'
import os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
wanted = {"nvPTXCompiler.h": "include", "libnvptxcompiler_static.a": "lib"}
found = set()
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        base = os.path.basename(info.filename)
        if base in wanted:
            os.makedirs(os.path.join(dest, wanted[base]), exist_ok=True)
            with z.open(info) as src, open(os.path.join(dest, wanted[base], base), "wb") as out:
                while True:
                    chunk = src.read(1 << 20)
                    if not chunk:
                        break
                    out.write(chunk)
            found.add(base)
missing = set(wanted) - found
if missing:
    sys.exit("%s has no %s" % (wheel, ", ".join(sorted(missing))))
EOF
then
  rm -rf "$dest.tmp"
  note "cannot unpack $wheel"
  exit 0
fi
echo "$version" >"$dest.tmp/VERSION"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
note "nvPTXCompiler $version in $dest (from $wheel)"
