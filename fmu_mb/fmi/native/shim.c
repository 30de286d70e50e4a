/*
 * fmu_mb Python shim: finds and starts a Python interpreter for an fmu_mb FMU
 * inside a process that has not loaded Python (a plain C/C++ co-simulation
 * master), with no environment variables set by the user.
 *
 * fmu_mb.fmi.packaging compiles this file at package time with the system C
 * compiler into libfmu_mb_pyshim.so, placed next to the FMU's binary (front.c),
 * which calls fmu_mb_pyshim_ensure() from fmi2Instantiate.  Nothing is linked
 * against libpython, so the FMU loads on any machine; what it needs is looked
 * for at instantiation:
 *
 *   - Python already running in the process (a Python host such as fmpy): used
 *     as it is.
 *   - Otherwise candidate interpreters, in this order: $PYTHONEXECUTABLE (only
 *     it, when set), $PYTHONHOME/bin/python3.X (only it, when set), the
 *     interpreter that built the FMU (FMU_MB_PYTHON_EXECUTABLE), python3.X on
 *     PATH, python3 on PATH.  Each is asked (one short child process) for its
 *     version, whether numpy and scipy are installed, and its shared
 *     libpython.  The first that is CPython FMU_MB_PYTHON_VERSION with numpy,
 *     scipy and a shared libpython is loaded: libpython with RTLD_GLOBAL (the
 *     FMU's pythonfmu binary and extension modules such as numpy resolve their
 *     Python symbols there), its program name set to the interpreter (so that
 *     a virtual environment's site-packages are used), and started.
 *   - When none fits, fmu_mb_pyshim_ensure returns -1 with one line saying
 *     what it looked for and why each candidate did not fit.
 *
 * The interpreter is started here, so that pythonfmu finds it running, does
 * not own it, and never finalises it at process exit (numpy and scipy do not
 * survive finalisation in an embedded interpreter).  No signal handlers are
 * installed, and the GIL is released with this thread's state kept.
 *
 * FMU_MB_PYTHON_EXECUTABLE and FMU_MB_PYTHON_VERSION (C string literals) come
 * from the generated header fmu_mb_pyshim_config.h.  No Python headers are
 * needed: the few Python functions are looked up with dlsym.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "fmu_mb_pyshim_config.h"

#ifndef FMU_MB_PYTHON_EXECUTABLE
#error "FMU_MB_PYTHON_EXECUTABLE must be defined by fmu_mb_pyshim_config.h"
#endif
#ifndef FMU_MB_PYTHON_VERSION
#error "FMU_MB_PYTHON_VERSION must be defined by fmu_mb_pyshim_config.h"
#endif

#define EXPORT __attribute__((visibility("default")))

extern char** environ;

typedef int (*IsInitializedFn)(void);
typedef void (*InitializeExFn)(int);
typedef void* (*SaveThreadFn)(void);
typedef wchar_t* (*DecodeLocaleFn)(const char*, size_t*);
typedef void (*SetProgramNameFn)(const wchar_t*);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int started = 0;
static char failure[4096];

/* Exported so that a test (or a curious user) can check which interpreter the
 * shim was built for: nm -D libfmu_mb_pyshim.so | grep fmu_mb_pyshim. */
EXPORT const char* fmu_mb_pyshim_python_executable(void)
{
    return FMU_MB_PYTHON_EXECUTABLE;
}

EXPORT const char* fmu_mb_pyshim_python_version(void)
{
    return FMU_MB_PYTHON_VERSION;
}

/* The probe a candidate interpreter runs: version, missing packages, executable, libpython. */
static const char PROBE[] =
    "import os, sys, sysconfig, importlib.util as u\n"
    "v = '%d.%d' % sys.version_info[:2]\n"
    "miss = [m for m in ('numpy', 'scipy') if u.find_spec(m) is None]\n"
    "g = sysconfig.get_config_var\n"
    "names = [n for n in (g('INSTSONAME'), g('LDLIBRARY'), 'libpython%s%s.so.1.0' % (v, sys.abiflags))"
    " if n and '.so' in n]\n"
    "dirs = [d for d in (g('LIBDIR'), g('LIBPL')) if d]\n"
    "dirs += [os.path.join(d, g('MULTIARCH')) for d in dirs if g('MULTIARCH')]\n"
    "dirs.append(os.path.join(sys.base_prefix, 'lib'))\n"
    "lib = next((os.path.join(d, n) for d in dirs for n in names"
    " if os.path.isfile(os.path.join(d, n))), '')\n"
    "print(sys.implementation.name + ' ' + v, ','.join(miss) or '-', sys.executable, lib, sep='\\t')\n";

static void append(char* buf, size_t cap, const char* fmt, const char* a, const char* b)
{
    size_t len = strlen(buf);
    if (len + 1 < cap) {
        snprintf(buf + len, cap - len, fmt, a, b);
    }
}

static int is_executable(const char* path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Resolve a command name on PATH; returns 0 and fills out when found. */
static int which(const char* name, char* out, size_t cap)
{
    const char* path = getenv("PATH");
    if (path == NULL) {
        return -1;
    }
    const char* p = path;
    while (*p) {
        const char* end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > 0 && n + strlen(name) + 2 < cap) {
            memcpy(out, p, n);
            out[n] = '/';
            strcpy(out + n + 1, name);
            if (is_executable(out)) {
                return 0;
            }
        }
        if (!end) {
            break;
        }
        p = end + 1;
    }
    return -1;
}

/* Run exe -c PROBE; fills line (the probe's first output line). 0 on success. */
static int probe(const char* exe, char* line, size_t cap, char* why, size_t whycap)
{
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(why, whycap, "cannot create a pipe: %s", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", 1 /* O_WRONLY */, 0);
    char* argv[] = {(char*)exe, (char*)"-c", (char*)PROBE, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, exe, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        snprintf(why, whycap, "cannot run it: %s", strerror(rc));
        return -1;
    }
    size_t used = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct pollfd pfd = {fds[0], POLLIN, 0};
        int r = poll(&pfd, 1, 1000);
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (t1.tv_sec - t0.tv_sec > 60) {
            kill(pid, SIGKILL);
            snprintf(why, whycap, "it did not answer within 60 s");
            break;
        }
        if (r <= 0) {
            continue;
        }
        ssize_t n = read(fds[0], line + used, cap - 1 - used);
        if (n <= 0) {
            break;
        }
        used += (size_t)n;
        if (used >= cap - 1) {
            break;
        }
    }
    close(fds[0]);
    line[used] = '\0';
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    char* nl = strchr(line, '\n');
    if (nl) {
        *nl = '\0';
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || used == 0) {
        if (!why[0]) {
            snprintf(why, whycap, "it is not a working Python (exit status %d)",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        }
        return -1;
    }
    return 0;
}

/* Start the interpreter exe whose libpython is lib. 0 on success. */
static int start(const char* exe, const char* lib, char* why, size_t whycap)
{
    void* handle = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
    if (handle == NULL) {
        snprintf(why, whycap, "cannot load its libpython %s: %s", lib, dlerror());
        return -1;
    }
    IsInitializedFn is_init = (IsInitializedFn)dlsym(handle, "Py_IsInitialized");
    InitializeExFn init = (InitializeExFn)dlsym(handle, "Py_InitializeEx");
    SaveThreadFn save = (SaveThreadFn)dlsym(handle, "PyEval_SaveThread");
    DecodeLocaleFn decode = (DecodeLocaleFn)dlsym(handle, "Py_DecodeLocale");
    SetProgramNameFn set_name = (SetProgramNameFn)dlsym(handle, "Py_SetProgramName");
    if (!is_init || !init || !save) {
        snprintf(why, whycap, "%s does not export the Python C API", lib);
        return -1;
    }
    if (is_init()) {
        return 0;
    }
    if (getenv("PYTHONHOME") == NULL) {
        setenv("PYTHONEXECUTABLE", exe, 1);
        if (decode && set_name) {
            wchar_t* name = decode(exe, NULL);   /* kept for the life of the process */
            if (name) {
                set_name(name);
            }
        }
    }
    init(0);
    (void)save();
    return 0;
}

/* Try one candidate; returns 0 when it was started. */
static int try_candidate(const char* label, const char* exe)
{
    char line[8192] = "";
    char why[1024] = "";
    if (!is_executable(exe)) {
        append(failure, sizeof failure, "%s %s: not found; ", label, exe);
        return -1;
    }
    if (probe(exe, line, sizeof line, why, sizeof why) == 0) {
        char* fields[4] = {0};
        char* save = NULL;
        int k = 0;
        for (char* tok = strtok_r(line, "\t", &save); tok && k < 4; tok = strtok_r(NULL, "\t", &save)) {
            fields[k++] = tok;
        }
        if (k < 3) {
            snprintf(why, sizeof why, "unexpected answer to the probe");
        } else if (strcmp(fields[0], "cpython " FMU_MB_PYTHON_VERSION) != 0) {
            snprintf(why, sizeof why, "it is %s", fields[0]);
        } else if (strcmp(fields[1], "-") != 0) {
            snprintf(why, sizeof why, "it lacks %s", fields[1]);
        } else if (k < 4 || !fields[3][0]) {
            snprintf(why, sizeof why, "it has no shared libpython");
        } else if (start(fields[2], fields[3], why, sizeof why) == 0) {
            return 0;
        }
    }
    char item[1400];
    snprintf(item, sizeof item, "%s (%s)", exe, why);
    append(failure, sizeof failure, "%s %s; ", label, item);
    return -1;
}

/*
 * Make sure a suitable Python runs in this process.  Returns 0, or -1 with a
 * one-line reason (also returned by every later call) in *reason.
 */
EXPORT int fmu_mb_pyshim_ensure(const char** reason)
{
    pthread_mutex_lock(&lock);
    if (started) {
        pthread_mutex_unlock(&lock);
        return 0;
    }
    IsInitializedFn running = (IsInitializedFn)dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    if (running != NULL && running()) {
        Dl_info info;
        /* Promote a libpython loaded locally by the host to the global scope. */
        if (dladdr((void*)running, &info) != 0 && info.dli_fname != NULL) {
            (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
        }
        started = 1;
        pthread_mutex_unlock(&lock);
        return 0;
    }
    failure[0] = '\0';
    int ok = -1;
    const char* user = getenv("PYTHONEXECUTABLE");
    const char* home = getenv("PYTHONHOME");
    char path[4096];
    if (user && user[0]) {
        ok = try_candidate("PYTHONEXECUTABLE =", user);
    } else if (home && home[0]) {
        snprintf(path, sizeof path, "%s/bin/python" FMU_MB_PYTHON_VERSION, home);
        ok = try_candidate("PYTHONHOME gives", path);
    } else {
        ok = try_candidate("the building interpreter", FMU_MB_PYTHON_EXECUTABLE);
        if (ok != 0) {
            if (which("python" FMU_MB_PYTHON_VERSION, path, sizeof path) == 0) {
                ok = try_candidate("PATH's python" FMU_MB_PYTHON_VERSION, path);
            } else {
                append(failure, sizeof failure, "%s%s; ",
                       "no python" FMU_MB_PYTHON_VERSION " on PATH", "");
            }
        }
        if (ok != 0) {
            if (which("python3", path, sizeof path) == 0) {
                ok = try_candidate("PATH's python3", path);
            } else {
                append(failure, sizeof failure, "%s%s; ", "no python3 on PATH", "");
            }
        }
    }
    if (ok == 0) {
        started = 1;
        pthread_mutex_unlock(&lock);
        return 0;
    }
    char text[sizeof failure];
    snprintf(text, sizeof text,
             "fmu_mb: no Python to run this FMU: it needs CPython " FMU_MB_PYTHON_VERSION
             " with numpy and scipy and a shared libpython; looked at: %s"
             "set PYTHONEXECUTABLE to such an interpreter (see the FMU's documentation/index.html)",
             failure);
    memcpy(failure, text, sizeof failure);
    pthread_mutex_unlock(&lock);
    if (reason) {
        *reason = failure;
    }
    return -1;
}
