/*
 * pdcbb_config_spec.c - the configuration given on a command line and in the environment:
 * --pdc specs "key=value,key=value" (user scope; config=FILE loads a user YAML file there) and
 * PDCBB_<KEY> environment variables (the debugging knobs only).
 */
#include "pdcbb_config_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *cfg_trim(char *s)
{
    char *end;

    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
        *--end = '\0';
    return s;
}

pdcbb_err_t pdcbb_config_parse_spec(pdcbb_config_t *c, const char *spec, char *err,
                                    size_t errlen)
{
    static const char source[] = "--pdc";
    pdcbb_err_t rc = PDCBB_OK;
    char *copy = NULL;
    pdcbb_config_t *work = NULL;
    unsigned item_no = 0;

    if (c == NULL) {
        pdcbb_errf(err, errlen, "pdcbb_config_parse_spec: no config");
        rc = PDCBB_ERR_INVAL;
        goto done;
    }
    if (spec == NULL)
        goto done;
    copy = strdup(spec);
    work = malloc(sizeof(*work));
    if (copy == NULL || work == NULL) {
        pdcbb_errf(err, errlen, "%s: out of memory", source);
        rc = PDCBB_ERR_NOMEM;
        goto done;
    }
    if (cfg_trim(copy)[0] == '\0')
        goto done; /* "--pdc" alone, or blanks */
    memcpy(work, c, sizeof(*work));
    for (char *p = copy;;) {
        char *comma = strchr(p, ',');
        char *item, *eq, *key, *value;

        if (comma != NULL)
            *comma = '\0';
        item_no++;
        item = cfg_trim(p);
        if (item[0] == '\0') {
            pdcbb_errf(err, errlen, "%s: item %u is empty (use key=value,key=value)", source,
                     item_no);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        eq = strchr(item, '=');
        if (eq == NULL) {
            /* a yes/no key alone is "yes" (--pdc=capacity=20G,mount) */
            const pdcbb_config_key_t *k = NULL;
            if (cfg_lookup(item, PDCBB_SCOPE_USER, source, "config", &k, NULL, 0) != PDCBB_OK ||
                !(k->flags & PDCBB_CFG_F_SWITCH)) {
                pdcbb_errf(err, errlen, "%s: item '%s' has no '=' (use key=value)", source, item);
                rc = PDCBB_ERR_CONFIG;
                goto done;
            }
            key = item;
            value = (char *)"yes";
        } else {
            *eq = '\0';
            key = cfg_trim(item);
            value = cfg_trim(eq + 1);
        }
        if (key[0] == '\0') {
            pdcbb_errf(err, errlen, "%s: item '=%s' has no key (use key=value)", source, value);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        if (value[0] == '\0') {
            pdcbb_errf(err, errlen, "%s: item '%s=' has an empty value", source, key);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        if (strcmp(key, "config") == 0 || strcmp(key, "yaml") == 0) {
            rc = pdcbb_config_load_file(work, value, PDCBB_SCOPE_USER, err, errlen);
            if (rc == PDCBB_ERR_NOT_FOUND && err != NULL && errlen > 0) {
                char inner[PDCBB_CONFIG_ERR_LEN];
                snprintf(inner, sizeof(inner), "%s", err);
                pdcbb_errf(err, errlen, "%s: %s=%s", source, key, inner);
            }
        } else {
            rc = cfg_set(work, key, value, PDCBB_SCOPE_USER, source, "config", err, errlen);
        }
        if (rc != PDCBB_OK)
            goto done;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    memcpy(c, work, sizeof(*c));
done:
    free(work);
    free(copy);
    return rc;
}

pdcbb_err_t pdcbb_config_apply_env(pdcbb_config_t *c, char *err, size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    pdcbb_config_t *work = NULL;

    if (c == NULL) {
        pdcbb_errf(err, errlen, "pdcbb_config_apply_env: no config");
        rc = PDCBB_ERR_INVAL;
        goto done;
    }
    work = malloc(sizeof(*work));
    if (work == NULL) {
        pdcbb_errf(err, errlen, "environment: out of memory");
        rc = PDCBB_ERR_NOMEM;
        goto done;
    }
    memcpy(work, c, sizeof(*work));
    for (size_t i = 0; i < cfg_nkeys; i++) {
        const pdcbb_config_key_t *k = &cfg_keys[i];
        char var[80], where[96];
        const char *value;

        if ((k->scope & PDCBB_SCOPE_ENV) == 0)
            continue;
        value = getenv(pdcbb_config_env_name(k, var, sizeof(var)));
        if (value == NULL || value[0] == '\0') /* set but empty counts as unset */
            continue;
        snprintf(where, sizeof(where), "environment: %s", var);
        rc = cfg_apply(work, k, value, where, err, errlen);
        if (rc != PDCBB_OK)
            goto done;
    }
    memcpy(c, work, sizeof(*c));
done:
    free(work);
    return rc;
}
