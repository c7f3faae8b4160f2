/* What every fuzz target shares: a private folder for the files the readers
 * take by path, and writing one run's input there.
 *
 * The folder is made once per process (mkdtemp) under $SPF_FUZZ_TMP when
 * set (scripts/fuzz.sh points it at a folder it removes afterwards), else
 * /dev/shm when present (tmpfs: a run costs no disk I/O), else $TMPDIR or
 * /tmp, and removed with its files at exit. A harness that cannot make it
 * or write to it aborts: that is a broken fuzzing set-up, not a finding in
 * the code under test. */
#ifndef SPF_TESTS_FUZZ_INPUT_H
#define SPF_TESTS_FUZZ_INPUT_H

#include <stddef.h>

/* The read limit (spf_read_options.max_bytes) of the reader targets: far
 * below libFuzzer's -malloc_limit_mb, so a header declaring a shape that
 * needs more is refused by the library's limit, which is what gets fuzzed,
 * instead of tripping the fuzzer's own (a 59-byte .mtx of 10^8 empty rows
 * is legitimately 800 MB under the default 4 GiB limit). */
enum { FUZZ_READ_MAX_BYTES = 64 << 20 };

/* The process's private folder (made on first call). */
const char *fuzz_dir(void);

/* Write size bytes of data to <fuzz_dir>/<name>, replacing the last run's
 * file; returns the path (a static buffer, valid until the next call). */
const char *fuzz_write(const char *name, const void *data, size_t size);

#endif
