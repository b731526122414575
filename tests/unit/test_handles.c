/*
 * test_handles.c - the client's handle table: ids are never 0, stale ids and ids of the wrong
 * kind are refused, slots are reused with a new generation, foreach and reset behave.
 */
#include <stdlib.h>

#include "client.h"
#include "unit_check.h"

static void count_cb(pdcid_t id, void *ptr, void *arg)
{
    (void)id;
    (void)ptr;
    (*(int *)arg)++;
}

static void remove_cb(pdcid_t id, void *ptr, void *arg)
{
    (void)ptr;
    (void)arg;
    client_handle_remove(id, client_handle_kind(id));
}

int main(void)
{
    int a = 1, b = 2, c = 3;
    pdcbb_err_t e;
    pdcid_t ia = client_handle_new(CLIENT_H_CONT, &a);
    pdcid_t ib = client_handle_new(CLIENT_H_OBJ, &b);
    CHECK(ia != 0 && ib != 0 && ia != ib);
    CHECK(client_handle_get(ia, CLIENT_H_CONT, &e) == &a);
    CHECK(client_handle_get(ib, CLIENT_H_OBJ, &e) == &b);
    CHECK(client_handle_kind(ia) == CLIENT_H_CONT);

    /* Wrong kind. */
    CHECK(client_handle_get(ia, CLIENT_H_OBJ, &e) == NULL);
    CHECK_ERR(e, PDCBB_ERR_WRONG_TYPE);
    CHECK(client_handle_remove(ia, CLIENT_H_OBJ) == NULL);
    CHECK(client_handle_get(ia, CLIENT_H_CONT, &e) == &a); /* still live */

    /* Foreign and garbage ids. */
    static const pdcid_t junk[] = {0, 1, 0xffffffffffffffffull, 0x0500000100000063ull,
                                   0x0001000100000001ull};
    for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
        CHECK(client_handle_get(junk[i], CLIENT_H_CONT, &e) == NULL);
        CHECK_ERR(e, PDCBB_ERR_BAD_ID);
        CHECK(client_handle_kind(junk[i]) == CLIENT_H_NONE);
    }
    /* Invalid kinds cannot be created. */
    CHECK(client_handle_new(CLIENT_H_NONE, &c) == 0);
    CHECK(client_handle_new(CLIENT_H_KIND_MAX_, &c) == 0);

    /* Stale after remove, even when the slot is reused. */
    CHECK(client_handle_remove(ia, CLIENT_H_CONT) == &a);
    CHECK(client_handle_get(ia, CLIENT_H_CONT, &e) == NULL);
    CHECK_ERR(e, PDCBB_ERR_BAD_ID);
    CHECK(client_handle_remove(ia, CLIENT_H_CONT) == NULL);
    pdcid_t ic = client_handle_new(CLIENT_H_CONT, &c);
    CHECK(ic != ia && (ic & 0xffffffffu) == (ia & 0xffffffffu)); /* same slot, new generation */
    CHECK(client_handle_get(ia, CLIENT_H_CONT, &e) == NULL);
    CHECK(client_handle_get(ic, CLIENT_H_CONT, &e) == &c);

    /* Many handles, foreach, removal during foreach, reset. */
    pdcid_t many[1000];
    for (int i = 0; i < 1000; i++) {
        many[i] = client_handle_new(i % 2 ? CLIENT_H_REGION : CLIENT_H_OBJ_PROP, &a);
        CHECK(many[i] != 0);
    }
    CHECK(client_handle_count() == 1002);
    int n = 0;
    client_handle_foreach(CLIENT_H_REGION, count_cb, &n);
    CHECK(n == 500);
    client_handle_foreach(CLIENT_H_OBJ_PROP, remove_cb, NULL);
    CHECK(client_handle_count() == 502);
    CHECK(client_handle_get(many[0], CLIENT_H_OBJ_PROP, &e) == NULL);
    CHECK(client_handle_get(many[1], CLIENT_H_REGION, &e) == &a);
    client_handle_reset();
    CHECK(client_handle_count() == 0);
    CHECK(client_handle_get(many[1], CLIENT_H_REGION, &e) == NULL);
    CHECK(client_handle_get(ib, CLIENT_H_OBJ, &e) == NULL);
    pdcid_t after = client_handle_new(CLIENT_H_OBJ, &b);
    CHECK(after != 0 && after != ib && client_handle_get(ib, CLIENT_H_OBJ, &e) == NULL);
    UNIT_DONE("test_handles");
}
