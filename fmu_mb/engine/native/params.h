/*
 * fmu_mb engine: the compiled parameter program. The model file is Python; at build time
 * fmu_mb.engine.params traces build() with the parameters as symbols and emits, for every
 * number of the model data that depends on a parameter, an expression in the parameters, plus
 * the guards of the branches build() took on a parameter's value. At run time (the native
 * FMU's fmi2ExitInitializationMode, or mbe_set_parameters) the engine runs the program over a
 * copy of the blob's doubles, so a parameter set by the master has the effect it has in the
 * Python FMU.
 *
 * The program is a flat int code with a table of double constants (layout: params.c, format
 * version 3: a subexpression used more than once is kept in a temporary; a check of the
 * builder carries its message); it reads
 * params[0 .. np-1] and writes data[0 .. ndata-1] (the blob's one array of doubles).
 */
#ifndef FMU_MB_PARAMS_H
#define FMU_MB_PARAMS_H

#include <stddef.h>

typedef struct {
    int ncode;
    const int *code;
    int nconst;
    const double *consts;
} MbpProgram;

/* Run the program. Returns 0 on success; k + 1 when parameter k breaks a guard or makes a
 * derived number non-finite (message in err naming what was expected, e.g. "rebuild with
 * fmu-mb build MODEL.py --set NAME=VALUE"); -1 for a malformed program (or no memory for its
 * temporaries, which it allocates and frees). On failure data may be partly written: run it
 * on a scratch copy. */
int mbp_run(const MbpProgram *prog, const double *params, int np, double *data, int ndata,
            char *err, size_t errlen);

#endif
