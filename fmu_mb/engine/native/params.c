/*
 * fmu_mb engine: the interpreter of the compiled parameter program (params.h). The program is
 * made and verified by fmu_mb/engine/params.py, whose ParamProgram.run is this function's
 * Python twin: the same operations in the same order (IEEE double arithmetic, libm), so the
 * data agree with what build(**overrides) gives.
 *
 * Layout (ints): MAGIC, VERSION, np, ndata, ntemp, then strings (the model file, the np
 * parameter names, the np reasons why a parameter is fixed, "" for a compiled one; each its
 * length then its UTF-8 bytes), then instructions:
 *   BEGIN n p1..pn   the statement that follows depends on parameters p1..pn (blamed on error)
 *   PARAM k          push params[k]
 *   CONST i          push consts[i]
 *   UNARY f          replace the top by f(top)            (f: MBP_UNARY order below)
 *   BINARY f         pop b, pop a, push f(a, b)           (f: MBP_BINARY order below)
 *   STORE slot       pop into data[slot]
 *   SET k            temps[k] = top (it stays on the stack)   (k < ntemp)
 *   GET k            push temps[k] (written by a SET before)
 *   GUARD c          pop b, pop a; the test a c b must hold (c: lt le gt ge eq ne)
 *   CHECK c, string  the same for a check of the model's builder; its message when it fails
 *                    is the string (the message build() gives)
 *   FIXED 0          pop b, pop a; a == b must hold (a fixed parameter keeps its built value)
 *   END
 * A subexpression used more than once is computed once, kept by SET and pushed again by GET
 * (heavy_top's program: 1.7e6 ints written out, far fewer with its temporaries).
 * Everything is checked: indices, stack depth, the end of the code, a temporary read before
 * it is written; a malformed program returns -1 and never reads or writes out of bounds.
 * No globals; one allocation, the ntemp temporaries (at most one per two ints of code).
 */
#include "params.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MBP_MAGIC 0x3150424D
#define MBP_VERSION 3
#define MBP_STACK 64

enum { OP_END, OP_BEGIN, OP_PARAM, OP_CONST, OP_UNARY, OP_BINARY, OP_STORE, OP_GUARD,
       OP_FIXED, OP_SET, OP_GET, OP_CHECK };
enum { U_NEG, U_SQRT, U_SIN, U_COS, U_TAN, U_ASIN, U_ACOS, U_ATAN, U_EXP, U_LOG, U_LOG10,
       U_SINH, U_COSH, U_TANH, U_FABS, U_EXPM1, U_LOG1P, U_LOG2, U_ASINH, U_ACOSH, U_ATANH,
       U_CBRT, U_COUNT };
enum { B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_ATAN2, B_HYPOT, B_COUNT };
enum { C_LT, C_LE, C_GT, C_GE, C_EQ, C_NE, C_COUNT };

static const char *const CMP_TEXT[C_COUNT] = {"<", "<=", ">", ">=", "==", "!="};

static void say(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (!err || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Append to err (what is there stays). */
static void add(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    size_t used;
    if (!err || errlen == 0)
        return;
    for (used = 0; used < errlen && err[used]; used++)
        ;
    if (used + 1 >= errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(err + used, errlen - used, fmt, ap);
    va_end(ap);
}

typedef struct {
    const int *code;
    int ncode;
    int model;          /* index of the model file string's length in code */
    int names;          /* index of the first parameter name's length      */
    int reasons;        /* index of the first reason's length              */
    int np;
} Header;

/* Position after the string at code[pc] (its length then its bytes), or -1. */
static int skip_string(const int *code, int ncode, int pc)
{
    int n;
    if (pc < 0 || pc >= ncode)
        return -1;
    n = code[pc];
    if (n < 0 || n > ncode - pc - 1)
        return -1;
    return pc + 1 + n;
}

static void add_string(char *err, size_t errlen, const int *code, int pc)
{
    int i, j, n = code[pc];
    char buf[65];
    for (i = 0; i < n; i += 64) {
        for (j = 0; j < 64 && i + j < n; j++) {
            int c = code[pc + 1 + i + j];
            buf[j] = (char)(c > 0 && c < 256 ? c : '?');
        }
        buf[j] = '\0';
        add(err, errlen, "%s", buf);
    }
}

static void add_nth(char *err, size_t errlen, const Header *h, int first, int k)
{
    int pc = first, i;
    for (i = 0; i < k; i++)
        pc = skip_string(h->code, h->ncode, pc);     /* checked when the header was read */
    add_string(err, errlen, h->code, pc);
}

static void add_name(char *err, size_t errlen, const Header *h, int k)
{
    add_nth(err, errlen, h, h->names, k);
}

/* "l1=0.1, m1=2" for the parameters blamed by the statement at code[blame]. */
/* The shortest %g form of x that reads back as x. */
static void add_number(char *err, size_t errlen, double x)
{
    char buf[40];
    int p;
    for (p = 15; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    add(err, errlen, "%s", buf);
}

/* "l1=0.1, m1=2" (or "--set l1=0.1 --set m1=2") for the parameters blamed. */
static void add_who(char *err, size_t errlen, const Header *h, const int *blame, int nblame,
                    const double *params, const char *pre, const char *sep)
{
    int i;
    for (i = 0; i < nblame; i++) {
        add(err, errlen, "%s%s", i ? sep : "", pre);
        add_name(err, errlen, h, blame[i]);
        add(err, errlen, "=");
        add_number(err, errlen, params[blame[i]]);
    }
}

static int fail(char *err, size_t errlen, const char *what, int pc)
{
    say(err, errlen, "malformed parameter program: %s at code[%d]; expected the program "
        "fmu_mb.engine.params made for this model data", what, pc);
    return -1;
}

static double unary(int f, double a)
{
    switch (f) {
    case U_NEG: return -a;
    case U_SQRT: return sqrt(a);
    case U_SIN: return sin(a);
    case U_COS: return cos(a);
    case U_TAN: return tan(a);
    case U_ASIN: return asin(a);
    case U_ACOS: return acos(a);
    case U_ATAN: return atan(a);
    case U_EXP: return exp(a);
    case U_LOG: return log(a);
    case U_LOG10: return log10(a);
    case U_SINH: return sinh(a);
    case U_COSH: return cosh(a);
    case U_TANH: return tanh(a);
    case U_FABS: return fabs(a);
    case U_EXPM1: return expm1(a);
    case U_LOG1P: return log1p(a);
    case U_LOG2: return log2(a);
    case U_ASINH: return asinh(a);
    case U_ACOSH: return acosh(a);
    case U_ATANH: return atanh(a);
    default: return cbrt(a);
    }
}

static double binary(int f, double a, double b)
{
    switch (f) {
    case B_ADD: return a + b;
    case B_SUB: return a - b;
    case B_MUL: return a * b;
    case B_DIV: return a / b;
    case B_POW: return pow(a, b);
    case B_ATAN2: return atan2(a, b);
    default: return hypot(a, b);
    }
}

/* 1 when a c b holds for the comparison c (C_LT ... C_NE), 0 when not, -1 for another c. */
static int holds(int c, double a, double b)
{
    switch (c) {
    case C_LT: return a < b;
    case C_LE: return a <= b;
    case C_GT: return a > b;
    case C_GE: return a >= b;
    case C_EQ: return a == b;
    case C_NE: return a != b;
    default: return -1;
    }
}

static int run(const MbpProgram *prog, const Header *hp, int pc, const double *params,
               int np, double *data, int ndata, double *temps, int ntemp, char *err,
               size_t errlen)
{
    double stack[MBP_STACK];
    int sp = 0, i, nblame = 0;
    const int *code = prog->code, *blame = NULL;
    Header h = *hp;

    for (;;) {
        int op, arg;
        if (pc >= prog->ncode)
            return fail(err, errlen, "no END", pc);
        op = code[pc];
        if (op == OP_END)
            return sp == 0 ? 0 : fail(err, errlen, "values left on the stack", pc);
        if (op == OP_BEGIN) {
            if (pc + 1 >= prog->ncode || code[pc + 1] < 0 || code[pc + 1] > prog->ncode - pc - 2)
                return fail(err, errlen, "BEGIN past the end", pc);
            nblame = code[pc + 1];
            blame = code + pc + 2;
            for (i = 0; i < nblame; i++)
                if (blame[i] < 0 || blame[i] >= np)
                    return fail(err, errlen, "parameter index out of range", pc);
            if (sp != 0)
                return fail(err, errlen, "values left on the stack", pc);
            pc += 2 + nblame;
            continue;
        }
        if (pc + 1 >= prog->ncode)
            return fail(err, errlen, "operand past the end", pc);
        arg = code[pc + 1];
        switch (op) {
        case OP_PARAM:
            if (arg < 0 || arg >= np)
                return fail(err, errlen, "parameter index out of range", pc);
            if (sp >= MBP_STACK)
                return fail(err, errlen, "stack overflow", pc);
            stack[sp++] = params[arg];
            break;
        case OP_CONST:
            if (arg < 0 || arg >= prog->nconst)
                return fail(err, errlen, "constant index out of range", pc);
            if (sp >= MBP_STACK)
                return fail(err, errlen, "stack overflow", pc);
            stack[sp++] = prog->consts[arg];
            break;
        case OP_UNARY:
            if (arg < 0 || arg >= U_COUNT)
                return fail(err, errlen, "unknown function", pc);
            if (sp < 1)
                return fail(err, errlen, "stack underflow", pc);
            stack[sp - 1] = unary(arg, stack[sp - 1]);
            break;
        case OP_BINARY:
            if (arg < 0 || arg >= B_COUNT)
                return fail(err, errlen, "unknown function", pc);
            if (sp < 2)
                return fail(err, errlen, "stack underflow", pc);
            stack[sp - 2] = binary(arg, stack[sp - 2], stack[sp - 1]);
            sp--;
            break;
        case OP_SET:
            if (arg < 0 || arg >= ntemp)
                return fail(err, errlen, "temporary index out of range", pc);
            if (sp < 1)
                return fail(err, errlen, "stack underflow", pc);
            temps[arg] = stack[sp - 1];
            pc += 2;
            continue;
        case OP_GET:
            if (arg < 0 || arg >= ntemp)
                return fail(err, errlen, "temporary index out of range", pc);
            if (isnan(temps[arg]))
                return fail(err, errlen, "temporary read before it is written", pc);
            if (sp >= MBP_STACK)
                return fail(err, errlen, "stack overflow", pc);
            stack[sp++] = temps[arg];
            break;
        case OP_STORE:
            if (arg < 0 || arg >= ndata)
                return fail(err, errlen, "data index out of range", pc);
            if (sp < 1)
                return fail(err, errlen, "stack underflow", pc);
            data[arg] = stack[--sp];
            pc += 2;
            continue;
        case OP_GUARD: {
            double a, b;
            int ok;
            if (sp < 2)
                return fail(err, errlen, "stack underflow", pc);
            b = stack[--sp];
            a = stack[--sp];
            ok = holds(arg, a, b);
            if (ok < 0)
                return fail(err, errlen, "unknown comparison", pc);
            if (!ok) {
                say(err, errlen, "parameter(s) ");
                add_who(err, errlen, &h, blame, nblame, params, "", ", ");
                add(err, errlen, ": model file ");
                add_string(err, errlen, code, h.model);
                add(err, errlen, " took a branch at build time on a number derived from them "
                    "(");
                add_number(err, errlen, a);
                add(err, errlen, " %s ", CMP_TEXT[arg]);
                add_number(err, errlen, b);
                add(err, errlen, " no longer holds), which the compiled model cannot follow; "
                    "rebuild with fmu-mb build ");
                add_string(err, errlen, code, h.model);
                add(err, errlen, " ");
                add_who(err, errlen, &h, blame, nblame, params, "--set ", " ");
                return nblame ? blame[0] + 1 : 1;
            }
            pc += 2;
            continue;
        }
        case OP_CHECK: {
            double a, b;
            int ok, end = skip_string(code, prog->ncode, pc + 2);
            if (end < 0)
                return fail(err, errlen, "CHECK's message runs past the end", pc);
            if (sp < 2)
                return fail(err, errlen, "stack underflow", pc);
            b = stack[--sp];
            a = stack[--sp];
            ok = holds(arg, a, b);
            if (ok < 0)
                return fail(err, errlen, "unknown comparison", pc);
            if (!ok) {
                say(err, errlen, "");
                add_string(err, errlen, code, pc + 2);
                add(err, errlen, " (parameter(s) ");
                add_who(err, errlen, &h, blame, nblame, params, "", ", ");
                add(err, errlen, ": ");
                add_number(err, errlen, a);
                add(err, errlen, " %s ", CMP_TEXT[arg]);
                add_number(err, errlen, b);
                add(err, errlen, " does not hold); model file ");
                add_string(err, errlen, code, h.model);
                add(err, errlen, " refuses these values");
                return nblame ? blame[0] + 1 : 1;
            }
            pc = end;
            continue;
        }
        case OP_FIXED: {
            double a, b;
            if (sp < 2)
                return fail(err, errlen, "stack underflow", pc);
            if (nblame < 1)
                return fail(err, errlen, "FIXED without its parameter", pc);
            b = stack[--sp];
            a = stack[--sp];
            if (a != b) {
                say(err, errlen, "parameter '");
                add_name(err, errlen, &h, blame[0]);
                add(err, errlen, "' = ");
                add_number(err, errlen, a);
                add(err, errlen, " cannot change from its built value ");
                add_number(err, errlen, b);
                add(err, errlen, " in the compiled model: ");
                add_nth(err, errlen, &h, h.reasons, blame[0]);
                add(err, errlen, "; rebuild with fmu-mb build ");
                add_string(err, errlen, code, h.model);
                add(err, errlen, " ");
                add_who(err, errlen, &h, blame, 1, params, "--set ", " ");
                return blame[0] + 1;
            }
            pc += 2;
            continue;
        }
        default:
            return fail(err, errlen, "unknown instruction", pc);
        }
        if (!isfinite(stack[sp - 1])) {
            say(err, errlen, "parameter(s) ");
            add_who(err, errlen, &h, blame, nblame, params, "", ", ");
            add(err, errlen, ": a number of the model derived from them is not finite (NaN "
                "or infinity); expected values for which model file ");
            add_string(err, errlen, code, h.model);
            add(err, errlen, "'s formulas are defined");
            return nblame ? blame[0] + 1 : 1;
        }
        pc += 2;
    }
}

int mbp_run(const MbpProgram *prog, const double *params, int np, double *data, int ndata,
            char *err, size_t errlen)
{
    int pc, i, ntemp, rc;
    const int *code;
    double *temps = NULL;
    Header h;

    if (err && errlen)
        err[0] = '\0';
    if (!prog || !prog->code || prog->ncode < 6 || (prog->nconst > 0 && !prog->consts)
        || prog->nconst < 0)
        return fail(err, errlen, "no code", 0);
    code = prog->code;
    if (code[0] != MBP_MAGIC || code[1] != MBP_VERSION)
        return fail(err, errlen, "wrong magic number or version", 0);
    if (code[2] != np || code[3] != ndata || np < 0 || ndata < 0
        || (np > 0 && !params) || (ndata > 0 && !data)) {
        say(err, errlen, "parameter program for %d parameters and %d data, received %d and %d",
            code[2], code[3], np, ndata);
        return -1;
    }
    ntemp = code[4];
    if (ntemp < 0 || ntemp > prog->ncode / 2)     /* each one is written by a SET */
        return fail(err, errlen, "number of temporaries out of range", 4);
    h.code = code;
    h.ncode = prog->ncode;
    h.np = np;
    h.model = 5;
    pc = skip_string(code, prog->ncode, 5);
    h.names = pc;
    for (i = 0; i < np && pc >= 0; i++)
        pc = skip_string(code, prog->ncode, pc);
    h.reasons = pc;
    for (i = 0; i < np && pc >= 0; i++)
        pc = skip_string(code, prog->ncode, pc);
    if (pc < 0)
        return fail(err, errlen, "strings run past the end", 5);
    if (ntemp > 0) {
        temps = (double *)malloc((size_t)ntemp * sizeof(double));
        if (!temps) {
            say(err, errlen, "parameter program: no memory for its %d temporaries", ntemp);
            return -1;
        }
        for (i = 0; i < ntemp; i++)
            temps[i] = NAN;                       /* not written yet */
    }
    rc = run(prog, &h, pc, params, np, data, ndata, temps, ntemp, err, errlen);
    free(temps);
    return rc;
}
