/* Files as a library trusted with other people's data must treat them.
 *
 * Reading: an input path may name a FIFO, a device or a folder. It is opened
 * non-blocking (so a FIFO with no writer cannot hang the caller), checked
 * with fstat to be a regular file, and only then switched back to blocking
 * reads. Anything else is a clear SPF_ERR_IO naming the path and its kind.
 *
 * Writing: every file the project produces replaces its target atomically.
 * The data goes to a temporary file created exclusively (O_CREAT | O_EXCL |
 * O_NOFOLLOW, so neither an existing file nor a planted symbolic link is
 * ever opened) in the destination folder under a name unique to the call
 * (process id, a process-wide counter and the clock: two threads writing
 * one path each get their own), is flushed and fsync'ed, then renamed over
 * the target; a failure at any step removes it. The folder is opened once
 * and the temporary file and the rename are relative to it, so the
 * temporary name stays short (".<up to 16 bytes of the name>.<16 hex>.tmp")
 * and a target path as long as the system allows keeps working. The rename
 * replaces a symbolic link at the target itself; it never writes through
 * one. A target that is a regular file keeps its permission bits (the
 * temporary file is never created wider) and, where the process may, its
 * owner; one that is a folder, FIFO, device or socket is refused before
 * anything is written (file_replace_begin, a caller's path; the _at form,
 * for a folder the library owns, gives its files exactly the mode asked
 * and replaces whatever stands at the name, or fails at the rename). */
#ifndef SPF_CORE_FILE_H
#define SPF_CORE_FILE_H

#include "spforge.h"

#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Open path read-only if it is a regular file; *size gets its size. The
 * descriptor is close-on-exec and blocking. */
spf_status file_open_regular(const char *path, int *fd, int64_t *size);

/* The same for the file name inside the folder dir_fd, for a caller that
 * has opened and checked the folder itself (the plan cache) and must not
 * be sent elsewhere by a path swapped after its check: name is opened
 * relative to dir_fd, a symbolic link at name is refused (O_NOFOLLOW), and
 * *st gets the file's status (owner, mode, size) for the caller's own
 * checks. path names the file in messages. */
spf_status file_open_regular_at(int dir_fd, const char *name, const char *path, int *fd,
                                struct stat *st);

/* The same as a binary stdio stream. */
spf_status file_open_read(const char *path, FILE **out, int64_t *size);

/* An atomic replacement in progress. */
typedef struct file_replace {
    FILE *file;        /* write the contents here                       */
    const char *path;  /* the target, borrowed, for messages            */
    int dir_fd;        /* the destination folder                        */
    char base[256 + 1];/* the target's name within it                   */
    char tmp[64];      /* the temporary file's name within it, or ""    */
} file_replace;

/* Create the temporary file for path with permission bits mode (less the
 * umask). On failure nothing is left behind and w holds nothing to free. */
spf_status file_replace_begin(file_replace *w, const char *path, mode_t mode);

/* The same for the file name inside the folder dir_fd (borrowed: w keeps a
 * duplicate), for a caller that has opened and checked the folder itself.
 * path names the target in messages. */
spf_status file_replace_begin_at(file_replace *w, int dir_fd, const char *name, const char *path,
                                 mode_t mode);

/* Flush, check the stream for write errors, fsync, close and rename over
 * the target. On any failure the temporary file is removed and the target
 * is untouched. w is finished either way. */
spf_status file_replace_commit(file_replace *w);

/* Give up: close and remove the temporary file. Accepts a finished w. */
void file_replace_abort(file_replace *w);

/* Whether name has the form of file_replace's temporary files (stale ones
 * of interrupted writes are removed by the plan cache). */
int file_replace_is_temp_name(const char *name);

#endif
