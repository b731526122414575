/*
 * pdcbb_job_rendezvous.c - the job's rendezvous directory: where the daemons of a multi-node
 * job learn each other (see bbd/bbd_table.c for the reading side).
 *
 * Node-local storage is private to its node, and a job step may run on any subset of the
 * job's nodes, so a client cannot read other nodes' endpoint records. Instead every daemon
 * publishes its record in one directory on a filesystem all nodes see (site key
 * rendezvous_dir, default ~/.pdcbb of the job user), and a client asks its own node's daemon
 * for the table. The directory of one job is "<rendezvous_dir>/job.<id>.<instance>": the
 * random instance id makes the name impossible to predict, so nobody can prepare it, and it
 * is created by the prolog as the job user, mode 0700 (tokens are in it). Every node's prolog
 * creates it or, when another node was first, accepts it only as a real directory owned by
 * the job user and closed to others. Nothing here runs as root on the shared filesystem:
 * root squash is common there, and the job user's own credentials are what the files need.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pdcbb_job.h"
#include "pdcbb_log.h"

pdcbb_err_t pdcbb_job_rendezvous(const pdcbb_job_t *job, char *out, size_t len)
{
    out[0] = '\0';
    if (job->nnodes <= 1)
        return PDCBB_OK;
    const char *root = job->rendezvous_root[0] ? job->rendezvous_root : job->cfg.rendezvous_dir;
    char base[PATH_MAX];
    if (strncmp(root, "~/", 2) == 0) {
        struct passwd pw, *res = NULL;
        char buf[16384];
        if (getpwuid_r(job->uid, &pw, buf, sizeof(buf), &res) != 0 || res == NULL ||
            pw.pw_dir == NULL || pw.pw_dir[0] != '/')
            return PDCBB_ERR_NOT_FOUND;
        if (snprintf(base, sizeof(base), "%s/%s", pw.pw_dir, root + 2) >= (int)sizeof(base))
            return PDCBB_ERR_TOO_BIG;
    } else if (root[0] == '/') {
        snprintf(base, sizeof(base), "%s", root);
    } else {
        return PDCBB_ERR_CONFIG;
    }
    size_t bl = strlen(base);
    while (bl > 1 && base[bl - 1] == '/')
        base[--bl] = '\0';
    int n = snprintf(out, len, "%s/job.%" PRIu64 "%s%s", base, job->job_id,
                     job->instance[0] ? "." : "", job->instance);
    if (n < 0 || (size_t)n >= len) {
        out[0] = '\0';
        return PDCBB_ERR_TOO_BIG;
    }
    return PDCBB_OK;
}

typedef struct rdv_arg {
    const char *dir;
    const char *file; /* node-I.error path, for report */
    const char *text;
    unsigned rank_lo, rank_hi, node_index;
} rdv_arg_t;

/* mkdir -p of the parents that are missing, 0700 (as the user: under its home or a site
 * directory it may write). */
static int rdv_mkdir_parents(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST)
            return errno;
        *p = '/';
    }
    return 0;
}

/* As the job user: create the job's directory or accept the one another node created. */
static pdcbb_err_t rdv_create(void *argp, void *out)
{
    const rdv_arg_t *a = argp;
    char *msg = out;
    int e = rdv_mkdir_parents(a->dir);
    if (e != 0) {
        snprintf(msg, PDCBB_JOB_ERR_LEN, "cannot create the parents of %s: %s", a->dir,
                 strerror(e));
        return pdcbb_err_from_errno(e);
    }
    if (mkdir(a->dir, 0700) != 0 && errno != EEXIST) {
        e = errno;
        snprintf(msg, PDCBB_JOB_ERR_LEN, "cannot create %s: %s", a->dir, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    struct stat st;
    if (lstat(a->dir, &st) != 0) {
        e = errno;
        snprintf(msg, PDCBB_JOB_ERR_LEN, "%s: %s", a->dir, strerror(e));
        return pdcbb_err_from_errno(e);
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
        snprintf(msg, PDCBB_JOB_ERR_LEN,
                 "%s exists but is not a directory of uid %ld closed to others (owner uid %ld, "
                 "mode %03o): refusing to use it",
                 a->dir, (long)geteuid(), (long)st.st_uid, (unsigned)(st.st_mode & 07777));
        return PDCBB_ERR_PERM;
    }
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_job_rendezvous_create(const pdcbb_job_t *job, const char *rdv, char *err,
                                        size_t errlen)
{
    char msg[PDCBB_JOB_ERR_LEN] = "", swerr[256] = "";
    rdv_arg_t a = {.dir = rdv};
    pdcbb_err_t rc = pdcbb_job_as_user(job, rdv_create, &a, msg, sizeof(msg), swerr,
                                       sizeof(swerr));
    if (rc != PDCBB_OK)
        snprintf(err, errlen, "rendezvous directory (site key rendezvous_dir): %s",
                 msg[0] ? msg : swerr[0] ? swerr : pdcbb_strerror(rc));
    return rc;
}

/* As the job user: write the node's failure for the other nodes' clients. */
static pdcbb_err_t rdv_report(void *argp, void *out)
{
    const rdv_arg_t *a = argp;
    (void)out;
    return pdcbb_write_file_atomic(a->file, a->text, strlen(a->text), 0600);
}

void pdcbb_job_rendezvous_report(const pdcbb_job_t *job, const char *rdv, const char *why)
{
    char path[PATH_MAX], text[PDCBB_JOB_ERR_LEN + 300], out[1], swerr[256];
    if (rdv == NULL || rdv[0] == '\0' ||
        pdcbb_rendezvous_error_path(rdv, job->node_index, path, sizeof(path)) != PDCBB_OK)
        return;
    snprintf(text, sizeof(text), "node %s: %s\n", job->node_name, why);
    rdv_arg_t a = {.file = path, .text = text};
    pdcbb_err_t rc = pdcbb_job_as_user(job, rdv_report, &a, out, 0, swerr, sizeof(swerr));
    if (rc != PDCBB_OK)
        PDCBB_ERROR("job %" PRIu64 ": cannot write %s: %s", job->job_id, path,
                    pdcbb_strerror(rc));
}

/* As the job user: remove this node's traces, then the directory if it is empty. */
static pdcbb_err_t rdv_cleanup(void *argp, void *out)
{
    const rdv_arg_t *a = argp;
    (void)out;
    char path[PATH_MAX];
    for (unsigned r = a->rank_lo; r < a->rank_hi; r++)
        if (pdcbb_rendezvous_record_path(a->dir, r, path, sizeof(path)) == PDCBB_OK)
            unlink(path);
    if (pdcbb_rendezvous_error_path(a->dir, a->node_index, path, sizeof(path)) == PDCBB_OK)
        unlink(path);
    /* a failed start script's record for the other nodes (pdcbb_job_script.c) */
    if (snprintf(path, sizeof(path), "%s/node-%u.script.error", a->dir, a->node_index) <
        (int)sizeof(path))
        unlink(path);
    rmdir(a->dir); /* fails while other nodes still have theirs there: the last one removes it */
    return PDCBB_OK;
}

void pdcbb_job_rendezvous_cleanup(const pdcbb_job_t *job)
{
    char rdv[PATH_MAX], out[1], swerr[256];
    if (pdcbb_job_rendezvous(job, rdv, sizeof(rdv)) != PDCBB_OK || rdv[0] == '\0')
        return;
    unsigned spn = job->cfg.servers_per_node ? job->cfg.servers_per_node : 1;
    rdv_arg_t a = {.dir = rdv, .rank_lo = job->node_index * spn,
                   .rank_hi = job->node_index * spn + spn, .node_index = job->node_index};
    pdcbb_job_as_user(job, rdv_cleanup, &a, out, 0, swerr, sizeof(swerr));
}
