/*
 * pdcbb_config_yaml.c - loading a YAML configuration file (pdcbb_config_load_file) with
 * libyaml's document API: one document whose top level is a mapping of key: scalar (a key of
 * type list also takes a sequence), each value set through cfg_apply; messages are
 * "FILE:LINE: key 'NAME': ...", duplicate keys, other node kinds, a NUL byte in a value and a
 * second document are refused.
 */
#include "pdcbb_config_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

static const char *cfg_node_kind(const yaml_node_t *node)
{
    switch (node->type) {
    case YAML_SCALAR_NODE: return "a single value";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

/*
 * The text of a scalar node. A plain "~" or "null" (YAML's null) is the empty string, so
 * "drain: ~" clears drain as "drain:" does. NULL if the value holds a NUL byte.
 */
static const char *cfg_scalar_text(const yaml_node_t *node)
{
    const char *v = (const char *)node->data.scalar.value;

    if (strlen(v) != node->data.scalar.length)
        return NULL;
    if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
         strcmp(v, "NULL") == 0))
        return "";
    return v;
}

/* libyaml's reader (bad encoding) reports a byte offset only: count the lines up to it. */
static size_t cfg_line_of_offset(FILE *f, size_t offset)
{
    size_t line = 1;

    if (fseek(f, 0, SEEK_SET) != 0)
        return 0;
    for (size_t i = 0; i < offset; i++) {
        int ch = getc(f);
        if (ch == EOF)
            break;
        if (ch == '\n')
            line++;
    }
    return line;
}

static void cfg_yaml_syntax_error(const yaml_parser_t *parser, FILE *f, const char *path,
                                  char *err, size_t errlen)
{
    const char *problem = parser->problem ? parser->problem : "unknown problem";

    switch (parser->error) {
    case YAML_MEMORY_ERROR:
        pdcbb_errf(err, errlen, "%s: out of memory while reading YAML", path);
        break;
    case YAML_READER_ERROR:
        pdcbb_errf(err, errlen, "%s:%zu: cannot read YAML: %s (byte offset %zu)", path,
                 cfg_line_of_offset(f, parser->problem_offset), problem,
                 parser->problem_offset);
        break;
    default:
        if (parser->context != NULL)
            pdcbb_errf(err, errlen, "%s:%zu: YAML syntax error: %s, column %zu (%s at line %zu)",
                     path, parser->problem_mark.line + 1, problem,
                     parser->problem_mark.column + 1, parser->context,
                     parser->context_mark.line + 1);
        else
            pdcbb_errf(err, errlen, "%s:%zu: YAML syntax error: %s, column %zu", path,
                     parser->problem_mark.line + 1, problem, parser->problem_mark.column + 1);
        break;
    }
}

/* Apply a root mapping node of doc to c; messages are "PATH:LINE: ...". */
static pdcbb_err_t cfg_load_mapping(pdcbb_config_t *c, yaml_document_t *doc, yaml_node_t *root,
                                    const char *path, unsigned scope, char *err, size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    size_t first_line[CFG_NKEYS_MAX] = {0}; /* 1-based line of each key seen so far */
    char source[CFG_WHERE_LEN], where[CFG_WHERE_LEN + 96];
    const char **items = NULL;

    for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
         pair < root->data.mapping.pairs.top; pair++) {
        yaml_node_t *kn = yaml_document_get_node(doc, pair->key);
        yaml_node_t *vn = yaml_document_get_node(doc, pair->value);
        const pdcbb_config_key_t *k = NULL;
        const char *key, *value;
        size_t line, idx;

        if (kn == NULL || vn == NULL) {
            pdcbb_errf(err, errlen, "%s: malformed YAML document", path);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        line = kn->start_mark.line + 1;
        snprintf(source, sizeof(source), "%s:%zu", path, line);
        if (kn->type != YAML_SCALAR_NODE || (key = cfg_scalar_text(kn)) == NULL) {
            pdcbb_errf(err, errlen, "%s: a key must be a plain name, found %s", source,
                     cfg_node_kind(kn));
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        rc = cfg_lookup(key, scope, source, NULL, &k, err, errlen);
        if (rc != PDCBB_OK)
            goto done;
        idx = (size_t)(k - cfg_keys);
        if (first_line[idx] != 0) {
            pdcbb_errf(err, errlen, "%s: duplicate key '%s' (first set on line %zu)", source,
                     k->name, first_line[idx]);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        first_line[idx] = line;
        /* a value's own line is more helpful than its key's when they differ */
        snprintf(source, sizeof(source), "%s:%zu", path, vn->start_mark.line + 1);
        snprintf(where, sizeof(where), "%s: key '%s'", source, k->name);

        if (vn->type == YAML_SEQUENCE_NODE && k->type == PDCBB_CFG_PATH_LIST) {
            size_t n = (size_t)(vn->data.sequence.items.top - vn->data.sequence.items.start);
            free(items);
            items = calloc(n + 1, sizeof(*items));
            if (items == NULL) {
                pdcbb_errf(err, errlen, "%s: out of memory", where);
                rc = PDCBB_ERR_NOMEM;
                goto done;
            }
            for (size_t i = 0; i < n; i++) {
                yaml_node_t *in = yaml_document_get_node(doc, vn->data.sequence.items.start[i]);
                if (in == NULL || in->type != YAML_SCALAR_NODE ||
                    (items[i] = cfg_scalar_text(in)) == NULL) {
                    pdcbb_errf(err, errlen, "%s:%zu: key '%s': list entries must be single paths",
                             path, (in ? in->start_mark.line : vn->start_mark.line) + 1,
                             k->name);
                    rc = PDCBB_ERR_CONFIG;
                    goto done;
                }
            }
            rc = cfg_apply_list(c, k, items, n, where, err, errlen);
            if (rc != PDCBB_OK)
                goto done;
            continue;
        }
        if (vn->type != YAML_SCALAR_NODE) {
            pdcbb_errf(err, errlen, "%s: expected %s, found %s", where,
                       k->type == PDCBB_CFG_PATH_LIST ? "a path or a list of paths"
                                                      : "a single value",
                       cfg_node_kind(vn));
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        value = cfg_scalar_text(vn);
        if (value == NULL) {
            pdcbb_errf(err, errlen, "%s: value contains a NUL character", where);
            rc = PDCBB_ERR_CONFIG;
            goto done;
        }
        /* a single YAML scalar is one path, even with a comma in it */
        if (k->type == PDCBB_CFG_PATH_LIST)
            rc = cfg_apply_list(c, k, &value, value[0] ? 1 : 0, where, err, errlen);
        else
            rc = cfg_apply(c, k, value, where, err, errlen);
        if (rc != PDCBB_OK)
            goto done;
    }
done:
    free(items);
    return rc;
}

pdcbb_err_t pdcbb_config_load_file(pdcbb_config_t *c, const char *path, unsigned scope,
                                   char *err, size_t errlen)
{
    pdcbb_err_t rc = PDCBB_OK;
    FILE *f = NULL;
    yaml_parser_t parser;
    bool parser_ready = false;
    yaml_document_t doc, extra;
    bool doc_loaded = false, extra_loaded = false;
    yaml_node_t *root;
    pdcbb_config_t *work = NULL;
    struct stat st;

    if (c == NULL || path == NULL) {
        pdcbb_errf(err, errlen, "pdcbb_config_load_file: no config or no path");
        rc = PDCBB_ERR_INVAL;
        goto done;
    }
    f = fopen(path, "rbe");
    if (f == NULL) {
        pdcbb_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        rc = PDCBB_ERR_NOT_FOUND;
        goto done;
    }
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        pdcbb_errf(err, errlen, "%s: cannot open: %s", path, strerror(EISDIR));
        rc = PDCBB_ERR_NOT_FOUND;
        goto done;
    }
    if (!yaml_parser_initialize(&parser)) {
        pdcbb_errf(err, errlen, "%s: out of memory", path);
        rc = PDCBB_ERR_NOMEM;
        goto done;
    }
    parser_ready = true;
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &doc)) {
        cfg_yaml_syntax_error(&parser, f, path, err, errlen);
        rc = parser.error == YAML_MEMORY_ERROR ? PDCBB_ERR_NOMEM : PDCBB_ERR_CONFIG;
        goto done;
    }
    doc_loaded = true;
    root = yaml_document_get_root_node(&doc);
    if (root == NULL)
        goto done; /* an empty file (or only comments) sets nothing */
    if (root->type == YAML_SCALAR_NODE && cfg_scalar_text(root) != NULL &&
        cfg_scalar_text(root)[0] == '\0')
        goto done; /* "---" alone */
    if (root->type != YAML_MAPPING_NODE) {
        pdcbb_errf(err, errlen, "%s:%zu: the top level must be a mapping of 'key: value' lines, "
                 "found %s", path, root->start_mark.line + 1, cfg_node_kind(root));
        rc = PDCBB_ERR_CONFIG;
        goto done;
    }
    /* a second document would be silently ignored: refuse it (and syntax errors after it) */
    if (!yaml_parser_load(&parser, &extra)) {
        cfg_yaml_syntax_error(&parser, f, path, err, errlen);
        rc = parser.error == YAML_MEMORY_ERROR ? PDCBB_ERR_NOMEM : PDCBB_ERR_CONFIG;
        goto done;
    }
    extra_loaded = true;
    if (yaml_document_get_root_node(&extra) != NULL) {
        pdcbb_errf(err, errlen, "%s:%zu: only one YAML document is allowed", path,
                 yaml_document_get_root_node(&extra)->start_mark.line + 1);
        rc = PDCBB_ERR_CONFIG;
        goto done;
    }
    work = malloc(sizeof(*work));
    if (work == NULL) {
        pdcbb_errf(err, errlen, "%s: out of memory", path);
        rc = PDCBB_ERR_NOMEM;
        goto done;
    }
    memcpy(work, c, sizeof(*work));
    rc = cfg_load_mapping(work, &doc, root, path, scope, err, errlen);
    if (rc == PDCBB_OK)
        memcpy(c, work, sizeof(*c));
done:
    free(work);
    if (extra_loaded)
        yaml_document_delete(&extra);
    if (doc_loaded)
        yaml_document_delete(&doc);
    if (parser_ready)
        yaml_parser_delete(&parser);
    if (f != NULL)
        fclose(f);
    return rc;
}
