/*
 * engine_step: the engine's own in-process step, no FMI layer (bench/native_fmu.py compiles it
 * with the engine's sources, fmu_mb/engine/native). Per step: set input 0, mbe_do_step by h,
 * mbe_outputs, read the given outputs (what an FMU step does, without the FMI calls); the input
 * is 0.1 (as bench/fmu_step.py and bench/native_fmu.py set it).
 *
 * Only the output groups of the outputs read are computed (mbe_outputs_groups), as the FMU does.
 *
 * usage: engine_step BLOB_FILE STEP N OUT_INDICES [INPUTS]   (output indices in output_spec
 * order; INPUTS: "index=value,..." held instead of input 0 at 0.1)
 * prints "cpu_us_per_step=... last=..." (CPU time after 200 warm-up steps).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blob_file.h"
#include "engine.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char** argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: engine_step BLOB_FILE STEP N OUT_INDICES\n");
        return 2;
    }
    long size;
    unsigned char* blob = read_blob(argv[1], &size);
    if (!blob)
        return 1;
    double h = atof(argv[2]);
    int n = atoi(argv[3]);
    int idx[64], nidx = 0;
    for (char* s = argv[4]; *s && nidx < 64;) {
        char* end;
        idx[nidx++] = (int)strtol(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
        if (end == s && *s) {
            break;
        }
    }
    char err[1024];
    MbEngine* e = mbe_create(blob, (size_t)size, err, sizeof err);
    if (!e) {
        fprintf(stderr, "mbe_create: %s\n", err);
        return 1;
    }
    MbeSettings st = {1, 1e-9, 1e-11, 1e-3, 1.0 / 0.0, 2000.0, 1, 10.0, 10.0, 1e-13};
    if (mbe_set_settings(e, &st, err, sizeof err) != MBE_OK
        || mbe_initialize(e, 0.0, err, sizeof err) != MBE_OK) {
        fprintf(stderr, "engine: %s\n", err);
        return 1;
    }
    int ni = mbe_n_inputs(e), no = mbe_n_outputs(e);
    double* u = calloc((size_t)ni + 1, sizeof(double));
    int given = argc > 5;
    for (char* s = given ? argv[5] : ""; *s;) {
        char* end;
        long i = strtol(s, &end, 10);
        if (*end != '=' || i < 0 || i >= ni) {
            fprintf(stderr, "INPUTS: expected index=value,... with 0 <= index < %d\n", ni);
            return 2;
        }
        u[i] = strtod(end + 1, &s);
        if (*s == ',')
            ++s;
        else if (*s)
            break;
    }
    double* y = calloc((size_t)no + 1, sizeof(double));
    double picked[64], t0 = 0.0;
    int groups = 0;
    for (int i = 0; i < nidx; ++i) {
        groups |= mbe_output_group(e, idx[i]);
    }
    int warm = 200;
    for (int k = 0; k < n + warm; ++k) {
        if (k == warm) {
            t0 = cpu_now();
        }
        if (ni > 0 && !given) {
            u[0] = 0.1;
        }
        if (mbe_do_step(e, h, u, err, sizeof err) != MBE_OK
            || mbe_outputs_groups(e, u, groups, y, err, sizeof err) != MBE_OK) {
            fprintf(stderr, "step %d: %s\n", k, err);
            return 1;
        }
        for (int i = 0; i < nidx; ++i) {
            picked[i] = y[idx[i]];
        }
    }
    double cpu = cpu_now() - t0;
    printf("cpu_us_per_step=%.4f steps=%d last=%.17g\n", 1e6 * cpu / n, n, picked[0]);
    mbe_free(e);
    free(u);
    free(y);
    free(blob);
    return 0;
}
