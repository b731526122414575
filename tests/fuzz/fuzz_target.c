/* fuzz_target.c - the helpers of fuzz_target.h: the per-process directory and its files. */
#include "fuzz_target.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static char fuzz_dir_path[4096];

/* Remove the directory and the files the targets wrote into it (no subdirectories). */
static void fuzz_dir_remove(void)
{
    DIR *d = opendir(fuzz_dir_path);
    if (d == NULL)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            unlinkat(dirfd(d), de->d_name, 0);
    closedir(d);
    rmdir(fuzz_dir_path);
}

const char *fuzz_dir(void)
{
    if (fuzz_dir_path[0] != '\0')
        return fuzz_dir_path;
    const char *tmp = getenv("TMPDIR");
    snprintf(fuzz_dir_path, sizeof(fuzz_dir_path), "%s/fuzz-%ld.XXXXXX", tmp && *tmp ? tmp : "/tmp",
             (long)getpid());
    if (mkdtemp(fuzz_dir_path) == NULL) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(fuzz_dir_remove);
    return fuzz_dir_path;
}

void fuzz_write_file(const char *name, const void *data, size_t size, char *path, size_t len)
{
    if (snprintf(path, len, "%s/%s", fuzz_dir(), name) >= (int)len)
        abort();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(path);
        abort();
    }
    const char *p = data;
    while (size > 0) {
        ssize_t w = write(fd, p, size);
        if (w <= 0) {
            perror(path);
            abort();
        }
        p += w;
        size -= (size_t)w;
    }
    close(fd);
}

char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s == NULL)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}
