/*
 * spank_pdc.c - the Slurm SPANK plugin of pdcbb: `--pdc[=k=v,...]` makes a job's nodes run a
 * burst buffer.
 *
 *   plugstack.conf:  optional /usr/lib/x86_64-linux-gnu/slurm/spank_pdc.so
 * config=/etc/pdcbb/site.yaml
 *
 * Fail closed: the one plugstack argument is config=SITE.yaml. Any other argument, none, or a
 * site file that cannot be read or parsed refuses every --pdc job at submission ("the site's
 * pdcbb configuration is broken: ...; contact your administrator") and makes the prolog start
 * no burst buffer (logged, prolog still 0); jobs without --pdc are not affected. Built-in
 * defaults, which know nothing of max_capacity and drain_roots, are never used instead.
 *
 * Contexts (spank_pdc(8), man/spank_pdc.8, describes them for administrators):
 *   sbatch/salloc/srun (the user): registers --pdc and validates it at once, so a bad spec
 *     fails the submission with the key named (site file first, then the spec);
 *   job prolog / epilog (root, every node): calls the same pdcbb_job_prolog / pdcbb_job_epilog
 *     as `pdcbb run`. The prolog never fails because of a user mistake or a daemon failure (a
 *     failing prolog drains the node): the reason goes to the job directory's prolog.error,
 *     where clients and `pdcbb status` find it, and to the slurmd log;
 *   each task (user): exports PDCBB_JOB_DIR (this node's job directory), PDCBB_JOB_ID,
 *     PDCBB_NODE_NAME and with mount=yes PDCBB_MOUNT; clients learn the other nodes' daemons
 *     from this node's daemon.
 * The job's filesystem (key `mount`, jobctl/pdcbb_job_mount.c) is started by the prolog as the
 * job user after the daemons and before the start script; a failure to start it is recorded
 * like a failed start script's, so the tasks refuse to run and the node stays up. The epilog
 * unmounts it before the daemons stop.
 * The user script (key `script`, jobctl/pdcbb_job_script.h) follows the same rule: checked as
 * the user at submission; its start phase runs at the end of the prolog (as the job user, the
 * job waits for it) and a failure never fails the prolog: it is recorded in the job
 * directory's script.error (and the rendezvous directory, for the other nodes), and every task
 * of the job refuses to start with that message (task_init fails, so the job fails and the
 * node stays up). Its end phase runs at the start of the epilog, before the daemons stop and
 * the drain; a failure is logged and written to its log, and the drain goes on.
 * A `--pdc-config=FILE` (or `config=FILE` in the spec) is read as the user at submit time; the
 * prolog (root) receives its content through the job control environment and never opens a path the
 * user chose. The plugin starts no threads and logs only through
 * slurm_error/slurm_info/slurm_debug.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "pdcbb_config.h"
#include "pdcbb_drain.h"
#include "pdcbb_job.h"
#include "pdcbb_job_drain.h"
#include "pdcbb_job_script.h"
#include "pdcbb_log.h"
#include "spank_job_output.h"

SPANK_PLUGIN(pdc, 1);

#define PFX "spank_pdc: "
#define USER_YAML_MAX (64 * 1024)

static char site_config[PATH_MAX];
static char *pdc_spec;
static char *pdc_config_file; /* --pdc-config=FILE */
static int pdc_given;

/*
 * At submission only (the submitting user's own process): the drain destination must be one the
 * user can drain into (absolute, an existing directory the user may write, not a system
 * directory), so a job whose drain cannot work is refused now instead of ending with its data
 * stranded on the nodes. The prolog checks again as the user (the directory may be gone by
 * then). Not from root's prolog: root's access() says nothing about the user. Not for the
 * steps of a job that exists already.
 */
static int check_at_submit(const pdcbb_config_t *cfg, const char *what)
{
    char err[PDCBB_DRAIN_ERR_LEN];
    if (cfg->drain[0] == '\0' && cfg->script[0] == '\0' && cfg->stage_in_files[0] == '\0')
        return 0;
    /* An srun inside a job sees the job's --pdc again: the job was checked when it was
     * submitted and by its prolog, and the drain at its end reports its own failure. */
    const char *in_job = getenv("SLURM_JOB_ID");
    if (spank_context() == S_CTX_LOCAL && in_job != NULL && *in_job != '\0')
        return 0;
    if (cfg->drain[0] && pdcbb_drain_dest_check(cfg->drain, err, sizeof(err)) != PDCBB_OK) {
        slurm_error(PFX "%s: key 'drain': %s", what, err);
        return -1;
    }
    /* The tree copied into the job's filesystem: one the user can read */
    if (cfg->stage_in_files[0]) {
        struct stat st;
        const char *why = NULL;
        if (stat(cfg->stage_in_files, &st) != 0)
            why = errno == ENOENT ? "no such directory" : strerror(errno);
        else if (!S_ISDIR(st.st_mode))
            why = "not a directory";
        else if (access(cfg->stage_in_files, R_OK | X_OK) != 0)
            why = "not a directory you can read";
        if (why != NULL) {
            slurm_error(PFX "%s: key 'stage_in_files': %s: %s", what, cfg->stage_in_files, why);
            return -1;
        }
    }
    /* The user script (also a site default): the user's process judges it as the user. */
    if (cfg->script[0] && pdcbb_job_script_check(cfg->script, getuid(), err, sizeof(err)) !=
                              PDCBB_OK) {
        slurm_error(PFX "%s: key 'script': %s", what, err);
        return -1;
    }
    return 0;
}

static int pdc_opt_cb(int val, const char *optarg, int remote);
static int pdc_config_opt_cb(int val, const char *optarg, int remote);

static struct spank_option pdc_option = {
    "pdc",
    "[k=v,...]",
    "Give the job a pdcbb burst buffer on every node. Keys: capacity=SIZE (per node), "
    "drain=DIR (an existing directory you may write; checked now), drain_share=none|group|all, "
    "stage_in=DIR, mount (the burst buffer as files at $PDCBB_MOUNT), servers_per_node=N, "
    "placement=obj_static|region_static|"
    "region_dynamic|region_local, log_level=..., config=YAML (a file of the same keys). "
    "Example: --pdc=capacity=20G,drain=/scratch/me/run1",
    2,
    0,
    pdc_opt_cb,
};

static struct spank_option pdc_config_option = {
    "pdc-config",
    "FILE",
    "A YAML file of --pdc keys for the job's burst buffer (implies --pdc; keys given in --pdc "
    "win). Read at submission, as you.",
    1,
    0,
    pdc_config_opt_cb,
};

/* Split "k=v,config=FILE,k=v" into the spec without config/yaml keys and the file name. */
static void split_config_key(const char *spec, char *rest, size_t restlen, char *file,
                             size_t filelen)
{
    rest[0] = file[0] = '\0';
    char *copy = strdup(spec ? spec : "");
    if (copy == NULL)
        return;
    size_t used = 0;
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        if (strncmp(t, "config=", 7) == 0 || strncmp(t, "yaml=", 5) == 0) {
            snprintf(file, filelen, "%s", strchr(t, '=') + 1);
            continue;
        }
        used += (size_t)snprintf(rest + used, used < restlen ? restlen - used : 0, "%s%s",
                                 used ? "," : "", t);
    }
    free(copy);
}

/*
 * Fail closed: why the site's configuration cannot be used ("" when it can). A required
 * plugstack.conf line with an argument the plugin does not know, no site file, or a site file
 * that cannot be read or parsed would otherwise run jobs with built-in defaults, which know
 * nothing of the site's max_capacity and drain_roots. Jobs without --pdc are never affected.
 */
static char site_broken[PDCBB_CONFIG_ERR_LEN];
static int site_checked;

/* Load the site file once per process; sets site_broken when it cannot be used. */
static const char *site_problem(void)
{
    if (site_broken[0] || site_checked)
        return site_broken;
    site_checked = 1;
    pdcbb_config_t cfg;
    char err[PDCBB_CONFIG_ERR_LEN];
    pdcbb_config_init(&cfg);
    if (pdcbb_config_load_file(&cfg, site_config,
                               PDCBB_SCOPE_SITE | PDCBB_SCOPE_USER | PDCBB_SCOPE_ENV, err,
                               sizeof(err)) != PDCBB_OK)
        snprintf(site_broken, sizeof(site_broken), "%s", err);
    return site_broken;
}

/* defaults < site file < (user file) < spec; err names the source and key. */
static pdcbb_err_t resolve(pdcbb_config_t *cfg, const char *spec, const char *user_yaml_path,
                           char *err, size_t errlen)
{
    pdcbb_err_t rc;
    pdcbb_config_init(cfg);
    if (site_problem()[0]) {
        snprintf(err, errlen, "the site's pdcbb configuration is broken: %s", site_broken);
        return PDCBB_ERR_CONFIG;
    }
    if ((rc = pdcbb_config_load_file(cfg, site_config,
                                     PDCBB_SCOPE_SITE | PDCBB_SCOPE_USER | PDCBB_SCOPE_ENV, err,
                                     errlen)) != PDCBB_OK)
        return rc;
    if (user_yaml_path && *user_yaml_path &&
        (rc = pdcbb_config_load_file(cfg, user_yaml_path, PDCBB_SCOPE_USER | PDCBB_SCOPE_ENV,
                                     err, errlen)) != PDCBB_OK)
        return rc;
    if ((rc = pdcbb_config_parse_spec(cfg, spec ? spec : "", err, errlen)) != PDCBB_OK)
        return rc;
    return pdcbb_config_validate(cfg, err, errlen);
}

/* At submission: refuse a --pdc job when the site configuration is broken. */
static int site_refuses_submission(void)
{
    if (!site_problem()[0])
        return 0;
    slurm_error(PFX "--pdc refused: the site's pdcbb configuration is broken: %s; contact your "
                    "administrator",
                site_broken);
    return 1;
}

static int pdc_opt_cb(int val, const char *optarg, int remote)
{
    (void)val;
    free(pdc_spec);
    /* A bare --pdc reaches steps through the environment as the text "(null)". */
    if (optarg == NULL || strcmp(optarg, "(null)") == 0)
        optarg = "";
    pdc_spec = strdup(optarg);
    pdc_given = 1;
    if (remote)
        return 0; /* checked at submission; the prolog reports anything else in prolog.error */
    /* A broken site configuration is the administrator's, not this spec's: refused with its
     * own message in slurm_spank_init_post_opt (failing here would make Slurm add "Invalid
     * --pdc argument"). */
    if (site_problem()[0] || pdc_spec[0] == '\0')
        return 0; /* a bare --pdc too: Slurm would quote its argument as "(null)" */
    /* Submission: the user's own process, which may read the user's files. */
    pdcbb_config_t cfg;
    char err[PDCBB_CONFIG_ERR_LEN];
    if (resolve(&cfg, pdc_spec, NULL, err, sizeof(err)) != PDCBB_OK) {
        slurm_error(PFX "--pdc=%s: %s", pdc_spec, err);
        return -1;
    }
    char what[64 + sizeof(err)];
    snprintf(what, sizeof(what), "--pdc=%.*s", (int)sizeof(err), pdc_spec);
    return check_at_submit(&cfg, what);
}

static int pdc_config_opt_cb(int val, const char *optarg, int remote)
{
    (void)val;
    (void)remote;
    if (optarg == NULL || *optarg == '\0') {
        slurm_error(PFX "--pdc-config needs a file name");
        return -1;
    }
    free(pdc_config_file);
    pdc_config_file = strdup(optarg);
    pdc_given = 1;
    return 0; /* read and checked with the whole spec in slurm_spank_init_post_opt */
}

/* The plugstack.conf arguments; every entry point gets them (the prolog runs no init).
 * Anything but exactly one config=SITE.yaml marks the site configuration broken. */
static void parse_args(int ac, char **av)
{
    site_config[0] = '\0';
    site_broken[0] = '\0';
    site_checked = 0;
    for (int i = 0; i < ac; i++) {
        if (strncmp(av[i], "config=", 7) == 0 && av[i][7] != '\0' && site_config[0] == '\0') {
            snprintf(site_config, sizeof(site_config), "%s", av[i] + 7);
        } else if (site_broken[0] == '\0') {
            snprintf(site_broken, sizeof(site_broken),
                     "%s plugstack.conf argument '%s' (the plugin takes one argument, "
                     "config=SITE.yaml)",
                     strncmp(av[i], "config=", 7) == 0 ? "unusable" : "unknown", av[i]);
        }
    }
    if (site_broken[0] == '\0' && site_config[0] == '\0')
        snprintf(site_broken, sizeof(site_broken),
                 "no config=SITE.yaml argument on the plugin's plugstack.conf line");
    pdcbb_log_set_level(PDCBB_LOG_NONE);
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    parse_args(ac, av);
    if (spank_option_register(sp, &pdc_option) != ESPANK_SUCCESS)
        slurm_error(PFX "cannot register --pdc");
    if (spank_option_register(sp, &pdc_config_option) != ESPANK_SUCCESS)
        slurm_error(PFX "cannot register --pdc-config");
    return 0;
}

/* At submission, hand the user's config file content to the prolog (which runs as root). */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    spank_context_t ctx = spank_context();
    if (!pdc_given || (ctx != S_CTX_ALLOCATOR && ctx != S_CTX_LOCAL))
        return 0;
    if (site_refuses_submission())
        return -1;
    if (pdc_config_file == NULL && (pdc_spec == NULL || pdc_spec[0] == '\0')) {
        /* a bare --pdc: the site's defaults must make a valid job */
        pdcbb_config_t cfg;
        char err[PDCBB_CONFIG_ERR_LEN];
        if (resolve(&cfg, "", NULL, err, sizeof(err)) != PDCBB_OK) {
            slurm_error(PFX "--pdc: %s", err);
            return -1;
        }
        if (check_at_submit(&cfg, "--pdc") != 0)
            return -1;
    }
    /* The task count, for the user script's PDCBB_NTASKS (the prolog cannot learn it). */
    const char *nt = getenv("SLURM_NTASKS");
    if (nt == NULL || *nt == '\0')
        nt = getenv("SLURM_NPROCS");
    if (nt != NULL && *nt != '\0' && strspn(nt, "0123456789") == strlen(nt) &&
        strlen(nt) < 10)
        spank_job_control_setenv(sp, "PDCBB_NTASKS", nt, 1);
    /* One random id for the whole job, so that its drain can never be mixed with another's
     * (every node's prolog and epilog see it as SPANK_PDCBB_INSTANCE). */
    char instance[PDCBB_INSTANCE_LEN + 1];
    if (pdcbb_instance_generate(instance) != PDCBB_OK ||
        spank_job_control_setenv(sp, "PDCBB_INSTANCE", instance, 1) != ESPANK_SUCCESS)
        slurm_error(PFX "cannot give the job an instance id");
    char rest[4096], file[PATH_MAX];
    split_config_key(pdc_spec, rest, sizeof(rest), file, sizeof(file));
    if (pdc_config_file != NULL) {
        if (file[0] != '\0') {
            slurm_error(PFX "--pdc-config=%s and --pdc config=%s: give one YAML file",
                        pdc_config_file, file);
            return -1;
        }
        snprintf(file, sizeof(file), "%s", pdc_config_file);
        /* The whole user configuration, checked now: file, then the spec's keys. */
        pdcbb_config_t cfg;
        char err[PDCBB_CONFIG_ERR_LEN];
        if (resolve(&cfg, rest, file, err, sizeof(err)) != PDCBB_OK) {
            slurm_error(PFX "--pdc-config=%s: %s", file, err);
            return -1;
        }
        char what[64 + PATH_MAX];
        snprintf(what, sizeof(what), "--pdc-config=%s", file);
        if (check_at_submit(&cfg, what) != 0)
            return -1;
    }
    if (file[0] == '\0')
        return 0;
    char *buf = malloc(USER_YAML_MAX + 1);
    int fd = buf ? open(file, O_RDONLY | O_CLOEXEC) : -1;
    ssize_t n = fd >= 0 ? read(fd, buf, USER_YAML_MAX + 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n < 0 || n > USER_YAML_MAX) {
        slurm_error(PFX "--pdc config=%s: %s", file,
                    n > USER_YAML_MAX ? "file larger than 64 KiB" : strerror(errno));
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    if (spank_job_control_setenv(sp, "PDCBB_USER_YAML", buf, 1) != ESPANK_SUCCESS)
        slurm_error(PFX "cannot pass config=%s to the job's prolog", file);
    free(buf);
    return 0;
}

#define HOSTS_MAX 4096

/* Expand a Slurm host list ("n[1-3,5],m07") into names (malloc'ed array of *count strings of
 * 256 bytes); NULL if malformed or out of memory. */
static char (*hostlist_expand(const char *list, unsigned *count))[256]
{
    char(*names)[256] = calloc(HOSTS_MAX, 256);
    unsigned n = 0;
    const char *p = list;
    while (names && p && *p) {
        char prefix[128];
        size_t pl = strcspn(p, "[,");
        if (pl >= sizeof(prefix))
            goto bad;
        memcpy(prefix, p, pl);
        prefix[pl] = '\0';
        p += pl;
        if (*p == '[') {
            const char *close = strchr(p, ']');
            char ranges[1024];
            size_t rl = close ? (size_t)(close - p - 1) : 0;
            if (close == NULL || rl >= sizeof(ranges))
                goto bad;
            memcpy(ranges, p + 1, rl);
            ranges[rl] = '\0';
            for (char *save = NULL, *r = strtok_r(ranges, ",", &save); r;
                 r = strtok_r(NULL, ",", &save)) {
                char *dash = strchr(r, '-');
                int width = (int)(dash ? (size_t)(dash - r) : strlen(r));
                unsigned long lo = strtoul(r, NULL, 10), hi = dash ? strtoul(dash + 1, NULL, 10)
                                                                  : lo;
                for (unsigned long v = lo; v <= hi; v++) {
                    if (n == HOSTS_MAX)
                        goto bad;
                    snprintf(names[n++], 256, "%s%0*lu", prefix, width, v);
                }
            }
            p = close + 1;
        } else {
            if (n == HOSTS_MAX)
                goto bad;
            snprintf(names[n++], 256, "%s", prefix);
        }
        if (*p == ',')
            p++;
    }
    *count = n;
    return names;
bad:
    free(names);
    return NULL;
}

/* "%n" in local_root becomes the node name (several slurmd on one host need their own). */
static void expand_root(const char *pattern, const char *node, char *out, size_t len)
{
    size_t o = 0;
    for (const char *c = pattern; *c && o + 1 < len; c++) {
        if (c[0] == '%' && c[1] == 'n') {
            o += (size_t)snprintf(out + o, len - o, "%s", node);
            c++;
        } else {
            out[o++] = *c;
        }
    }
    out[o < len ? o : len - 1] = '\0';
}

/* The job's node list: the prolog's environment, or the job's (steps). */
static const char *job_nodelist(spank_t sp, char *buf, int len)
{
    const char *l = getenv("SLURM_JOB_NODELIST");
    if (l && *l)
        return l;
    if ((l = getenv("SLURM_NODELIST")) != NULL && *l)
        return l;
    if (spank_remote(sp) && spank_getenv(sp, "SLURM_JOB_NODELIST", buf, len) == ESPANK_SUCCESS)
        return buf;
    if (spank_remote(sp) && spank_getenv(sp, "SLURM_NODELIST", buf, len) == ESPANK_SUCCESS)
        return buf;
    return NULL;
}

static const char *node_name(char *buf, size_t len)
{
    const char *n = getenv("SLURMD_NODENAME");
    if (n && *n)
        return n;
    if (gethostname(buf, len) != 0)
        snprintf(buf, len, "localhost");
    return buf;
}

/* The job as this node sees it; err names what is missing. */
static int job_from_slurm(spank_t sp, pdcbb_job_t *job, char *err, size_t errlen)
{
    uint32_t jobid = 0;
    uid_t uid;
    gid_t gid;
    char host[256];
    memset(job, 0, sizeof(*job));
    if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) {
        snprintf(err, errlen, "cannot get the job id, uid or gid from Slurm");
        return -1;
    }
    job->job_id = jobid;
    job->uid = uid;
    job->gid = gid;
    snprintf(job->node_name, sizeof(job->node_name), "%s", node_name(host, sizeof(host)));
    unsigned count = 0;
    char listbuf[8192];
    const char *list = job_nodelist(sp, listbuf, sizeof(listbuf));
    char(*names)[256] = list ? hostlist_expand(list, &count) : NULL;
    slurm_debug(PFX "node %s, job node list %s", job->node_name, list ? list : "(none)");
    job->node_index = 0;
    job->nnodes = 1;
    for (unsigned i = 0; names && i < count; i++)
        if (strcmp(names[i], job->node_name) == 0) {
            job->node_index = i;
            job->nnodes = count;
            break;
        }
    free(names);
    /* The user's part of the configuration: the spec, and a config file's content. */
    char *spec = NULL;
    if (spank_option_getopt(sp, &pdc_option, &spec) != ESPANK_SUCCESS)
        spec = pdc_spec;
    if (spec == NULL || strcmp(spec, "(null)") == 0)
        spec = ""; /* a bare --pdc */
    char rest[4096], file[PATH_MAX];
    split_config_key(spec, rest, sizeof(rest), file, sizeof(file));
    char tmp[] = "/tmp/pdcbb-user-yaml.XXXXXX";
    const char *yaml = getenv("SPANK_PDCBB_USER_YAML");
    int have_yaml = 0;
    if (yaml && *yaml) {
        int fd = mkstemp(tmp);
        if (fd >= 0) {
            size_t l = strlen(yaml);
            have_yaml = write(fd, yaml, l) == (ssize_t)l;
            close(fd);
        }
    }
    pdcbb_err_t rc = resolve(&job->cfg, rest, have_yaml ? tmp : NULL, err, errlen);
    if (have_yaml || yaml)
        unlink(tmp);
    if (rc != PDCBB_OK)
        return -1;
    expand_root(job->cfg.local_root, job->node_name, job->local_root, sizeof(job->local_root));
    /* slurmd gives the prolog the cluster's name; "" (not recorded) when it is not one we can
     * write into a drain's IDENTITY */
    const char *cl = getenv("SLURM_CLUSTER_NAME");
    if (cl != NULL && pdcbb_cluster_name_ok(cl))
        snprintf(job->cluster, sizeof(job->cluster), "%s", cl);
    const char *inst = getenv("SPANK_PDCBB_INSTANCE");
    if (inst != NULL && strlen(inst) == PDCBB_INSTANCE_LEN &&
        strspn(inst, "0123456789abcdef") == PDCBB_INSTANCE_LEN)
        snprintf(job->instance, sizeof(job->instance), "%s", inst);
    return 0;
}

static int pdc_requested(spank_t sp)
{
    char *spec = NULL;
    return spank_option_getopt(sp, &pdc_option, &spec) == ESPANK_SUCCESS ||
           spank_option_getopt(sp, &pdc_config_option, &spec) == ESPANK_SUCCESS || pdc_given;
}

/* Common start of the per-job entry points: plugstack arguments, then whether to act here. */
static int acts_here(spank_t sp, int ac, char **av, spank_context_t ctx)
{
    parse_args(ac, av);
    return spank_context() == ctx && pdc_requested(sp);
}

/* PDCBB_NTASKS handed over at submission (0: unknown). */
static unsigned script_ntasks(void)
{
    const char *nt = getenv("SPANK_PDCBB_NTASKS");
    return nt != NULL ? (unsigned)strtoul(nt, NULL, 10) : 0;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
    if (!acts_here(sp, ac, av, S_CTX_JOB_SCRIPT))
        return 0;
    pdcbb_job_t job;
    char err[PDCBB_JOB_ERR_LEN];
    if (job_from_slurm(sp, &job, err, sizeof(err)) != 0) {
        slurm_error(PFX "job %llu: burst buffer not started: %s",
                    (unsigned long long)job.job_id, err);
        return 0; /* never drain a node for a user's mistake */
    }
    pdcbb_err_t rc = pdcbb_job_prolog(&job, NULL, err, sizeof(err));
    if (rc != PDCBB_OK) {
        slurm_error(PFX "job %llu node %s: burst buffer not started: %s",
                    (unsigned long long)job.job_id, job.node_name, err);
        return 0;
    }
    slurm_info(PFX "job %llu node %s: %u daemon(s) started%s%s", (unsigned long long)job.job_id,
               job.node_name, job.cfg.servers_per_node, err[0] ? "; " : "", err);
    /* The job's filesystem (mount=yes), as the job user, before the start script (which may
     * fill it); a failure fails the job's tasks like a failed start script (task_init). */
    if (strcmp(job.cfg.mount, "yes") == 0) {
        char mnt[PATH_MAX];
        /* stage_in_files: node 0 fills it; the job's tasks start after every prolog */
        if (pdcbb_job_mount_start(&job, job.cfg.mount_path, mnt, sizeof(mnt), err, sizeof(err)) !=
                PDCBB_OK ||
            pdcbb_job_mount_stage_in(&job, err, sizeof(err)) != PDCBB_OK) {
            slurm_error(PFX "job %llu node %s: %s", (unsigned long long)job.job_id, job.node_name,
                        err);
            char msg[PDCBB_JOB_ERR_LEN + 64];
            snprintf(msg, sizeof(msg), "node %s: %s", job.node_name, err);
            pdcbb_job_start_failed_record(&job, msg);
            return 0;
        }
    }
    /* The start script, as the job user; its failure fails the job's tasks (task_init). */
    pdcbb_job_script_env_t senv = {.ntasks = script_ntasks(), .pass_prefix = "SLURM_"};
    if (pdcbb_job_script_run(&job, PDCBB_SCRIPT_START, &senv, err, sizeof(err)) != PDCBB_OK)
        slurm_error(PFX "job %llu: %s", (unsigned long long)job.job_id, err);
    return 0;
}


/*
 * The end of the job's own output gets this node's drain line (pdcbb_job_drain_line), written
 * as the job user: where the data went, whether the job's drain is complete, and for a failure
 * the `pdcbb why` command to run; the job's accounting record (where the site keeps one) gets
 * the outcome as its AdminComment ("pdcbb drain complete", "pdcbb drain failed on node N: ...").
 */
static void tell_user(const pdcbb_job_t *job, pdcbb_err_t rc, const pdcbb_drain_node_stats_t *st,
                      const char *err)
{
    char line[PDCBB_JOB_ERR_LEN * 2], out[PATH_MAX], why[PDCBB_JOB_ERR_LEN];
    pdcbb_job_drain_line(job, rc, st, err, line, sizeof(line));
    if (line[0] == '\0')
        return;
    if (spank_job_stdout(job->job_id, out, sizeof(out), why, sizeof(why)) != 0)
        slurm_info(PFX "job %llu: the job's output does not get the drain's line: %s",
                   (unsigned long long)job->job_id, why);
    else if (pdcbb_job_output_append(job, out, line, why, sizeof(why)) != PDCBB_OK)
        slurm_error(PFX "job %llu: cannot add the drain's line to the job's output: %s",
                    (unsigned long long)job->job_id, why);
    /* the job's accounting record: a failure from a failing node, complete from the node that
     * completed it (never both: the drain is complete only when every node's part succeeded).
     * sacctmgr stores the text in lower case, so it names no path: the output line and
     * `pdcbb why` do. */
    char comment[512] = "";
    if (rc != PDCBB_OK)
        snprintf(comment, sizeof(comment),
                 "pdcbb drain failed on node %s: run pdcbb why --job %llu with the drain "
                 "destination",
                 job->node_name, (unsigned long long)job->job_id);
    else if (st->complete && st->ranks_drained > 0)
        snprintf(comment, sizeof(comment), "pdcbb drain complete");
    if (comment[0] && spank_job_admin_comment(job->job_id, comment, why, sizeof(why)) != 0)
        slurm_info(PFX "job %llu: the drain's outcome is not in the job's accounting record: %s",
                   (unsigned long long)job->job_id, why);
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
    if (!acts_here(sp, ac, av, S_CTX_JOB_SCRIPT))
        return 0;
    pdcbb_job_t job;
    char err[PDCBB_JOB_ERR_LEN];
    if (job_from_slurm(sp, &job, err, sizeof(err)) != 0) {
        /* Still stop what runs: the default configuration and site file find it. */
        pdcbb_config_init(&job.cfg);
        if (site_config[0])
            pdcbb_config_load_file(&job.cfg, site_config, PDCBB_SCOPE_ALL, NULL, 0);
        expand_root(job.cfg.local_root, job.node_name, job.local_root, sizeof(job.local_root));
    } else {
        /* The end script, while the daemons still run; the drain goes on whatever it does. */
        pdcbb_job_script_env_t senv = {.ntasks = script_ntasks(), .pass_prefix = "SLURM_"};
        if (pdcbb_job_script_run(&job, PDCBB_SCRIPT_END, &senv, err, sizeof(err)) != PDCBB_OK)
            slurm_error(PFX "job %llu: %s (the drain goes on)", (unsigned long long)job.job_id,
                        err);
    }
    pdcbb_err_t rc = pdcbb_job_epilog(&job, err, sizeof(err));
    char dir[PATH_MAX];
    pdcbb_job_dir(&job, dir, sizeof(dir));
    if (rc != PDCBB_OK) {
        slurm_error(PFX "job %llu node %s: %s; node-local data kept in %s",
                    (unsigned long long)job.job_id, job.node_name, err, dir);
        return 0;
    }
    if (err[0]) /* e.g. a daemon that died during the job (recorded in daemons.died) */
        slurm_error(PFX "job %llu node %s: %s", (unsigned long long)job.job_id, job.node_name,
                    err);
    /* The drain runs as the job user; a failed drain keeps the data and never fails the
     * epilog (that would drain the node for a user's full or missing directory). */
    pdcbb_drain_node_stats_t st;
    rc = pdcbb_job_drain(&job, 0, NULL, NULL, &st, err, sizeof(err));
    tell_user(&job, rc, &st, err);
    if (rc != PDCBB_OK)
        slurm_error(PFX "job %llu node %s: %s (finish it with: pdcbb drain %s)",
                    (unsigned long long)job.job_id, job.node_name, err, dir);
    else if (err[0])
        slurm_info(PFX "job %llu node %s: %s", (unsigned long long)job.job_id, job.node_name,
                   err);
    else if (job.cfg.drain[0] && st.ranks_drained == 0)
        slurm_info(PFX "job %llu node %s: daemons stopped, nothing of this node to drain to %s",
                   (unsigned long long)job.job_id, job.node_name, job.cfg.drain);
    else if (job.cfg.drain[0])
        slurm_info(PFX "job %llu node %s: drained %llu bytes, %llu objects of %u rank(s) to %s "
                       "in %.1f s (%.0f MB/s), verified%s",
                   (unsigned long long)job.job_id, job.node_name, (unsigned long long)st.bytes,
                   (unsigned long long)st.objects, st.ranks_drained, st.drain_dir, st.seconds,
                   st.seconds > 0 ? (double)st.bytes / 1e6 / st.seconds : 0.0,
                   st.complete ? "; the job's drain is complete" : "");
    else
        slurm_info(PFX "job %llu node %s: daemons stopped, no drain requested: data removed",
                   (unsigned long long)job.job_id, job.node_name);
    return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    if (!acts_here(sp, ac, av, S_CTX_REMOTE))
        return 0;
    pdcbb_job_t job;
    char err[PDCBB_JOB_ERR_LEN], dir[PATH_MAX], num[32];
    if (job_from_slurm(sp, &job, err, sizeof(err)) != 0) {
        slurm_error(PFX "%s", err);
        return 0;
    }
    pdcbb_job_dir(&job, dir, sizeof(dir));
    snprintf(num, sizeof(num), "%llu", (unsigned long long)job.job_id);
    spank_setenv(sp, "PDCBB_JOB_DIR", dir, 1);
    spank_setenv(sp, "PDCBB_JOB_ID", num, 1);
    spank_setenv(sp, "PDCBB_NODE_NAME", job.node_name, 1);
    char mnt[PATH_MAX];
    if (strcmp(job.cfg.mount, "yes") == 0 &&
        pdcbb_job_mount_point(&job, mnt, sizeof(mnt)) == PDCBB_OK)
        spank_setenv(sp, "PDCBB_MOUNT", mnt, 1);
    /* A failed start script (this node's or another's) fails every task of the job. */
    char msg[PDCBB_JOB_ERR_LEN];
    if (pdcbb_job_script_failed(dir, msg, sizeof(msg))) {
        fprintf(stderr, "pdcbb: job %s not run: %s\n", num, msg);
        fflush(stderr);
        slurm_error(PFX "job %s not run: %s", num, msg);
        return -1;
    }
    return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    (void)sp;
    (void)ac;
    (void)av;
    free(pdc_spec);
    free(pdc_config_file);
    pdc_spec = pdc_config_file = NULL;
    return 0;
}
