#!/usr/bin/env bash
# spforge as a user meets it (issue 12), from the current build:
#   1. cmake --install into a staging prefix, then the tree moved elsewhere
#      (every installed path must be relative to the prefix);
#   2. the installed tree: one header, the libraries (soname
#      libspforge.so.<major>, no rpath), the CMake and pkg-config packages,
#      the CLI;
#   3. the shared library exports exactly the header's SPF_API functions,
#      all named spf_* (no CUDA runtime, no kernel host code);
#   4. the header alone compiles in C11 and C++ (and links: extern "C"), and
#      the README's C snippet compiles against it;
#   5. examples/c built with find_package(spforge), shared and static, and
#      run, against the installed tree and against the build folder; the
#      programs find libspforge.so.0 through the RPATH CMake gives them
#      (LD_LIBRARY_PATH is unset for every run here);
#   6. examples/c/spmm.c built with pkg-config, shared (with -Wl,-rpath) and
#      static (pkg-config --static), and run;
#   7. spforge built as a subproject (add_subdirectory, and FetchContent
#      configured) of tests/install/consumer, its program run.
# Files are left in $SPF_BUILD_DIR/install-test for a look after a failure
# (removed at the next run). Environment (tests/CMakeLists.txt): SPF_SOURCE_DIR,
# SPF_BUILD_DIR, SPF_CMAKE, SPF_CC, SPF_GENERATOR, SPF_VERSION,
# SPF_INSTALL_{LIBDIR,INCLUDEDIR,BINDIR}; SPF_CXX (default c++) for the C++ check.
set -euo pipefail
src=${SPF_SOURCE_DIR:?}
build=${SPF_BUILD_DIR:?}
cmake=${SPF_CMAKE:-cmake}
cc=${SPF_CC:-cc}
version=${SPF_VERSION:?}
major=${version%%.*}
jobs=$(nproc 2>/dev/null || echo 2)
unset LD_LIBRARY_PATH
for dir in "${SPF_INSTALL_LIBDIR:?}" "${SPF_INSTALL_INCLUDEDIR:?}" "${SPF_INSTALL_BINDIR:?}"; do
  case $dir in /*) echo "test_install: skipped: absolute install dir $dir (the tree is not relocatable)"
                   exit 77 ;; esac
done

work=$build/install-test
rm -rf "$work"
mkdir -p "$work"
cd "$work"
fail() { echo "test_install: FAIL: $*" >&2; exit 1; }
step() { echo "--- $*"; }
# A configure or build that fails shows its log.
logged() {
  local log=$1; shift
  "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "$* (log: $log)"; }
}

# ---- 1. install, move
step "cmake --install $build --prefix $work/stage, moved to $work/prefix"
logged install.log "$cmake" --install "$build" --prefix "$work/stage"
mv "$work/stage" "$work/prefix"
prefix=$work/prefix
lib=$prefix/$SPF_INSTALL_LIBDIR
inc=$prefix/$SPF_INSTALL_INCLUDEDIR
so=$lib/libspforge.so.$version

# ---- 2. the tree
step "the installed tree"
for f in "$inc/spforge.h" "$so" "$lib/libspforge.so.$major" "$lib/libspforge.so" "$lib/libspforge.a" \
    "$lib/cmake/spforge/spforgeConfig.cmake" "$lib/cmake/spforge/spforgeConfigVersion.cmake" \
    "$lib/cmake/spforge/spforgeTargets.cmake" "$lib/cmake/spforge/spforgeStaticTargets.cmake" \
    "$lib/pkgconfig/spforge.pc" "$prefix/$SPF_INSTALL_BINDIR/spforge"; do
  [ -e "$f" ] || fail "not installed: $f"
done
[ "$(readlink "$lib/libspforge.so")" = "libspforge.so.$major" ] || fail "libspforge.so -> $(readlink "$lib/libspforge.so")"
[ "$(readlink "$lib/libspforge.so.$major")" = "libspforge.so.$version" ] || fail "libspforge.so.$major -> $(readlink "$lib/libspforge.so.$major")"
headers=$(find "$prefix" -name '*.h' -o -name '*.cuh' | sort)
[ "$headers" = "$inc/spforge.h" ] || fail "headers installed besides spforge.h: $headers"
# (Outputs are captured before grep reads them: grep -q ending a pipeline
# early would make pipefail report the writer's SIGPIPE.)
dynamic=$(readelf -d "$so")
soname=$(sed -n 's/.*Library soname: \[\(.*\)\]/\1/p' <<<"$dynamic")
[ "$soname" = "libspforge.so.$major" ] || fail "soname '$soname', expected libspforge.so.$major"
grep -E 'R(UN)?PATH' <<<"$dynamic" && fail "the installed library has a run path"
grep -E 'NEEDED.*libcudart' <<<"$dynamic" && fail "the CUDA runtime should be linked statically"
grep -rq "$build" "$lib/cmake/spforge" "$lib/pkgconfig" && fail "the packages name the build tree"
grep -rq "$work/stage" "$lib/cmake/spforge" "$lib/pkgconfig" && fail "the packages name the install prefix"
"$prefix/$SPF_INSTALL_BINDIR/spforge" --version >/dev/null || fail "the installed CLI does not run"
# the PTX compiler's module, beside the library that loads it, where the
# build has one: its table its one export
if [ -e "$build/libspforge_ptxc.so" ]; then
  [ -e "$lib/libspforge_ptxc.so" ] || fail "not installed: $lib/libspforge_ptxc.so"
  module_exports=$(nm -D --defined-only "$lib/libspforge_ptxc.so" | awk '{ print $NF }')
  [ "$module_exports" = spf_ptx_compiler_api ] ||
    fail "libspforge_ptxc.so exports $(wc -w <<<"$module_exports") symbols, not spf_ptx_compiler_api alone"
fi

# ---- 3. exported symbols
step "exported symbols: the header's SPF_API functions, spf_* only"
nm -D --defined-only "$so" | awk '{ print $NF }' | sort -u >exported.txt
awk '/^SPF_API/ { if (match($0, /[A-Za-z_][A-Za-z0-9_]*\(/)) print substr($0, RSTART, RLENGTH - 1) }' \
  "$inc/spforge.h" | sort -u >declared.txt
[ -s declared.txt ] || fail "no SPF_API function found in $inc/spforge.h"
if grep -v '^spf_' exported.txt >not_spf.txt; then
  fail "libspforge.so exports $(wc -l <not_spf.txt) symbols not named spf_*, e.g. $(head -5 not_spf.txt | tr '\n' ' ')"
fi
comm -13 declared.txt exported.txt >undeclared.txt
[ -s undeclared.txt ] && fail "exported but not in spforge.h: $(tr '\n' ' ' <undeclared.txt)"
comm -23 declared.txt exported.txt >missing.txt
[ -s missing.txt ] && fail "in spforge.h but not exported: $(tr '\n' ' ' <missing.txt)"
echo "$(wc -l <exported.txt) symbols"

# ---- 4. the header alone, in C and C++; the README's snippet
step "spforge.h alone: C11, C++"
cat >header.c <<'C'
#include <spforge.h>
int main(void) { return spf_version()[0] == '\0'; }
C
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -I"$inc" header.c -o header_c -L"$lib" -lspforge \
  -Wl,-rpath,"$lib" || fail "spforge.h alone does not compile or link in C11"
./header_c || fail "a C program calling spf_version fails"
cxx=${SPF_CXX:-$(command -v c++ || true)}
if [ -n "$cxx" ]; then
  cp header.c header.cpp
  "$cxx" -std=c++11 -Wall -Wextra -Wpedantic -Werror -I"$inc" header.cpp -o header_cxx -L"$lib" \
    -lspforge -Wl,-rpath,"$lib" || fail "spforge.h does not compile or link in C++"
  ./header_cxx || fail "a C++ program calling spf_version fails"
else
  echo "SKIPPED: C++ check (no c++ compiler)"
fi
step "README.md's C snippet"
awk '/^```c$/ { on = 1; next } /^```/ { if (on) exit } on' "$src/README.md" >readme.c
[ -s readme.c ] || fail "README.md has no \`\`\`c block"
"$cc" -std=c11 -Wall -Wextra -Werror -I"$inc" -c readme.c -o readme.o || fail "README.md's C snippet does not compile"

# ---- 5. find_package
run_example() { # name, program: runs it, checks its report
  local out
  out=$("$2") || { echo "$out"; fail "$1: $2 failed"; }
  # shellcheck disable=SC2001 # a prefix on every line
  sed "s/^/    $1: /" <<<"$out"
  grep -q 'relative error: .*: ok' <<<"$out" || fail "$1: no error report"
}
gen=()
[ -n "${SPF_GENERATOR:-}" ] && gen=(-G "$SPF_GENERATOR")
for kind in shared static; do
  step "examples/c with find_package(spforge), $kind"
  static=OFF; [ $kind = static ] && static=ON
  logged find-$kind.log "$cmake" -S "$src/examples/c" -B "find-$kind" "${gen[@]}" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" -DCMAKE_PREFIX_PATH="$prefix" \
    -DSPMM_STATIC=$static
  logged find-$kind-build.log "$cmake" --build "find-$kind" -j "$jobs"
  run_example "find_package $kind" "find-$kind/spmm"
done
for kind in shared static; do
  step "examples/c with find_package(spforge) from the build folder, $kind"
  static=OFF; [ $kind = static ] && static=ON
  logged tree-$kind.log "$cmake" -S "$src/examples/c" -B "tree-$kind" "${gen[@]}" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" \
    -Dspforge_DIR="$build" -DSPMM_STATIC=$static
  logged tree-$kind-build.log "$cmake" --build "tree-$kind" -j "$jobs"
  run_example "build tree $kind" "tree-$kind/spmm"
done
needs() { local dynamic; dynamic=$(readelf -d "$1"); grep -q "NEEDED.*\[$2" <<<"$dynamic"; }
needs find-static/spmm libspforge && fail "the static build needs libspforge.so"
needs find-shared/spmm "libspforge.so.$major]" || fail "the shared build does not need libspforge.so.$major"

# ---- 6. pkg-config
if command -v pkg-config >/dev/null; then
  export PKG_CONFIG_PATH=$lib/pkgconfig
  step "pkg-config: $(pkg-config --modversion spforge)"
  [ "$(pkg-config --modversion spforge)" = "$version" ] || fail "spforge.pc's version"
  libdir=$(pkg-config --variable=libdir spforge)
  [ "$(cd "$libdir" && pwd -P)" = "$(cd "$lib" && pwd -P)" ] || fail "spforge.pc's libdir $libdir is not $lib"
  # shellcheck disable=SC2046 # word splitting of pkg-config's flags is meant
  "$cc" -std=c11 -Wall -Wextra -Werror "$src/examples/c/spmm.c" -o spmm_pc \
    $(pkg-config --cflags --libs spforge) -Wl,-rpath,"$libdir" || fail "pkg-config shared build"
  run_example "pkg-config shared" ./spmm_pc
  # Static: the archive by name (GNU ld's -l:), then Libs.private.
  static_libs=$(pkg-config --static --libs spforge)
  read -ra static_libs <<<"${static_libs/-lspforge/-l:libspforge.a}"
  # shellcheck disable=SC2046
  "$cc" -std=c11 -Wall -Wextra -Werror "$src/examples/c/spmm.c" -o spmm_pc_static \
    $(pkg-config --cflags spforge) "${static_libs[@]}" || fail "pkg-config static build"
  needs spmm_pc_static libspforge && fail "the pkg-config static build needs libspforge.so"
  run_example "pkg-config static" ./spmm_pc_static
else
  echo "SKIPPED: pkg-config builds (no pkg-config)"
fi

# ---- 7. a subproject. CUDA off: the subproject's CMake is the same either
# way, while building the kernels again would take minutes of nvcc on the
# 2-core CI machine (CI's own build covers them).
step "spforge as a subproject: add_subdirectory (SPF_WITH_CUDA=OFF)"
logged sub.log "$cmake" -S "$src/tests/install/consumer" -B sub "${gen[@]}" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_BUILD_TYPE=Release -DSPFORGE_SOURCE_DIR="$src" -DSPF_WITH_CUDA=OFF
logged sub-build.log "$cmake" --build sub -j "$jobs"
run_example "add_subdirectory shared" sub/spmm
run_example "add_subdirectory static" sub/spmm_static
logged sub-install.log "$cmake" --install sub --prefix "$work/sub-prefix"
[ -z "$(find "$work/sub-prefix" -type f 2>/dev/null)" ] || fail "a subproject installed files: $(find "$work/sub-prefix" -type f | head -3)"
step "spforge as a subproject: FetchContent (configured only; the build is the one above)"
logged fetch.log "$cmake" -S "$src/tests/install/consumer" -B fetch "${gen[@]}" -DCMAKE_C_COMPILER="$cc" \
  -DSPFORGE_SOURCE_DIR="$src" -DSPF_WITH_CUDA=OFF -DCONSUMER_FETCHCONTENT=ON \
  -DFETCHCONTENT_SOURCE_DIR_SPFORGE="$src" -DFETCHCONTENT_FULLY_DISCONNECTED=ON

echo "test_install: ok"
