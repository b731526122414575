/*
 * pdc_mpi_tags - MPI ranks racing on the same tags of the same named containers and object, as
 * PDC's cont_tags test does when run with several ranks (50-mpi.bats).
 *
 *   mpirun -np N pdc_mpi_tags [ROUNDS]
 *
 * Every rank creates containers "race-c1" and "race-c2" (the same names on every rank, so the
 * same containers) and opens object "race-o" of c1 (rank 0 creates it), then, ROUNDS times: puts
 * two tags on each, reads each back, deletes the second tag of c2 and of the object (ranks race:
 * all but one delete a tag that another rank has deleted already, which succeeds, as in PDC), meets
 * the others at a barrier and reads the deleted tags back (PDC's answer: success, value NULL, size
 * 0). A tag read before the barrier may have been deleted by another rank already; it must then
 * read as deleted, never fail, and never give another value. Prints one line per rank:
 * "rank R of N: rounds=K deletes=D read-deleted=G ok" (G: reads before the barrier that found
 * the tag deleted), or the first failure and exits 1.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdc.h"

static int rank;

#define DIE(...)                                                                                   \
    do {                                                                                           \
        printf("rank %d: ", rank);                                                                 \
        printf(__VA_ARGS__);                                                                       \
        printf(" (%s)\n", PDCbb_last_error_message());                                             \
        fflush(stdout);                                                                            \
        MPI_Abort(MPI_COMM_WORLD, 1);                                                              \
    } while (0)

static const char *const values[2] = {"some tag value", "some tag value 2 is longer than tag 1"};
static char *const names[2] = {"some tag", "some tag 2"};

typedef perr_t (*get_fn)(pdcid_t, char *, void **, pdc_var_type_t *, psize_t *);

/* Read tag t of id; 1 if it read as deleted (allowed only when may_be_gone), 0 if it held its
 * value. */
static int check_tag(get_fn get, pdcid_t id, const char *what, int t, int may_be_gone)
{
    void *v = (void *)&rank;
    pdc_var_type_t type;
    psize_t size = 99;
    if (get(id, names[t], &v, &type, &size) != SUCCEED)
        DIE("get of tag '%s' of %s failed", names[t], what);
    if (v == NULL) {
        if (size != 0)
            DIE("deleted tag '%s' of %s has size %llu, not 0", names[t], what,
                (unsigned long long)size);
        if (!may_be_gone)
            DIE("tag '%s' of %s is missing", names[t], what);
        return 1;
    }
    if (size != strlen(values[t]) + 1 || strcmp(v, values[t]) != 0)
        DIE("tag '%s' of %s reads '%.*s' (size %llu), not '%s'", names[t], what, (int)size,
            (const char *)v, (unsigned long long)size, values[t]);
    free(v);
    return 0;
}

int main(int argc, char **argv)
{
    int size, rounds = argc > 1 ? atoi(argv[1]) : 10, deletes = 0, gone = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rounds < 1)
        DIE("ROUNDS must be a whole number above 0, not '%s'", argv[1]);

    pdcid_t pdc = PDCinit("pdc");
    if (pdc == 0)
        DIE("PDCinit failed");
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    pdcid_t c1 = PDCcont_create("race-c1", cprop), c2 = PDCcont_create("race-c2", cprop);
    if (c1 == 0 || c2 == 0)
        DIE("PDCcont_create failed");
    pdcid_t oprop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    uint64_t dims[1] = {16};
    PDCprop_set_obj_type(oprop, PDC_INT);
    PDCprop_set_obj_dims(oprop, 1, dims);
    pdcid_t obj = rank == 0 ? PDCobj_create(c1, "race-o", oprop) : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0)
        obj = PDCobj_open("race-o", pdc);
    if (obj == 0)
        DIE("PDCobj_%s of race-o failed", rank == 0 ? "create" : "open");

    for (int round = 0; round < rounds; round++) {
        for (int t = 0; t < 2; t++) {
            void *v = (void *)values[t];
            psize_t n = strlen(values[t]) + 1;
            if (PDCcont_put_tag(c1, names[t], v, PDC_STRING, n) != SUCCEED ||
                PDCcont_put_tag(c2, names[t], v, PDC_STRING, n) != SUCCEED ||
                PDCobj_put_tag(obj, names[t], v, PDC_STRING, n) != SUCCEED)
                DIE("put of tag '%s' failed in round %d", names[t], round);
        }
        /* Another rank may already be deleting the second tags (it put them too). */
        for (int t = 0; t < 2; t++) {
            check_tag(PDCcont_get_tag, c1, "c1", t, 0);
            gone += check_tag(PDCcont_get_tag, c2, "c2", t, t == 1);
            gone += check_tag((get_fn)PDCobj_get_tag, obj, "race-o", t, t == 1);
        }
        if (PDCcont_del_tag(c2, names[1]) != SUCCEED)
            DIE("delete of tag '%s' of c2 failed in round %d", names[1], round);
        if (PDCobj_del_tag(obj, names[1]) != SUCCEED)
            DIE("delete of tag '%s' of race-o failed in round %d", names[1], round);
        deletes += 2;
        MPI_Barrier(MPI_COMM_WORLD);
        /* Every rank has deleted them and none puts them again before the next barrier. */
        check_tag(PDCcont_get_tag, c1, "c1", 1, 0);
        if (!check_tag(PDCcont_get_tag, c2, "c2", 1, 1) ||
            !check_tag((get_fn)PDCobj_get_tag, obj, "race-o", 1, 1))
            DIE("a deleted tag still has its value after the barrier in round %d", round);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (PDCobj_close(obj) != SUCCEED || PDCcont_close(c1) != SUCCEED ||
        PDCcont_close(c2) != SUCCEED || PDCclose(pdc) != SUCCEED)
        DIE("close failed");
    printf("rank %d of %d: rounds=%d deletes=%d read-deleted=%d ok\n", rank, size, rounds, deletes,
           gone);
    MPI_Finalize();
    return 0;
}
