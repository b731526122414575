/*
 * pdc_mpi_meta - an MPI client for the bats tests: every rank initialises PDC (collectively,
 * through PMIx under mpirun / srun --mpi=pmix), rank r creates object "<prefix>-r" with a tag,
 * then every rank opens the object of rank (r+1) % size and checks its tag.
 *   mpirun -np N pdc_mpi_meta [PREFIX]
 * Prints one line per rank: "rank R of N: discovery=METHOD nservers=S ok".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdc.h"
#include "pdc_client_connect.h"

int main(int argc, char **argv)
{
    int rank, size, fail = 0;
    const char *prefix = argc > 1 ? argv[1] : "mpiobj";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    pdcid_t pdc = PDCinit("pdc");
    if (pdc == 0) {
        printf("rank %d: PDCinit failed: %s\n", rank, PDCbb_last_error_message());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    pdcid_t cprop = PDCprop_create(PDC_CONT_CREATE, pdc);
    char cname[128];
    snprintf(cname, sizeof(cname), "%s-cont", prefix);
    pdcid_t cont = PDCcont_create_col(cname, cprop);
    if (cont == 0) {
        printf("rank %d: PDCcont_create_col: %s\n", rank, PDCbb_last_error_message());
        fail = 1;
    }

    pdcid_t oprop = PDCprop_create(PDC_OBJ_CREATE, pdc);
    uint64_t dims[2] = {(uint64_t)size, 1000};
    PDCprop_set_obj_type(oprop, PDC_FLOAT);
    PDCprop_set_obj_dims(oprop, 2, dims);
    char name[128];
    snprintf(name, sizeof(name), "%s-%d", prefix, rank);
    pdcid_t obj = fail ? 0 : PDCobj_create(cont, name, oprop);
    if (obj == 0 || PDCobj_put_tag(obj, "writer", &rank, PDC_INT, sizeof(int)) != SUCCEED) {
        printf("rank %d: create %s: %s\n", rank, name, PDCbb_last_error_message());
        fail = 1;
    }
    /* A collective create through PDCobj_create_mpi as well. */
    char shared[128];
    snprintf(shared, sizeof(shared), "%s-shared", prefix);
    pdcid_t sobj = fail ? 0 : PDCobj_create_mpi(cont, shared, oprop, 0, MPI_COMM_WORLD);
    if (!fail && sobj == 0) {
        printf("rank %d: PDCobj_create_mpi: %s\n", rank, PDCbb_last_error_message());
        fail = 1;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    int peer = (rank + 1) % size;
    snprintf(name, sizeof(name), "%s-%d", prefix, peer);
    pdcid_t pobj = PDCobj_open(name, pdc);
    int *writer = NULL;
    pdc_var_type_t t;
    psize_t sz;
    if (pobj == 0 || PDCobj_get_tag(pobj, "writer", (void **)&writer, &t, &sz) != SUCCEED) {
        printf("rank %d: open %s: %s\n", rank, name, PDCbb_last_error_message());
        fail = 1;
    } else if (t != PDC_INT || sz != sizeof(int) || *writer != peer) {
        printf("rank %d: tag of %s is wrong\n", rank, name);
        fail = 1;
    }
    free(writer);
    /* The collective tag search: rank 0 asks, every rank gets the one object rank 0 tagged. */
    int zero = 0, nres = -1;
    uint64_t *found = NULL;
    pdc_kvtag_t kv = {.name = "writer", .size = sizeof(int), .type = PDC_INT, .value = &zero};
    if (PDC_Client_query_kvtag_mpi(&kv, &nres, &found, MPI_COMM_WORLD) != SUCCEED || nres != 1 ||
        found == NULL) {
        printf("rank %d: PDC_Client_query_kvtag_mpi writer=0 gave %d: %s\n", rank, nres,
               PDCbb_last_error_message());
        fail = 1;
    }
    free(found);
    if (!fail)
        printf("rank %d of %d: discovery=%s nservers=%d ok\n", rank, size,
               PDCbb_discovery_method(), PDCbb_nservers());
    fflush(stdout);
    if (pobj)
        PDCobj_close(pobj);
    if (sobj)
        PDCobj_close(sobj);
    if (obj)
        PDCobj_close(obj);
    PDCprop_close(oprop);
    PDCprop_close(cprop);
    if (cont)
        PDCcont_close(cont);
    PDCclose(pdc);
    int any = 0;
    MPI_Allreduce(&fail, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
