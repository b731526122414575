/*
 * pdcbb_config.h - configuration of a pdcbb job: site file, user file, --pdc keys, environment.
 *
 * One table drives everything (yaml/pdcbb_config.c): for each key its type, where it is
 * stored in pdcbb_config_t, its default, its bounds and who may set it (scope). Precedence is
 * built-in defaults < site file < user file < --pdc keys < environment (debugging knobs only):
 * callers apply the sources in that order, each later one overriding.
 *
 * Every error message names the source ("FILE:LINE" or "--pdc" or "environment"), the key and
 * what was wrong, for example
 *     "/etc/pdcbb/site.yaml:7: key 'max_capacity': bad size '12Q' (use a number with an
 *      optional K, M, G, T or P suffix)".
 * Not thread-safe per config object; distinct objects may be used from distinct threads.
 */
#ifndef PDCBB_CONFIG_H
#define PDCBB_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pdcbb_error.h"

#define PDCBB_CONFIG_LIST_MAX 16
#define PDCBB_CONFIG_ERR_LEN 512

/* Who may set a key. */
#define PDCBB_SCOPE_SITE 0x1u  /* the site file (plugstack.conf argument) */
#define PDCBB_SCOPE_USER 0x2u  /* the user's YAML file and --pdc keys */
#define PDCBB_SCOPE_ENV 0x4u   /* PDCBB_<KEY> environment variables (debugging knobs) */
#define PDCBB_SCOPE_JOB 0x8u   /* the job's resolved config written by the prolog */
#define PDCBB_SCOPE_ALL 0xfu

/* Data placement policies (values equal PDC's pdc_region_partition_t). */
typedef enum pdcbb_placement {
    PDCBB_PLACE_OBJ_STATIC = 0,
    PDCBB_PLACE_REGION_STATIC = 1,
    PDCBB_PLACE_REGION_DYNAMIC = 2,
    PDCBB_PLACE_REGION_LOCAL = 3,
} pdcbb_placement_t;

typedef struct pdcbb_config {
    /* site keys */
    char local_root[PATH_MAX];  /* node-local root for job directories; default /tmp/pdcbb */
    char rendezvous_dir[PATH_MAX]; /* shared dir for multi-node discovery; default ~/.pdcbb */
    uint64_t max_capacity;      /* per-node maximum a job may ask for, bytes; 0 = free space */
    char drain_roots[PDCBB_CONFIG_LIST_MAX][PATH_MAX]; /* allowed drain/stage-in roots */
    int n_drain_roots;          /* 0 = any absolute path */
    char daemon_path[PATH_MAX]; /* pdc_bbd binary; default: the installed one */
    char mount_path[PATH_MAX];  /* pdcbb_mount binary (mount=yes); default: the installed one */
    double ready_timeout;       /* seconds the prolog waits for a daemon; default 30 */
    double stage_in_timeout;    /* ... when it loads a stage_in directory; default 3600 */
    double stop_timeout;        /* seconds the epilog waits after SIGTERM; default 10 */
    double script_timeout;      /* seconds a user script may run; default 300 */
    double stranded_max_age;    /* seconds before `pdcbb admin stranded` acts; default 7 d */
    char ucx_tls[128];          /* UCX transports; default "cma,tcp" */
    char ucx_net_devices[256];  /* UCX devices; default "" (UCX's choice) */
    char listen_address[64];    /* daemon listen IP; default "" (the node's own address) */
    uint64_t lmdb_map_size;     /* LMDB map size per daemon, bytes; default 16G */
    /* user keys */
    uint64_t capacity;          /* burst-buffer bytes per node; default 1G */
    char drain[PATH_MAX];       /* drain destination; default "" (no drain) */
    char drain_share[8];        /* who may read the drain: "none" (default), "group", "all" */
    char stage_in[PATH_MAX];    /* drained directory to load at start; default "" */
    char stage_in_files[PATH_MAX]; /* directory tree copied into the mount at start; "" */
    char stage_in_owner[64];    /* whose drain stage_in may be: user name or uid; "" the job
                                 * user's own */
    char script[PATH_MAX];      /* user script run at start and end on every node; default "" */
    char mount[4];              /* "yes": the job's filesystem (pdcbb_mount) on every node */
    unsigned servers_per_node;  /* daemons per node; default 1, 1..64 */
    pdcbb_placement_t placement; /* default region placement; default obj_static */
    /* debugging knobs (site, user or environment) */
    int log_level;              /* pdcbb_log_level_t; default info */
    double request_timeout;     /* seconds a client waits for a reply; default 60 */
    double connect_timeout;     /* seconds a client waits to connect; default 5 */
    double auth_timeout;        /* seconds a daemon gives a new UCX connection to prove the
                                   job token (HELLO, AUTH) before closing it; default 1 */
    unsigned table_fanout;      /* children of a daemon in the tree the job's table is gathered
                                   through (TABLE_GATHER); default 16, 2..64 */
    char forward[8];            /* clients' requests for other nodes' daemons: "auto"
                                   (default: through their node's daemon in jobs of more than
                                   PDCBB_FORWARD_AUTO_DAEMONS daemons), "always", "never" */
} pdcbb_config_t;

/* forward: auto sends other nodes' requests through the node's daemon above this many daemons. */
#define PDCBB_FORWARD_AUTO_DAEMONS 32

/* ---- the table of keys ---- */

/* What a key's value is (docs/CONFIG.md, "Value types"), and so how its field is stored. */
typedef enum pdcbb_config_type {
    PDCBB_CFG_SIZE,      /* uint64_t bytes, "16G" */
    PDCBB_CFG_UINT,      /* unsigned, decimal */
    PDCBB_CFG_SECONDS,   /* double seconds, "30", "1.5", "30s", "2m" */
    PDCBB_CFG_STRING,    /* char[size] */
    PDCBB_CFG_PATH,      /* char[size], a path */
    PDCBB_CFG_PATH_LIST, /* drain_roots + n_drain_roots: PDCBB_CONFIG_LIST_MAX char[PATH_MAX] */
    PDCBB_CFG_PLACEMENT, /* pdcbb_placement_t */
    PDCBB_CFG_LOG_LEVEL, /* int holding a pdcbb_log_level_t */
} pdcbb_config_type_t;

#define PDCBB_CFG_F_ABSOLUTE 0x1u /* path: must be absolute when non-empty */
#define PDCBB_CFG_F_REQUIRED 0x2u /* string/path: may not be empty */
#define PDCBB_CFG_F_SWITCH   0x4u /* yes/no: in a --pdc spec the key alone means yes ("mount") */

/* Extra check of a string value: NULL when fine, else why not (a constant string). */
typedef const char *(*pdcbb_config_check_fn)(const char *value);

/* One key: everything the parsers, the printer, the checks and the tests know of it. */
typedef struct pdcbb_config_key {
    const char *name;
    pdcbb_config_type_t type;
    size_t offset;       /* of the field in pdcbb_config_t */
    size_t size;         /* of the field (the capacity of a string, including the NUL) */
    const char *def;     /* default, as text (parsed through the same code as any value) */
    uint64_t umin, umax; /* bounds of PDCBB_CFG_SIZE and PDCBB_CFG_UINT */
    double dmin, dmax;   /* bounds of PDCBB_CFG_SECONDS */
    unsigned flags;      /* PDCBB_CFG_F_* */
    unsigned scope;      /* PDCBB_SCOPE_* allowed to set it */
    /* PDCBB_CFG_STRING: the only values a non-empty value may be (NULL-terminated; an empty
     * value means the default to whoever reads it), or NULL for any */
    const char *const *values;
    pdcbb_config_check_fn check; /* optional, on non-empty values */
    const char *help;            /* one line, printed as a comment by pdcbb_config_print */
} pdcbb_config_key_t;

/*
 * The table itself (static, read-only), every key in the order pdcbb_config_print writes
 * them; *n gets how many. For tests, documentation checks and tools that list the keys.
 */
const pdcbb_config_key_t *pdcbb_config_keys(size_t *n);
/* The row of the key named name (case matters), or NULL. */
const pdcbb_config_key_t *pdcbb_config_key_find(const char *name);

/* The environment variable of key k: "PDCBB_" and its name in upper case ("PDCBB_LOG_LEVEL"),
 * into buf (len bytes, cut to fit). Returns buf. Only keys with PDCBB_SCOPE_ENV read it. */
const char *pdcbb_config_env_name(const pdcbb_config_key_t *k, char *buf, size_t len);

/* Fill c with the built-in defaults. */
void pdcbb_config_init(pdcbb_config_t *c);

/*
 * Set one key from its text value, as found in source (used in error messages). Fails with
 * PDCBB_ERR_CONFIG and a message in err (errlen bytes, may be NULL) for an unknown key, a key
 * outside scope, or a bad value. c is unchanged on failure.
 */
pdcbb_err_t pdcbb_config_set(pdcbb_config_t *c, const char *key, const char *value,
                             unsigned scope, const char *source, char *err, size_t errlen);

/*
 * Load a YAML file: a mapping of key: scalar (drain_roots: a sequence of scalars or a single
 * scalar). Errors name the file and line. PDCBB_ERR_NOT_FOUND if the file cannot be opened.
 */
pdcbb_err_t pdcbb_config_load_file(pdcbb_config_t *c, const char *path, unsigned scope,
                                   char *err, size_t errlen);

/*
 * Parse a --pdc spec "k=v,k=v,...". A key "config=FILE" (or "yaml=FILE") loads the user YAML
 * file at that point with user scope. An empty spec is valid.
 */
pdcbb_err_t pdcbb_config_parse_spec(pdcbb_config_t *c, const char *spec, char *err,
                                    size_t errlen);

/* Apply PDCBB_<UPPERCASE KEY> variables for keys with PDCBB_SCOPE_ENV. */
pdcbb_err_t pdcbb_config_apply_env(pdcbb_config_t *c, char *err, size_t errlen);

/*
 * Cross-key checks: capacity <= max_capacity (when set), drain and stage_in absolute and under
 * one of drain_roots (when any are set, after normalising "." and ".." components).
 */
pdcbb_err_t pdcbb_config_validate(const pdcbb_config_t *c, char *err, size_t errlen);

/* Print every key with its resolved value as YAML (loadable again with load_file). */
void pdcbb_config_print(const pdcbb_config_t *c, FILE *out);
/* Write the resolved config to path atomically (temporary file, fsync, rename), mode 0600. */
pdcbb_err_t pdcbb_config_write_file(const pdcbb_config_t *c, const char *path);

/*
 * Parse a size: a decimal number with an optional suffix K, M, G, T, P (powers of 1024; also
 * KB/KiB etc., case-insensitive) and optional trailing B. Rejects negatives, overflow, junk.
 */
pdcbb_err_t pdcbb_parse_size(const char *s, uint64_t *out);
/* Format bytes as "20G"/"512M"/"1234" (exact when possible) into buf. */
const char *pdcbb_format_size(uint64_t bytes, char *buf, size_t len);
/* Name of a placement ("obj_static", ...) and the reverse (-1 if unknown). */
const char *pdcbb_placement_name(pdcbb_placement_t p);
int pdcbb_placement_parse(const char *s);

#endif
