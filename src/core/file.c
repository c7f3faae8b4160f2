/* Regular-file opening and atomic replacement (the rules are in file.h). */
#define _POSIX_C_SOURCE 200809L

#include "core/file.h"

#include "core/alloc.h"
#include "core/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef O_NOFOLLOW
#define O_NOFOLLOW 0
#endif

static const char *kind_name(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a folder";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

/* Both openers: name relative to dir_fd, with extra open flags. */
static spf_status open_regular(int dir_fd, const char *name, const char *path, int flags, int *out,
                               struct stat *st)
{
    *out = -1;
    /* O_NONBLOCK: opening a FIFO with no writer returns at once instead of
     * waiting for one; fstat then refuses it before any read. */
    int fd = openat(dir_fd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | flags);
    if (fd < 0)
        return error_set(SPF_ERR_IO, path, "cannot open for reading: %s", strerror(errno));
    if (fstat(fd, st) != 0) {
        int err = errno;
        close(fd);
        return error_set(SPF_ERR_IO, path, "cannot stat: %s", strerror(err));
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        return error_set(SPF_ERR_IO, path, "is %s, expected a regular file",
                         kind_name(st->st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int err = errno;
        close(fd);
        return error_set(SPF_ERR_IO, path, "cannot set blocking reads: %s", strerror(err));
    }
    *out = fd;
    return SPF_OK;
}

spf_status file_open_regular(const char *path, int *out, int64_t *size)
{
    struct stat st;
    *size = 0;
    spf_status status = open_regular(AT_FDCWD, path, path, 0, out, &st);
    if (status == SPF_OK)
        *size = (int64_t)st.st_size;
    return status;
}

spf_status file_open_regular_at(int dir_fd, const char *name, const char *path, int *out,
                                struct stat *st)
{
    return open_regular(dir_fd, name, path, O_NOFOLLOW, out, st);
}

spf_status file_open_read(const char *path, FILE **out, int64_t *size)
{
    *out = NULL;
    int fd;
    spf_status status = file_open_regular(path, &fd, size);
    if (status != SPF_OK)
        return status;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int err = errno;
        close(fd);
        return error_set(err == ENOMEM ? SPF_ERR_OUT_OF_MEMORY : SPF_ERR_IO, path,
                         "cannot open a stream: %s", strerror(err));
    }
    *out = f;
    return SPF_OK;
}

/* ------------------------------------------------- atomic replacement */

static const char TEMP_SUFFIX[] = ".tmp";
enum { TEMP_PREFIX_MAX = 16, TEMP_HEX = 16 };

/* A name no other call of any thread or process picks: the pid, a counter
 * and the clock mixed (splitmix64), so a stale name left by a crash does
 * not collide with the next process's either; O_EXCL settles the rest. */
static uint64_t temp_token(void)
{
    static _Atomic uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)getpid() << 40 ^ atomic_fetch_add(&counter, 1) ^
                 (uint64_t)ts.tv_nsec << 20 ^ (uint64_t)ts.tv_sec;
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The target's last name into w->base. */
static spf_status set_base(file_replace *w, const char *base, const char *path)
{
    size_t base_len = strlen(base);
    if (base_len == 0 || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return error_set(SPF_ERR_INVALID_ARGUMENT, path, "names a folder, expected a file name");
    if (base_len >= sizeof w->base)
        return error_set(SPF_ERR_IO, path, "file name of %zu bytes is longer than the system "
                         "allows (%zu)", base_len, sizeof w->base - 1);
    memcpy(w->base, base, base_len + 1);
    return SPF_OK;
}

/* Split path into its folder (opened into w->dir_fd) and its last name. */
static spf_status open_folder(file_replace *w, const char *path)
{
    const char *slash = strrchr(path, '/');
    spf_status status = set_base(w, slash ? slash + 1 : path, path);
    if (status != SPF_OK)
        return status;
    if (!slash) {
        w->dir_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } else {
        size_t dir_len = slash == path ? 1 : (size_t)(slash - path);
        char *dir = mem_alloc(dir_len + 1);
        if (!dir)
            return error_set(SPF_ERR_OUT_OF_MEMORY, path, "folder name of %zu bytes", dir_len);
        memcpy(dir, path, dir_len);
        dir[dir_len] = '\0';
        w->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        mem_free(dir);
    }
    if (w->dir_fd < 0)
        return error_set(SPF_ERR_IO, path, "cannot create: cannot open its folder: %s", strerror(errno));
    return SPF_OK;
}

/* What the target already is: a regular file keeps its permission bits
 * and owner through the replacement (*keep set, *st its status); a
 * symbolic link is replaced itself; a folder, FIFO, device or socket is
 * refused before anything is written (a rename over it would replace a
 * pipe another program reads, or fail late). */
static spf_status target_check(file_replace *w, int *keep, struct stat *st)
{
    *keep = 0;
    if (fstatat(w->dir_fd, w->base, st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT)
            return SPF_OK;
        return error_set(SPF_ERR_IO, w->path, "cannot stat the target: %s", strerror(errno));
    }
    if (S_ISLNK(st->st_mode))
        return SPF_OK;
    if (!S_ISREG(st->st_mode))
        return error_set(SPF_ERR_IO, w->path, "is %s, expected a regular file or a new name",
                         kind_name(st->st_mode));
    *keep = 1;
    return SPF_OK;
}

/* The temporary file in w->dir_fd, opened as w->file; on failure w is
 * finished. user_path: the target is a caller's (target_check's rules);
 * else it is in a folder the library owns (the plan cache), whose files
 * take exactly mode and whatever stands at the name is replaced. */
static spf_status create_temp(file_replace *w, mode_t mode, int user_path)
{
    int keep = 0;
    struct stat target;
    spf_status status = user_path ? target_check(w, &keep, &target) : SPF_OK;
    if (status != SPF_OK) {
        file_replace_abort(w);
        return status;
    }
    /* Never wider than the file it replaces, not even until the chmod. */
    const mode_t create_mode = keep ? (mode & target.st_mode & 0777) : mode;
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        size_t prefix = strlen(w->base) < TEMP_PREFIX_MAX ? strlen(w->base) : TEMP_PREFIX_MAX;
        snprintf(w->tmp, sizeof w->tmp, ".%.*s.%016llx%s", (int)prefix, w->base,
                 (unsigned long long)temp_token(), TEMP_SUFFIX);
        fd = openat(w->dir_fd, w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    create_mode);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        int err = errno;
        w->tmp[0] = '\0';
        file_replace_abort(w);
        return error_set(SPF_ERR_IO, w->path, "cannot create a temporary file in its folder: %s",
                         strerror(err));
    }
    if (keep) {
        /* The owner first (possible for root only; others keep their own),
         * then the exact bits, which a chown may have cleared (set-id). */
        const char *failed = NULL;
        if ((target.st_uid != geteuid() || target.st_gid != getegid()) &&
            fchown(fd, target.st_uid, target.st_gid) != 0 && errno != EPERM)
            failed = "owner";
        else if (fchmod(fd, target.st_mode & 07777) != 0)
            failed = "permissions";
        if (failed) {
            int err = errno;
            close(fd);
            file_replace_abort(w);
            return error_set(SPF_ERR_IO, w->path, "cannot keep the file's %s: %s", failed,
                             strerror(err));
        }
    }
    w->file = fdopen(fd, "wb");
    if (!w->file) {
        int err = errno;
        close(fd);
        file_replace_abort(w);
        return error_set(err == ENOMEM ? SPF_ERR_OUT_OF_MEMORY : SPF_ERR_IO, w->path,
                         "cannot open a stream: %s", strerror(err));
    }
    return SPF_OK;
}

spf_status file_replace_begin(file_replace *w, const char *path, mode_t mode)
{
    *w = (file_replace){.file = NULL, .path = path, .dir_fd = -1, .base = "", .tmp = ""};
    spf_status status = open_folder(w, path);
    if (status != SPF_OK)
        return status;
    return create_temp(w, mode, 1);
}

spf_status file_replace_begin_at(file_replace *w, int dir_fd, const char *name, const char *path,
                                 mode_t mode)
{
    *w = (file_replace){.file = NULL, .path = path, .dir_fd = -1, .base = "", .tmp = ""};
    spf_status status = strchr(name, '/')
                            ? error_set(SPF_ERR_INVALID_ARGUMENT, path, "%s is not a name "
                                        "within a folder", name)
                            : set_base(w, name, path);
    if (status != SPF_OK)
        return status;
    w->dir_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
    if (w->dir_fd < 0)
        return error_set(SPF_ERR_IO, path, "cannot create: cannot use its folder: %s",
                         strerror(errno));
    return create_temp(w, mode, 0);
}

spf_status file_replace_commit(file_replace *w)
{
    spf_status status = SPF_OK;
    int err = 0;
    if (!w->file)
        return error_set(SPF_ERR_INTERNAL, w->path, "commit without an open temporary file");
    if (fflush(w->file) != 0 || ferror(w->file))
        err = errno ? errno : EIO;
    else if (fsync(fileno(w->file)) != 0)
        err = errno;
    if (fclose(w->file) != 0 && !err)
        err = errno ? errno : EIO;
    w->file = NULL;
    if (err)
        status = error_set(SPF_ERR_IO, w->path, "write failed: %s", strerror(err));
    else if (renameat(w->dir_fd, w->tmp, w->dir_fd, w->base) != 0)
        status = error_set(SPF_ERR_IO, w->path, "cannot rename the temporary file %s into "
                           "place: %s", w->tmp, strerror(errno));
    else
        w->tmp[0] = '\0'; /* renamed: nothing to remove */
    file_replace_abort(w);
    return status;
}

void file_replace_abort(file_replace *w)
{
    if (w->file)
        fclose(w->file);
    w->file = NULL;
    if (w->tmp[0] && w->dir_fd >= 0)
        unlinkat(w->dir_fd, w->tmp, 0);
    w->tmp[0] = '\0';
    if (w->dir_fd >= 0)
        close(w->dir_fd);
    w->dir_fd = -1;
}

int file_replace_is_temp_name(const char *name)
{
    size_t n = strlen(name), suffix = sizeof TEMP_SUFFIX - 1;
    /* "." prefix "." 16 hex ".tmp" */
    if (n < 1 + 1 + TEMP_HEX + suffix || name[0] != '.' ||
        strcmp(name + n - suffix, TEMP_SUFFIX) != 0)
        return 0;
    const char *hex = name + n - suffix - TEMP_HEX;
    if (hex[-1] != '.')
        return 0;
    for (int i = 0; i < TEMP_HEX; i++)
        if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
            return 0;
    return 1;
}
