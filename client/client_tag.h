/* client_tag.h - tag operations shared by containers and objects (pdc_tag.c). */
#ifndef CLIENT_TAG_H
#define CLIENT_TAG_H

#include "client.h"

/* what/owner ("container", name) only make error messages precise. */
pdcbb_err_t client_tag_put(const char *fn, uint64_t meta_id, const char *what, const char *owner,
                           const char *tag_name, const void *value, pdc_var_type_t type,
                           psize_t size);
/* *value is malloc'ed (caller frees). */
pdcbb_err_t client_tag_get(const char *fn, uint64_t meta_id, const char *what, const char *owner,
                           const char *tag_name, void **value, pdc_var_type_t *type,
                           psize_t *size);
pdcbb_err_t client_tag_del(const char *fn, uint64_t meta_id, const char *what, const char *owner,
                           const char *tag_name);
/* Ids (meta ids) with tag tag_name (and value, if match_value) on every daemon; kind 0 = any,
 * else PDCBB_META_KIND_CONT/OBJ. *ids malloc'ed. */
pdcbb_err_t client_tag_query(const char *fn, const char *tag_name, const void *value,
                             size_t value_len, int match_value, unsigned kind, uint64_t **ids,
                             int *n);

/* Append the n ids to the malloc'ed array *all of *total ids (grown, one spare slot); NOMEM,
 * *all unchanged, otherwise. */
pdcbb_err_t client_ids_append(uint64_t **all, size_t *total, const uint64_t *ids, uint32_t n,
                              const char *fn);

/* PDC_Client_query_kvtag (pdc_dart.c): object ids whose tags match kvtag's name pattern and
 * value (a pattern for PDC_STRING); *ids malloc'ed, sorted, distinct, NULL when *n is 0. */
pdcbb_err_t client_kvtag_search(const char *fn, const pdc_kvtag_t *kvtag, uint64_t **ids, int *n);

#endif
