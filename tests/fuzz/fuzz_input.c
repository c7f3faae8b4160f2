/* The fuzz targets' private folder (fuzz_input.h). */
#define _POSIX_C_SOURCE 200809L

#include "fuzz_input.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[4096];

static void die(const char *what, const char *path)
{
    perror(path);
    fprintf(stderr, "fuzz harness: cannot %s %s\n", what, path);
    abort();
}

/* Remove the folder and whatever the runs left in it (one level: the
 * targets write plain files only). */
static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[sizeof dir + 256];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

const char *fuzz_dir(void)
{
    if (dir[0])
        return dir;
    struct stat st;
    const char *base = getenv("SPF_FUZZ_TMP");
    if (!base || !base[0])
        base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : getenv("TMPDIR");
    if (!base || !base[0])
        base = "/tmp";
    snprintf(dir, sizeof dir, "%s/spf-fuzz-XXXXXX", base);
    if (!mkdtemp(dir))
        die("make the folder", dir);
    atexit(remove_dir);
    return dir;
}

const char *fuzz_write(const char *name, const void *data, size_t size)
{
    static char path[sizeof dir + 256];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f)
        die("open", path);
    if ((size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        die("write", path);
    return path;
}
