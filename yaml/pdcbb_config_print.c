/*
 * pdcbb_config_print.c - the resolved configuration as YAML: every key with its help line, who
 * may set it and its value (pdcbb_config_print, what `--print-config` shows), loadable again
 * with pdcbb_config_load_file; and written atomically into a file (temporary file, fsync,
 * rename, mode 0600) for the daemons of a job.
 */
#include "pdcbb_config_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pdcbb_log.h"

/* A YAML double-quoted scalar: safe for any byte string load_file accepts. */
static void cfg_print_quoted(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            fprintf(out, "\\x%02X", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

static void cfg_print_scope(FILE *out, const pdcbb_config_key_t *k)
{
    const char *sep = "";

    fputs(" (", out);
    if (k->scope & PDCBB_SCOPE_SITE) {
        fputs("site", out);
        sep = ", ";
    }
    if (k->scope & PDCBB_SCOPE_USER) {
        fprintf(out, "%suser", sep);
        sep = ", ";
    }
    if (k->scope & PDCBB_SCOPE_ENV) {
        char var[80];
        fprintf(out, "%senv %s", sep, pdcbb_config_env_name(k, var, sizeof(var)));
    }
    fputs(")", out);
}

void pdcbb_config_print(const pdcbb_config_t *c, FILE *out)
{
    char buf[64];

    if (c == NULL || out == NULL)
        return;
    for (size_t i = 0; i < cfg_nkeys; i++) {
        const pdcbb_config_key_t *k = &cfg_keys[i];
        const void *f = cfg_field_const(c, k);

        fprintf(out, "# %s", k->help);
        cfg_print_scope(out, k);
        fprintf(out, "\n%s: ", k->name);
        switch (k->type) {
        case PDCBB_CFG_SIZE:
            fputs(pdcbb_format_size(*(const uint64_t *)f, buf, sizeof(buf)), out);
            break;
        case PDCBB_CFG_UINT:
            fprintf(out, "%u", *(const unsigned *)f);
            break;
        case PDCBB_CFG_SECONDS:
            cfg_format_seconds(*(const double *)f, buf, sizeof(buf));
            fputs(buf, out);
            break;
        case PDCBB_CFG_STRING:
        case PDCBB_CFG_PATH:
            cfg_print_quoted(out, f);
            break;
        case PDCBB_CFG_PATH_LIST:
            fputc('[', out);
            for (int j = 0; j < c->n_drain_roots && j < PDCBB_CONFIG_LIST_MAX; j++) {
                if (j > 0)
                    fputs(", ", out);
                cfg_print_quoted(out, c->drain_roots[j]);
            }
            fputc(']', out);
            break;
        case PDCBB_CFG_PLACEMENT:
            fputs(pdcbb_placement_name(*(const pdcbb_placement_t *)f), out);
            break;
        case PDCBB_CFG_LOG_LEVEL:
            fputs(pdcbb_log_level_name((pdcbb_log_level_t)(*(const int *)f)), out);
            break;
        }
        fputc('\n', out);
    }
}

pdcbb_err_t pdcbb_config_write_file(const pdcbb_config_t *c, const char *path)
{
    pdcbb_err_t rc = PDCBB_OK;
    char tmp[PATH_MAX], dir[PATH_MAX];
    int fd = -1, dfd = -1;
    FILE *f = NULL;
    bool tmp_exists = false;

    if (c == NULL || path == NULL || path[0] == '\0') {
        rc = PDCBB_ERR_INVAL;
        goto done;
    }
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= sizeof(tmp)) {
        rc = PDCBB_ERR_TOO_BIG;
        goto done;
    }
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        rc = pdcbb_err_from_errno(errno);
        goto done;
    }
    tmp_exists = true;
    if (fchmod(fd, 0600) != 0) {
        rc = pdcbb_err_from_errno(errno);
        goto done;
    }
    f = fdopen(fd, "w");
    if (f == NULL) {
        rc = pdcbb_err_from_errno(errno);
        goto done;
    }
    fd = -1; /* owned by f now */
    errno = 0;
    pdcbb_config_print(c, f);
    if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) {
        rc = pdcbb_err_from_errno(errno ? errno : EIO);
        goto done;
    }
    if (fclose(f) != 0) {
        f = NULL;
        rc = pdcbb_err_from_errno(errno);
        goto done;
    }
    f = NULL;
    if (rename(tmp, path) != 0) {
        rc = pdcbb_err_from_errno(errno);
        goto done;
    }
    tmp_exists = false;
    /* make the rename itself durable; failing to sync the directory is not fatal */
    snprintf(dir, sizeof(dir), "%s", path);
    dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0)
        (void)fsync(dfd);
done:
    if (dfd >= 0)
        close(dfd);
    if (f != NULL)
        fclose(f);
    if (fd >= 0)
        close(fd);
    if (tmp_exists)
        unlink(tmp);
    return rc;
}
