/*
 * hdf5_file_check.c - a plain libhdf5 C program (Debian's serial HDF5, nothing of pdcbb):
 * writes a chunked, compressed-free 2-D dataset of doubles and an attribute to FILE, closes
 * it, opens it again and checks every value (130-mount, 99-slurm-mount: HDF5 through the job's
 * filesystem).
 *
 *   hdf5_file_check write FILE [ROWS]   create FILE with a ROWS x 1000 dataset "/grid/t"
 *   hdf5_file_check read FILE [ROWS]    check it
 *
 * Prints "hdf5 FILE: R x 1000 ok" and exits 0, or says what differs and exits 1.
 */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLS 1000

static double value(hsize_t r, hsize_t c)
{
    return (double)r * 1000.5 + (double)c / 8.0;
}

static int check_file(const char *path, hsize_t rows)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        fprintf(stderr, "hdf5 %s: cannot open\n", path);
        return 1;
    }
    hid_t d = H5Dopen2(f, "/grid/t", H5P_DEFAULT);
    hid_t s = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[2] = {0, 0};
    if (s < 0 || H5Sget_simple_extent_dims(s, dims, NULL) != 2 || dims[0] != rows ||
        dims[1] != COLS) {
        fprintf(stderr, "hdf5 %s: /grid/t is not %llu x %d\n", path, (unsigned long long)rows,
                COLS);
        return 1;
    }
    double *v = malloc(rows * COLS * sizeof(double));
    if (H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) {
        fprintf(stderr, "hdf5 %s: cannot read /grid/t\n", path);
        return 1;
    }
    for (hsize_t r = 0; r < rows; r++)
        for (hsize_t c = 0; c < COLS; c++)
            if (v[r * COLS + c] != value(r, c)) {
                fprintf(stderr, "hdf5 %s: t[%llu][%llu] = %g, not %g\n", path,
                        (unsigned long long)r, (unsigned long long)c, v[r * COLS + c], value(r, c));
                return 1;
            }
    int step = -1;
    hid_t a = H5Aopen(d, "step", H5P_DEFAULT);
    if (a < 0 || H5Aread(a, H5T_NATIVE_INT, &step) < 0 || step != 42) {
        fprintf(stderr, "hdf5 %s: attribute step is %d, not 42\n", path, step);
        return 1;
    }
    H5Aclose(a);
    free(v);
    H5Sclose(s);
    H5Dclose(d);
    H5Fclose(f);
    printf("hdf5 %s: %llu x %d ok\n", path, (unsigned long long)rows, COLS);
    return 0;
}

static int write_file(const char *path, hsize_t rows)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) {
        fprintf(stderr, "hdf5 %s: cannot create\n", path);
        return 1;
    }
    hid_t g = H5Gcreate2(f, "/grid", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = {rows, COLS}, chunk[2] = {rows < 64 ? rows : 64, COLS};
    hid_t s = H5Screate_simple(2, dims, NULL);
    hid_t p = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(p, 2, chunk);
    hid_t d = H5Dcreate2(g, "t", H5T_IEEE_F64LE, s, H5P_DEFAULT, p, H5P_DEFAULT);
    double *v = malloc(rows * COLS * sizeof(double));
    for (hsize_t r = 0; r < rows; r++)
        for (hsize_t c = 0; c < COLS; c++)
            v[r * COLS + c] = value(r, c);
    if (d < 0 || H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) {
        fprintf(stderr, "hdf5 %s: cannot write /grid/t\n", path);
        return 1;
    }
    hid_t as = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(d, "step", H5T_STD_I32LE, as, H5P_DEFAULT, H5P_DEFAULT);
    int step = 42;
    H5Awrite(a, H5T_NATIVE_INT, &step);
    H5Aclose(a);
    H5Sclose(as);
    free(v);
    H5Dclose(d);
    H5Pclose(p);
    H5Sclose(s);
    H5Gclose(g);
    if (H5Fclose(f) < 0) {
        fprintf(stderr, "hdf5 %s: cannot close\n", path);
        return 1;
    }
    printf("hdf5 %s: %llu x %d written\n", path, (unsigned long long)rows, COLS);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "write") != 0 && strcmp(argv[1], "read") != 0)) {
        fprintf(stderr, "usage: hdf5_file_check write|read FILE [ROWS]\n");
        return 2;
    }
    hsize_t rows = argc > 3 ? strtoull(argv[3], NULL, 10) : 500;
    return strcmp(argv[1], "write") == 0 ? write_file(argv[2], rows) : check_file(argv[2], rows);
}
