#!/bin/sh
# The compiler launcher of the sm_90a kernels (CMakeLists.txt): runs the
# compile command it is given, which asks ptxas for its report (-Xptxas=-v:
# registers, spills, and its notes on the wgmma it had to fence or
# serialize), keeps the whole report beside the object (OBJECT.ptxas.log,
# read by tests/build/test_sm90a_ptxas.sh) and passes on to the build's
# output only what is not ptxas's information: warnings and errors.
#   ptxas_log.sh COMPILER ARGUMENT...
obj=
prev=
for arg in "$@"; do
  [ "$prev" = -o ] && obj=$arg
  prev=$arg
done
if [ -z "$obj" ]; then
  exec "$@"
fi
log=$obj.ptxas.log
"$@" 2>"$log"
rc=$?
grep -v -e '^ptxas info' -e '^    [0-9]* bytes stack frame' "$log" >&2
exit $rc
