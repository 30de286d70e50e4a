/*
 * The FMI 2.0 types the C test hosts use (fmi2_host.c, native_host.c, win_host.c, me_host.c), declared
 * here so that no FMI header is needed; as fmi2TypesPlatform.h and fmi2FunctionTypes.h
 * declare them.
 */
#ifndef FMU_MB_TEST_FMI2_TYPES_H
#define FMU_MB_TEST_FMI2_TYPES_H
#include <stddef.h>

typedef void* fmi2Component;
typedef void* fmi2ComponentEnvironment;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef const char* fmi2String;
typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef struct {
    void (*logger)(fmi2ComponentEnvironment, fmi2String, fmi2Status, fmi2String, fmi2String, ...);
    void* (*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void*);
    void (*stepFinished)(fmi2ComponentEnvironment, fmi2Status);
    fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;

#endif
