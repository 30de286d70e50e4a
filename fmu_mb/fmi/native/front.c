/*
 * fmu_mb FMI front: the FMI 2.0 co-simulation entry points of an fmu_mb FMU.
 *
 * fmu_mb.fmi.packaging compiles this file into the FMU's binary
 * binaries/linux64/<modelIdentifier>.so (linked to libfmu_mb_pyshim.so, shim.c,
 * with RUNPATH $ORIGIN) and puts pythonfmu 0.7.0's binary beside it as
 * libfmu_mb_pythonfmu.so.  Every fmi2* call passes here first:
 *
 *   - fmi2Instantiate checks its arguments before anything reaches pythonfmu
 *     (which crashed the host on each of these): the instance name (non-NULL
 *     UTF-8), the GUID (FMU_MB_GUID, compiled in from modelDescription.xml by
 *     packaging.py), the fmuType and the resource location, a local file URI
 *     (file:///p, file://localhost/p or file:/p, percent-escapes decoded) of an
 *     existing resources folder; pythonfmu gets "file://" + the decoded path.
 *     Then it makes sure a suitable Python runs (shim.c) and loads pythonfmu's
 *     binary.  Anything wrong: one logged line saying what, and NULL.
 *   - The library pins itself at the first fmi2Instantiate (RTLD_NODELETE), so
 *     that a host that dlcloses and re-dlopens it between instantiations (ecospy)
 *     keeps its instances; a call on a component that is not a live instance is
 *     refused and logged through the most recent live instance.
 *   - The FMI 2.0 co-simulation state machine: a call that the standard does
 *     not allow in the instance's state returns fmi2Error with a logged
 *     message and does not reach the instance.  Extension: the state is not
 *     changed by a refused call, and an instance stays usable after fmi2Error
 *     and after fmi2Discard (doStep may be retried).
 *   - A status funnel: pythonfmu can only return fmi2OK or fmi2Fatal from
 *     Python, so the Python adapter (slave.py) reports a refused call by
 *     logging a message with status fmi2Error, fmi2Discard or fmi2Warning.  The
 *     front's logger sees it, and the call returns the worst status logged
 *     during it.
 *   - Errors are always logged: pythonfmu is told to log everything; the front
 *     passes every message with a status other than fmi2OK to the host's
 *     logger whatever fmi2SetDebugLogging said, and fmi2OK messages only when
 *     logging is on (and their category is enabled).
 *   - FMU states: only states made by a live instance of this FMU (fmi2GetFMUstate,
 *     fmi2DeSerializeFMUstate; an instance's states are freed with it) are
 *     accepted; a state the adapter finds corrupt
 *     (guard.py: format version, tag, SHA-256 checksum, shape) is freed and
 *     fmi2DeSerializeFMUstate returns fmi2Error.
 *   - Strings set by the host must be UTF-8; value references from RESERVED_VR
 *     up are the front's own: TIME_VR reads the adapter's last successful time
 *     for fmi2GetRealStatus(fmi2LastSuccessfulTime), TERMINATED_VR whether the
 *     last doStep failed in the model for fmi2GetBooleanStatus(fmi2Terminated)
 *     (pythonfmu's answers were wrong after a discard and after a retry).
 *   - A message longer than MESSAGE_CAP bytes is shortened in the middle (a
 *     huge value echoed in it).
 *   - After a fmi2Fatal from pythonfmu (an exception that escaped the adapter;
 *     pythonfmu has then released the Python object) every further call on the
 *     instance returns fmi2Error instead of crashing the host, and
 *     fmi2FreeInstance leaves the broken object alone.
 *
 * The FMI 2.0 types are declared here so that no header is needed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef FMU_MB_FRONT_CONFIG
#include "fmu_mb_front_config.h"     /* FMU_MB_GUID: the GUID of this FMU's modelDescription.xml */
#endif

#define EXPORT __attribute__((visibility("default")))

typedef void* fmi2Component;
typedef void* fmi2ComponentEnvironment;
typedef void* fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef char fmi2Char;
typedef const fmi2Char* fmi2String;
typedef char fmi2Byte;
typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef enum { fmi2DoStepStatus, fmi2PendingStatus, fmi2LastSuccessfulTime, fmi2Terminated } fmi2StatusKind;

typedef void (*fmi2CallbackLogger)(fmi2ComponentEnvironment, fmi2String, fmi2Status, fmi2String,
                                   fmi2String, ...);
typedef struct {
    fmi2CallbackLogger logger;
    void* (*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void*);
    void (*stepFinished)(fmi2ComponentEnvironment, fmi2Status);
    fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;

extern int fmu_mb_pyshim_ensure(const char** reason);

#define INNER_NAME "libfmu_mb_pythonfmu.so"

/* ------------------------------------------------------------------ the inner binary */
static struct {
    void* handle;
    fmi2Component (*Instantiate)(fmi2String, fmi2Type, fmi2String, fmi2String,
                                 const fmi2CallbackFunctions*, fmi2Boolean, fmi2Boolean);
    void (*FreeInstance)(fmi2Component);
    fmi2Status (*SetDebugLogging)(fmi2Component, fmi2Boolean, size_t, const fmi2String[]);
    fmi2Status (*SetupExperiment)(fmi2Component, fmi2Boolean, fmi2Real, fmi2Real, fmi2Boolean,
                                  fmi2Real);
    fmi2Status (*EnterInitializationMode)(fmi2Component);
    fmi2Status (*ExitInitializationMode)(fmi2Component);
    fmi2Status (*Terminate)(fmi2Component);
    fmi2Status (*Reset)(fmi2Component);
    fmi2Status (*GetReal)(fmi2Component, const fmi2ValueReference[], size_t, fmi2Real[]);
    fmi2Status (*GetInteger)(fmi2Component, const fmi2ValueReference[], size_t, fmi2Integer[]);
    fmi2Status (*GetBoolean)(fmi2Component, const fmi2ValueReference[], size_t, fmi2Boolean[]);
    fmi2Status (*GetString)(fmi2Component, const fmi2ValueReference[], size_t, fmi2String[]);
    fmi2Status (*SetReal)(fmi2Component, const fmi2ValueReference[], size_t, const fmi2Real[]);
    fmi2Status (*SetInteger)(fmi2Component, const fmi2ValueReference[], size_t,
                             const fmi2Integer[]);
    fmi2Status (*SetBoolean)(fmi2Component, const fmi2ValueReference[], size_t,
                             const fmi2Boolean[]);
    fmi2Status (*SetString)(fmi2Component, const fmi2ValueReference[], size_t,
                            const fmi2String[]);
    fmi2Status (*GetFMUstate)(fmi2Component, fmi2FMUstate*);
    fmi2Status (*SetFMUstate)(fmi2Component, fmi2FMUstate);
    fmi2Status (*FreeFMUstate)(fmi2Component, fmi2FMUstate*);
    fmi2Status (*SerializedFMUstateSize)(fmi2Component, fmi2FMUstate, size_t*);
    fmi2Status (*SerializeFMUstate)(fmi2Component, fmi2FMUstate, fmi2Byte[], size_t);
    fmi2Status (*DeSerializeFMUstate)(fmi2Component, const fmi2Byte[], size_t, fmi2FMUstate*);
    fmi2Status (*DoStep)(fmi2Component, fmi2Real, fmi2Real, fmi2Boolean);
    fmi2Status (*GetRealStatus)(fmi2Component, const fmi2StatusKind, fmi2Real*);
    fmi2Status (*GetBooleanStatus)(fmi2Component, const fmi2StatusKind, fmi2Boolean*);
} inner;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Keep this library loaded for the life of the process (RTLD_NODELETE).  Some hosts (ecospy)
 * dlclose and dlopen the FMU's binary again between two fmi2Instantiate calls of one FMU;
 * without this, the instance list below would be lost with the library's static memory and
 * the first instance would become unknown.  pythonfmu's binary and Python stay loaded anyway.
 * Called with `lock` held.
 */
static void pin_self(void)
{
    static int pinned = 0;
    if (pinned) {
        return;
    }
    Dl_info info;
    if (dladdr((void*)&pin_self, &info) != 0 && info.dli_fname != NULL &&
        dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != NULL) {
        pinned = 1;    /* the handle is deliberately never closed */
    }
}

static int load_inner(char* why, size_t cap)
{
    if (inner.handle) {
        return 0;
    }
    Dl_info info;
    if (dladdr((void*)&load_inner, &info) == 0 || info.dli_fname == NULL) {
        snprintf(why, cap, "fmu_mb: cannot find the FMU's own binary (dladdr failed)");
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s", info.dli_fname);
    char* slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path + 1) : 0;
    snprintf(path + dir, sizeof path - dir, "%s", INNER_NAME);
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(why, cap, "fmu_mb: cannot load %s: %s", path, dlerror());
        return -1;
    }
#define LOAD(name)                                                                       \
    do {                                                                                 \
        *(void**)(&inner.name) = dlsym(h, "fmi2" #name);                                 \
        if (inner.name == NULL) {                                                        \
            snprintf(why, cap, "fmu_mb: %s has no fmi2" #name, path);                     \
            return -1;                                                                   \
        }                                                                                \
    } while (0)
    LOAD(Instantiate); LOAD(FreeInstance); LOAD(SetDebugLogging); LOAD(SetupExperiment);
    LOAD(EnterInitializationMode); LOAD(ExitInitializationMode); LOAD(Terminate); LOAD(Reset);
    LOAD(GetReal); LOAD(GetInteger); LOAD(GetBoolean); LOAD(GetString);
    LOAD(SetReal); LOAD(SetInteger); LOAD(SetBoolean); LOAD(SetString);
    LOAD(GetFMUstate); LOAD(SetFMUstate); LOAD(FreeFMUstate); LOAD(SerializedFMUstateSize);
    LOAD(SerializeFMUstate); LOAD(DeSerializeFMUstate); LOAD(DoStep); LOAD(GetRealStatus);
    LOAD(GetBooleanStatus);
#undef LOAD
    inner.handle = h;
    return 0;
}

/* ------------------------------------------------------------------ instances */
enum {
    INSTANTIATED = 1,
    INIT_MODE = 2,
    STEP_MODE = 4,       /* slaveInitialized: stepComplete (and stepFailed: retry allowed) */
    TERMINATED = 8,
    ANY = 15,
};

#define MAGIC 0x666d756dU

typedef struct Instance {
    unsigned magic;
    fmi2Component inner;
    int state;
    int broken;                    /* pythonfmu returned fmi2Fatal: inner is unusable */
    int logging;                   /* the host's loggingOn */
    char** categories;
    size_t n_categories;
    int worst;                     /* worst status logged during the current call */
    char* name;
    fmi2CallbackFunctions host;
    fmi2CallbackFunctions mine;    /* given to pythonfmu; must outlive its component */
    struct Instance* next;
} Instance;

static Instance* instances = NULL;

typedef struct State {
    fmi2FMUstate state;
    const struct Instance* owner;  /* the instance that made it: freed with it */
    struct State* next;
} State;

static State* states = NULL;

static Instance* find(fmi2Component c)
{
    pthread_mutex_lock(&lock);
    Instance* it = instances;
    while (it && it != (Instance*)c) {
        it = it->next;
    }
    pthread_mutex_unlock(&lock);
    return (it && it->magic == MAGIC) ? it : NULL;
}

static void emit(const Instance* in, fmi2Status status, const char* category, const char* message);

/*
 * A call on a component that is not a live instance of this FMU has no logger of its own: the
 * refusal is logged through the most recently instantiated live instance, if there is one.
 */
static void refuse_unknown(fmi2Component c, const char* function)
{
    char text[512];
    snprintf(text, sizeof text, "fmu_mb: %s: refused: the component %p is not a live instance "
             "of this FMU (%s); nothing was done", function, c,
             c == NULL ? "NULL" : "already freed, never made by this FMU's binary, or corrupt");
    pthread_mutex_lock(&lock);
    if (instances != NULL) {
        emit(instances, fmi2Error, "logStatusError", text);
    }
    pthread_mutex_unlock(&lock);
}

static int known_state(fmi2FMUstate s)
{
    pthread_mutex_lock(&lock);
    State* it = states;
    while (it && it->state != s) {
        it = it->next;
    }
    pthread_mutex_unlock(&lock);
    return it != NULL;
}

static void add_state(fmi2FMUstate s, const Instance* owner)
{
    State* node = malloc(sizeof *node);
    if (!node) {
        return;
    }
    pthread_mutex_lock(&lock);
    node->state = s;
    node->owner = owner;
    node->next = states;
    states = node;
    pthread_mutex_unlock(&lock);
}

static void remove_state(fmi2FMUstate s)
{
    pthread_mutex_lock(&lock);
    for (State** p = &states; *p; p = &(*p)->next) {
        if ((*p)->state == s) {
            State* dead = *p;
            *p = dead->next;
            free(dead);
            break;
        }
    }
    pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------------ logging */
static int category_enabled(const Instance* in, const char* category)
{
    if (in->n_categories == 0) {
        return 1;
    }
    for (size_t i = 0; i < in->n_categories; ++i) {
        if (category && strcmp(in->categories[i], category) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Longest message passed to the host; a longer one keeps its head and its tail. */
#define MESSAGE_CAP 2000
#define MESSAGE_TAIL 500

/* i moved back to the start of a UTF-8 character of text */
static size_t char_start(const char* text, size_t i)
{
    while (i > 0 && ((unsigned char)text[i] & 0xC0) == 0x80) {
        --i;
    }
    return i;
}

/*
 * Pass one message to the host; '%' is doubled since hosts treat the message as a format, and
 * a message longer than MESSAGE_CAP bytes (a huge value echoed in it) is shortened in the
 * middle, saying how much was left out.
 */
static void emit(const Instance* in, fmi2Status status, const char* category, const char* message)
{
    if (in->host.logger == NULL) {
        return;
    }
    size_t n = strlen(message);
    size_t head = n, tail_start = n;
    char note[96] = "";
    if (n > MESSAGE_CAP) {
        head = char_start(message, MESSAGE_CAP - MESSAGE_TAIL - sizeof note);
        tail_start = char_start(message, n - MESSAGE_TAIL);
        snprintf(note, sizeof note, " [... %zu bytes of this message left out ...] ",
                 tail_start - head);
    }
    size_t extra = 0;
    for (size_t i = 0; i < n; ++i) {
        extra += message[i] == '%' && (i < head || i >= tail_start);
    }
    size_t len = head + (n - tail_start) + strlen(note) + extra + 1;
    char small[1024];
    char* text = (len <= sizeof small) ? small : malloc(len);
    if (text == NULL) {
        return;
    }
    size_t j = 0;
    for (size_t i = 0; i < n; ++i) {
        if (i == head) {
            memcpy(text + j, note, strlen(note));
            j += strlen(note);
            i = tail_start;
            if (i >= n) {
                break;
            }
        }
        text[j++] = message[i];
        if (message[i] == '%') {
            text[j++] = '%';
        }
    }
    text[j] = '\0';
    in->host.logger(in->host.componentEnvironment, in->name, status,
                    category ? category : "", text);
    if (text != small) {
        free(text);
    }
}

/*
 * Set once the Python adapter said it is a GuardedSlave (guard.py logs GUARD_CATEGORY at
 * fmi2ExitInitializationMode, before any status query is allowed; the message is not passed
 * on).  Only then does the front read the time of
 * the last successful step through TIME_VR; a plain pythonfmu slave would fail on that.  All
 * instances of this binary share one slave class.
 */
#define GUARD_CATEGORY "fmu_mb:guard"
static int guarded_slave = 0;

/* The logger pythonfmu calls (its environment is our Instance). */
static void inner_logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status,
                         fmi2String category, fmi2String message, ...)
{
    (void)name;
    Instance* in = (Instance*)env;
    if (in == NULL || in->magic != MAGIC) {
        return;
    }
    if (status == fmi2OK && category && strcmp(category, GUARD_CATEGORY) == 0) {
        guarded_slave = 1;
        return;
    }
    if ((int)status > in->worst) {
        in->worst = (int)status;
    }
    if (status != fmi2OK || (in->logging && category_enabled(in, category))) {
        emit(in, status, category, message ? message : "");
    }
}

static fmi2Status fail(Instance* in, fmi2Status status, const char* fmt, ...)
{
    char text[2048];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    emit(in, status, status == fmi2Error ? "logStatusError" : "logStatusDiscard", text);
    return status;
}

static const char* state_name(int s)
{
    switch (s) {
    case INSTANTIATED: return "instantiated";
    case INIT_MODE: return "initialization mode";
    case STEP_MODE: return "slave initialized (stepping)";
    case TERMINATED: return "terminated";
    default: return "unknown";
    }
}

/*
 * Common entry check: a valid, unbroken instance in one of the allowed states.
 * Returns the instance, or NULL after logging; *status then holds the status to return.
 */
static Instance* enter(fmi2Component c, const char* function, int allowed, fmi2Status* status)
{
    Instance* in = find(c);
    *status = fmi2Error;
    if (in == NULL) {
        refuse_unknown(c, function);
        return NULL;
    }
    if (in->broken) {
        fail(in, fmi2Error, "%s: refused: this instance failed fatally earlier and cannot be "
             "used any more; free it and instantiate a new one", function);
        return NULL;
    }
    if (!(in->state & allowed)) {
        char list[256] = "";
        const int all[] = {INSTANTIATED, INIT_MODE, STEP_MODE, TERMINATED};
        for (int i = 0; i < 4; ++i) {
            if (allowed & all[i]) {
                size_t len = strlen(list);
                snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", state_name(all[i]));
            }
        }
        fail(in, fmi2Error, "%s: not allowed in state '%s' (FMI 2.0 allows it in: %s); the "
             "call was refused and changed nothing", function, state_name(in->state), list);
        return NULL;
    }
    in->worst = fmi2OK;
    return in;
}

/* Combine pythonfmu's status with the worst status the adapter logged during the call. */
static fmi2Status leave(Instance* in, fmi2Status status, const char* function)
{
    if (status == fmi2Fatal) {
        in->broken = 1;
        emit(in, fmi2Fatal, "logStatusFatal",
             "fmu_mb: pythonfmu reported a fatal error (an exception escaped the fmu_mb "
             "adapter; please report it): the instance cannot be used any more");
        (void)function;
        return fmi2Fatal;
    }
    if (in->worst > (int)status && in->worst <= fmi2Error) {
        status = (fmi2Status)in->worst;
    }
    return status;
}

#define CHECK_ARRAY(in, ptr, n, fn)                                                       \
    if ((n) > 0 && (ptr) == NULL) {                                                        \
        return fail(in, fmi2Error, "%s: NULL array for %zu value references", fn, (size_t)(n)); \
    }

/* The front's own value references (TIME_VR) are not the host's to read or set. */
#define CHECK_REFS(in, vr, n, fn)                                                          \
    for (size_t k_ = 0; k_ < (n); ++k_) {                                                  \
        if ((vr)[k_] >= RESERVED_VR) {                                                     \
            return fail(in, fmi2Error, "%s: value reference %u does not exist; nothing was " \
                        "done", fn, (unsigned)(vr)[k_]);                                   \
        }                                                                                  \
    }

/* ------------------------------------------------------------------ argument checks */
/* Offset of the first byte of text that is not part of well-formed UTF-8, or -1. */
static long bad_utf8(const char* text)
{
    const unsigned char* s = (const unsigned char*)text;
    size_t i = 0;
    while (s[i]) {
        unsigned c = s[i];
        size_t more;
        unsigned min;
        if (c < 0x80) {
            ++i;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            more = 1, min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            more = 2, min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3, min = 0x10000;
        } else {
            return (long)i;
        }
        unsigned code = c & (0x3F >> more);
        for (size_t k = 1; k <= more; ++k) {
            if ((s[i + k] & 0xC0) != 0x80) {
                return (long)i;
            }
            code = (code << 6) | (s[i + k] & 0x3F);
        }
        if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
            return (long)i;
        }
        i += more + 1;
    }
    return -1;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int is_directory(const char* path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * The resource folder of a file URI (RFC 8089): file:///abs, file://localhost/abs or
 * file:/abs, percent-escapes decoded (UTF-8), trailing slashes dropped; it must be an existing
 * folder holding pythonfmu's slavemodule.txt and the module it names.  Returns 0 with the
 * path in out, or -1 with the reason in why.
 */
static int resource_folder(const char* uri, char* out, size_t cap, char* why, size_t whycap)
{
    const char* p = uri;
    if (strncasecmp(p, "file:", 5) != 0) {
        snprintf(why, whycap, "the resource location '%.300s' is not a file URI; expected "
                 "file:///absolute/path/to/resources", uri);
        return -1;
    }
    p += 5;
    if (strncmp(p, "//", 2) == 0) {
        p += 2;
        const char* slash = strchr(p, '/');
        size_t host = slash ? (size_t)(slash - p) : strlen(p);
        if (!(host == 0 || (host == 9 && strncasecmp(p, "localhost", 9) == 0))) {
            snprintf(why, whycap, "the resource location '%.300s' names the host '%.*s'; "
                     "expected a local file URI (file:///path or file://localhost/path)", uri,
                     (int)(host < 200 ? host : 200), p);
            return -1;
        }
        p += host;
    }
    if (*p != '/') {
        snprintf(why, whycap, "the resource location '%.300s' has no absolute path; expected "
                 "file:///absolute/path/to/resources", uri);
        return -1;
    }
    size_t j = 0;
    for (; *p; ++p) {
        char c = *p;
        if (c == '%') {
            int hi = hex_digit(p[1]), lo = hi < 0 ? -1 : hex_digit(p[2]);
            if (hi < 0 || lo < 0) {
                snprintf(why, whycap, "the resource location '%.300s' has a '%%' that is not "
                         "followed by two hexadecimal digits (a percent-escape)", uri);
                return -1;
            }
            c = (char)(hi * 16 + lo);
            if (c == '\0') {
                snprintf(why, whycap, "the resource location '%.300s' encodes a NUL byte (%%00)",
                         uri);
                return -1;
            }
            p += 2;
        }
        if (j + 1 >= cap) {
            snprintf(why, whycap, "the resource location is longer than %zu bytes", cap - 1);
            return -1;
        }
        out[j++] = c;
    }
    while (j > 1 && out[j - 1] == '/') {
        --j;
    }
    out[j] = '\0';
    if (bad_utf8(out) >= 0) {
        snprintf(why, whycap, "the resource location '%.300s' decodes to a path that is not "
                 "UTF-8, which Python cannot import from", uri);
        return -1;
    }
    if (strstr(out, "%20") != NULL) {
        snprintf(why, whycap, "the resource folder '%.300s' has '%%20' in its path, which "
                 "pythonfmu 0.7.0 would turn into a space; extract the FMU elsewhere", out);
        return -1;
    }
    if (!is_directory(out)) {
        snprintf(why, whycap, "the resource location '%.300s' is not an existing folder (%.300s)",
                 uri, out);
        return -1;
    }
    char file[4200];
    snprintf(file, sizeof file, "%s/slavemodule.txt", out);
    FILE* f = fopen(file, "r");
    char module[256] = "";
    if (f != NULL) {
        if (fgets(module, sizeof module, f) == NULL) {
            module[0] = '\0';
        }
        fclose(f);
    }
    module[strcspn(module, "\r\n")] = '\0';
    if (module[0] == '\0') {
        snprintf(why, whycap, "the folder '%.300s' is not this FMU's resources folder: it has "
                 "no slavemodule.txt naming the model's Python module", out);
        return -1;
    }
    snprintf(file, sizeof file, "%s/%s.py", out, module);
    if (access(file, R_OK) != 0) {
        snprintf(why, whycap, "the resources folder '%.300s' lacks the model's module %.200s.py",
                 out, module);
        return -1;
    }
    return 0;
}

#define RESERVED_VR 0xFFFFFFF0u    /* value references from here up are the front's own */

/* The current time of the slave, read through the reserved value reference (guard.py). */
#define TIME_VR 0xFFFFFFFEu

/* 1.0 when the slave's last doStep was discarded because the model could not be advanced. */
#define TERMINATED_VR 0xFFFFFFFDu

/* ------------------------------------------------------------------ FMI 2.0 functions */
EXPORT const char* fmi2GetTypesPlatform(void) { return "default"; }
EXPORT const char* fmi2GetVersion(void) { return "2.0"; }

EXPORT fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String guid,
                                     fmi2String resources, const fmi2CallbackFunctions* functions,
                                     fmi2Boolean visible, fmi2Boolean loggingOn)
{
    pthread_mutex_lock(&lock);
    pin_self();
    pthread_mutex_unlock(&lock);
    Instance* in = calloc(1, sizeof *in);
    if (in == NULL) {
        return NULL;
    }
    in->magic = MAGIC;
    int good_name = instanceName != NULL && bad_utf8(instanceName) < 0;
    in->name = strdup(good_name ? instanceName : "?");
    if (functions) {
        in->host = *functions;
    }
    in->logging = loggingOn != 0;
    in->mine = in->host;
    in->mine.logger = inner_logger;
    in->mine.componentEnvironment = in;
    in->state = INSTANTIATED;

    const char* problem = NULL;
    char why[4600] = "";
    char folder[4096];
    char location[4200];
    if (in->name == NULL) {
        problem = "fmu_mb: fmi2Instantiate: out of memory";
    } else if (good_name && instanceName[0] == '\0') {
        problem = "fmu_mb: fmi2Instantiate: instanceName is empty; FMI 2.0 requires a "
                  "non-empty name; no instance made";
    } else if (!good_name) {
        problem = instanceName == NULL
                      ? "fmu_mb: fmi2Instantiate: instanceName is NULL; expected a non-NULL "
                        "UTF-8 string naming the instance"
                      : "fmu_mb: fmi2Instantiate: instanceName is not a UTF-8 string; expected "
                        "a UTF-8 string naming the instance";
    } else if (fmuType != fmi2CoSimulation) {
        problem = "fmu_mb: fmi2Instantiate: this FMU supports co-simulation only (fmi2CoSimulation)";
#ifdef FMU_MB_GUID
    } else if (guid == NULL || strcmp(guid, FMU_MB_GUID) != 0) {
        snprintf(why, sizeof why, "fmu_mb: fmi2Instantiate: the GUID %s%.200s%s is not this "
                 "FMU's %s (from its modelDescription.xml): the binary and the model "
                 "description the host read belong to different FMUs (or builds of one)",
                 guid ? "'" : "", guid ? (bad_utf8(guid) < 0 ? guid : "(not UTF-8)") : "NULL",
                 guid ? "'" : "", FMU_MB_GUID);
        problem = why;
#endif
    } else if (resources == NULL) {
        problem = "fmu_mb: fmi2Instantiate: fmuResourceLocation is NULL; expected the file URI "
                  "of the FMU's resources folder";
    } else if (resource_folder(resources, folder, sizeof folder, why, sizeof why) != 0) {
        char text[sizeof why];
        snprintf(text, sizeof text, "fmu_mb: fmi2Instantiate: %s", why);
        memcpy(why, text, sizeof why);
        problem = why;
    } else if (fmu_mb_pyshim_ensure(&problem) != 0) {
        /* problem is set by the shim */
    } else {
        pthread_mutex_lock(&lock);
        int rc = load_inner(why, sizeof why);
        pthread_mutex_unlock(&lock);
        if (rc != 0) {
            problem = why;
        }
    }
    if (problem == NULL) {
        /* pythonfmu 0.7.0 strips "file://" and decodes only %20: it gets the decoded path */
        snprintf(location, sizeof location, "file://%s", folder);
        in->inner = inner.Instantiate(instanceName, fmuType, guid, location, &in->mine, visible,
                                      1);
        if (in->inner == NULL) {
            problem = "fmu_mb: fmi2Instantiate: pythonfmu could not create the instance (see "
                      "the previous message)";
        }
    }
    if (problem != NULL) {
        if (in->name != NULL) {
            emit(in, fmi2Error, "logStatusError", problem);
        }
        free(in->name);
        in->magic = 0;
        free(in);
        return NULL;
    }
    pthread_mutex_lock(&lock);
    in->next = instances;
    instances = in;
    pthread_mutex_unlock(&lock);
    return in;
}

EXPORT void fmi2FreeInstance(fmi2Component c)
{
    Instance* in = find(c);
    if (in == NULL) {
        if (c != NULL) {      /* freeing NULL is allowed and does nothing */
            refuse_unknown(c, "fmi2FreeInstance");
        }
        return;
    }
    pthread_mutex_lock(&lock);
    for (Instance** p = &instances; *p; p = &(*p)->next) {
        if (*p == in) {
            *p = in->next;
            break;
        }
    }
    /* the states this instance made go with it (as in the native FMU): a later
     * fmi2SetFMUstate with one of them is refused, not a use of freed memory */
    State* dead = NULL;
    for (State** p = &states; *p;) {
        if ((*p)->owner == in) {
            State* it = *p;
            *p = it->next;
            it->next = dead;
            dead = it;
        } else {
            p = &(*p)->next;
        }
    }
    pthread_mutex_unlock(&lock);
    while (dead) {                       /* (pythonfmu may log: not under the lock) */
        State* next = dead->next;
        if (!in->broken) {
            inner.FreeFMUstate(in->inner, &dead->state);
        }
        free(dead);
        dead = next;
    }
    if (!in->broken) {
        inner.FreeInstance(in->inner);   /* a broken one is left alone: freeing it crashes */
    }
    for (size_t i = 0; i < in->n_categories; ++i) {
        free(in->categories[i]);
    }
    free(in->categories);
    free(in->name);
    in->magic = 0;
    free(in);
}

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t n,
                                      const fmi2String categories[])
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2SetDebugLogging", ANY, &st);
    if (!in) {
        return st;
    }
    CHECK_ARRAY(in, categories, n, "fmi2SetDebugLogging");
    for (size_t i = 0; i < n; ++i) {
        if (categories[i] == NULL || bad_utf8(categories[i]) >= 0) {
            return fail(in, fmi2Error, "fmi2SetDebugLogging: category %zu is %s; expected one "
                        "of the LogCategories of modelDescription.xml; nothing was changed", i,
                        categories[i] == NULL ? "NULL" : "not a UTF-8 string");
        }
    }
    for (size_t i = 0; i < in->n_categories; ++i) {
        free(in->categories[i]);
    }
    free(in->categories);
    in->categories = NULL;
    in->n_categories = 0;
    if (n > 0) {
        in->categories = calloc(n, sizeof(char*));
        for (size_t i = 0; in->categories && i < n; ++i) {
            in->categories[i] = strdup(categories[i]);
        }
        in->n_categories = in->categories ? n : 0;
    }
    in->logging = loggingOn != 0;
    return fmi2OK;
}

EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined,
                                      fmi2Real tolerance, fmi2Real startTime,
                                      fmi2Boolean stopTimeDefined, fmi2Real stopTime)
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2SetupExperiment", INSTANTIATED, &st);
    if (!in) {
        return st;
    }
    return leave(in, inner.SetupExperiment(in->inner, toleranceDefined, tolerance, startTime,
                                           stopTimeDefined, stopTime), "fmi2SetupExperiment");
}

EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c)
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2EnterInitializationMode", INSTANTIATED, &st);
    if (!in) {
        return st;
    }
    st = leave(in, inner.EnterInitializationMode(in->inner), "fmi2EnterInitializationMode");
    if (st <= fmi2Warning) {
        in->state = INIT_MODE;
    }
    return st;
}

EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c)
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2ExitInitializationMode", INIT_MODE, &st);
    if (!in) {
        return st;
    }
    st = leave(in, inner.ExitInitializationMode(in->inner), "fmi2ExitInitializationMode");
    if (st <= fmi2Warning) {
        in->state = STEP_MODE;
    }
    return st;
}

EXPORT fmi2Status fmi2Terminate(fmi2Component c)
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2Terminate", STEP_MODE, &st);
    if (!in) {
        return st;
    }
    st = leave(in, inner.Terminate(in->inner), "fmi2Terminate");
    if (st <= fmi2Warning) {
        in->state = TERMINATED;
    }
    return st;
}

EXPORT fmi2Status fmi2Reset(fmi2Component c)
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2Reset", ANY, &st);
    if (!in) {
        return st;
    }
    st = leave(in, inner.Reset(in->inner), "fmi2Reset");
    if (st <= fmi2Warning) {
        in->state = INSTANTIATED;
    }
    return st;
}

#define GETTER(Name, Type)                                                                  \
    EXPORT fmi2Status fmi2Get##Name(fmi2Component c, const fmi2ValueReference vr[], size_t n, \
                                    Type value[])                                           \
    {                                                                                       \
        fmi2Status st;                                                                      \
        Instance* in = enter(c, "fmi2Get" #Name, INIT_MODE | STEP_MODE | TERMINATED, &st);  \
        if (!in) {                                                                          \
            return st;                                                                      \
        }                                                                                   \
        CHECK_ARRAY(in, vr, n, "fmi2Get" #Name);                                            \
        CHECK_ARRAY(in, value, n, "fmi2Get" #Name);                                         \
        CHECK_REFS(in, vr, n, "fmi2Get" #Name);                                             \
        if (n == 0) {                                                                       \
            return fmi2OK;                                                                  \
        }                                                                                   \
        return leave(in, inner.Get##Name(in->inner, vr, n, value), "fmi2Get" #Name);       \
    }

GETTER(Real, fmi2Real)
GETTER(Integer, fmi2Integer)
GETTER(Boolean, fmi2Boolean)
GETTER(String, fmi2String)

#define SETTER(Name, Type)                                                                  \
    EXPORT fmi2Status fmi2Set##Name(fmi2Component c, const fmi2ValueReference vr[], size_t n, \
                                    const Type value[])                                     \
    {                                                                                       \
        fmi2Status st;                                                                      \
        Instance* in = enter(c, "fmi2Set" #Name, INSTANTIATED | INIT_MODE | STEP_MODE, &st); \
        if (!in) {                                                                          \
            return st;                                                                      \
        }                                                                                   \
        CHECK_ARRAY(in, vr, n, "fmi2Set" #Name);                                            \
        CHECK_ARRAY(in, value, n, "fmi2Set" #Name);                                         \
        CHECK_REFS(in, vr, n, "fmi2Set" #Name);                                             \
        if (n == 0) {                                                                       \
            return fmi2OK;                                                                  \
        }                                                                                   \
        return leave(in, inner.Set##Name(in->inner, vr, n, value), "fmi2Set" #Name);       \
    }

SETTER(Real, fmi2Real)
SETTER(Integer, fmi2Integer)
SETTER(Boolean, fmi2Boolean)

EXPORT fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                const fmi2String value[])
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2SetString", INSTANTIATED | INIT_MODE | STEP_MODE, &st);
    if (!in) {
        return st;
    }
    CHECK_ARRAY(in, vr, n, "fmi2SetString");
    CHECK_ARRAY(in, value, n, "fmi2SetString");
    CHECK_REFS(in, vr, n, "fmi2SetString");
    for (size_t i = 0; i < n; ++i) {
        if (value[i] == NULL) {
            return fail(in, fmi2Error, "fmi2SetString: NULL string for value reference %u; "
                        "nothing was set", vr[i]);
        }
        long bad = bad_utf8(value[i]);
        if (bad >= 0) {
            return fail(in, fmi2Error, "fmi2SetString: the string for value reference %u is "
                        "not UTF-8 (byte %ld of %zu is 0x%02x); expected a UTF-8 string; "
                        "nothing was set", vr[i], bad, strlen(value[i]),
                        (unsigned char)value[i][bad]);
        }
    }
    if (n == 0) {
        return fmi2OK;
    }
    return leave(in, inner.SetString(in->inner, vr, n, value), "fmi2SetString");
}

EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate* state)
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2GetFMUstate", ANY, &st);
    if (!in) {
        return st;
    }
    if (state == NULL) {
        return fail(in, fmi2Error, "fmi2GetFMUstate: NULL pointer for the state");
    }
    fmi2FMUstate old = *state;
    if (old != NULL && !known_state(old)) {
        return fail(in, fmi2Error, "fmi2GetFMUstate: *FMUstate is neither NULL nor a state of "
                    "this FMU; nothing was done");
    }
    fmi2FMUstate made = NULL;
    st = leave(in, inner.GetFMUstate(in->inner, &made), "fmi2GetFMUstate");
    if (st > fmi2Warning) {
        if (made != NULL && st != fmi2Fatal) {
            inner.FreeFMUstate(in->inner, &made);
        }
        return st;
    }
    if (old != NULL) {          /* "updated in place": the old one is replaced */
        remove_state(old);
        inner.FreeFMUstate(in->inner, &old);
    }
    add_state(made, in);
    *state = made;
    return st;
}

EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state)
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2SetFMUstate", ANY, &st);
    if (!in) {
        return st;
    }
    if (state == NULL || !known_state(state)) {
        return fail(in, fmi2Error, "fmi2SetFMUstate: %s; the instance was not changed",
                    state == NULL ? "NULL state" : "not a state made by this FMU (or already freed)");
    }
    return leave(in, inner.SetFMUstate(in->inner, state), "fmi2SetFMUstate");
}

EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate* state)
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2FreeFMUstate", ANY, &st);
    if (!in) {
        return st;
    }
    if (state == NULL || *state == NULL) {
        return fmi2OK;
    }
    if (!known_state(*state)) {
        return fail(in, fmi2Error, "fmi2FreeFMUstate: not a state made by this FMU (or already "
                    "freed); nothing was freed");
    }
    remove_state(*state);
    st = leave(in, inner.FreeFMUstate(in->inner, state), "fmi2FreeFMUstate");
    *state = NULL;
    return st;
}

EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t* size)
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2SerializedFMUstateSize", ANY, &st);
    if (!in) {
        return st;
    }
    if (size == NULL || state == NULL || !known_state(state)) {
        return fail(in, fmi2Error, "fmi2SerializedFMUstateSize: %s",
                    size == NULL ? "NULL size pointer" : "not a state made by this FMU");
    }
    return leave(in, inner.SerializedFMUstateSize(in->inner, state, size),
                 "fmi2SerializedFMUstateSize");
}

EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte bytes[],
                                        size_t size)
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2SerializeFMUstate", ANY, &st);
    if (!in) {
        return st;
    }
    if (state == NULL || !known_state(state)) {
        return fail(in, fmi2Error, "fmi2SerializeFMUstate: not a state made by this FMU");
    }
    size_t needed = 0;
    st = leave(in, inner.SerializedFMUstateSize(in->inner, state, &needed),
               "fmi2SerializeFMUstate");
    if (st > fmi2Warning) {
        return st;
    }
    if (bytes == NULL || size != needed) {
        return fail(in, fmi2Error, "fmi2SerializeFMUstate: the buffer holds %zu bytes, the "
                    "state needs %zu (fmi2SerializedFMUstateSize); nothing was written",
                    bytes == NULL ? (size_t)0 : size, needed);
    }
    return leave(in, inner.SerializeFMUstate(in->inner, state, bytes, size),
                 "fmi2SerializeFMUstate");
}

EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size,
                                          fmi2FMUstate* state)
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2DeSerializeFMUstate", ANY, &st);
    if (!in) {
        return st;
    }
    if (state == NULL || (bytes == NULL && size > 0)) {
        return fail(in, fmi2Error, "fmi2DeSerializeFMUstate: NULL %s",
                    state == NULL ? "state pointer" : "byte array");
    }
    fmi2FMUstate old = *state;
    if (old != NULL && !known_state(old)) {
        return fail(in, fmi2Error, "fmi2DeSerializeFMUstate: *FMUstate is neither NULL nor a "
                    "state of this FMU; nothing was done");
    }
    fmi2FMUstate made = NULL;
    static const fmi2Byte empty[1] = {0};
    st = leave(in, inner.DeSerializeFMUstate(in->inner, bytes ? bytes : empty, size, &made),
               "fmi2DeSerializeFMUstate");
    if (st > fmi2Warning) {     /* the adapter found the bytes corrupt or foreign */
        if (made != NULL && st != fmi2Fatal) {
            inner.FreeFMUstate(in->inner, &made);
        }
        return st;
    }
    if (old != NULL) {
        remove_state(old);
        inner.FreeFMUstate(in->inner, &old);
    }
    add_state(made, in);
    *state = made;
    return st;
}

EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean noSetPrior)
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2DoStep", STEP_MODE, &st);
    if (!in) {
        return st;
    }
    return leave(in, inner.DoStep(in->inner, t, h, noSetPrior), "fmi2DoStep");
}

EXPORT fmi2Status fmi2CancelStep(fmi2Component c)
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2CancelStep", STEP_MODE, &st);
    if (!in) {
        return st;
    }
    return fail(in, fmi2Error, "fmi2CancelStep: not supported (doStep always completes "
                "synchronously)");
}

static fmi2Status unsupported(fmi2Component c, const char* function)
{
    fmi2Status st;
    Instance* in = enter(c, function, ANY, &st);
    if (!in) {
        return st;
    }
    return fail(in, fmi2Error, "%s: not supported by this FMU", function);
}

EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference a[],
                                               size_t na, const fmi2ValueReference b[],
                                               size_t nb, const fmi2Real d[], fmi2Real r[])
{
    (void)a; (void)na; (void)b; (void)nb; (void)d; (void)r;
    return unsupported(c, "fmi2GetDirectionalDerivative");
}

EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                              size_t n, const fmi2Integer order[],
                                              const fmi2Real value[])
{
    (void)vr; (void)n; (void)order; (void)value;
    return unsupported(c, "fmi2SetRealInputDerivatives");
}

EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                               size_t n, const fmi2Integer order[],
                                               fmi2Real value[])
{
    (void)vr; (void)n; (void)order; (void)value;
    return unsupported(c, "fmi2GetRealOutputDerivatives");
}

EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status* value)
{
    (void)s; (void)value;
    return unsupported(c, "fmi2GetStatus");
}

EXPORT fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer* v)
{
    (void)s; (void)v;
    return unsupported(c, "fmi2GetIntegerStatus");
}

EXPORT fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String* v)
{
    (void)s; (void)v;
    return unsupported(c, "fmi2GetStringStatus");
}

/*
 * fmi2LastSuccessfulTime: the end of the last successful step (the slave's current time, read
 * from the adapter through TIME_VR: it follows doStep, fmi2SetFMUstate and a deserialised state,
 * and is not moved by a refused or discarded call).
 */
EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real* value)
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2GetRealStatus", STEP_MODE | TERMINATED, &st);
    if (!in) {
        return st;
    }
    if (value == NULL) {
        return fail(in, fmi2Error, "fmi2GetRealStatus: NULL value pointer");
    }
    if (s != fmi2LastSuccessfulTime) {
        return fail(in, fmi2Discard, "fmi2GetRealStatus: only fmi2LastSuccessfulTime is "
                    "available");
    }
    if (!guarded_slave) {       /* not an fmu_mb adapter: pythonfmu's own answer */
        return leave(in, inner.GetRealStatus(in->inner, s, value), "fmi2GetRealStatus");
    }
    const fmi2ValueReference vr = TIME_VR;
    fmi2Real t = 0.0;
    st = leave(in, inner.GetReal(in->inner, &vr, 1, &t), "fmi2GetRealStatus");
    if (st <= fmi2Warning) {
        *value = t;
    }
    return st;
}

/*
 * fmi2Terminated: true after fmi2Terminate, and while the last doStep was discarded because the
 * model could not be advanced from its state with its inputs (a lock-up, a runaway state, a
 * non-finite input, the step budget; read from the adapter through TERMINATED_VR): a master
 * that does not shorten a discarded step (fmpy's simulate_fmu retries it with a longer one)
 * then stops at fmi2LastSuccessfulTime.  False after a discard for a wrong step size or
 * communication point (the master can correct its call), after a successful step and after
 * a restored state.  A slave that is not an fmu_mb adapter gets pythonfmu's own answer.
 */
EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s,
                                       fmi2Boolean* value)
{
    fmi2Status st;
    Instance* in = enter(c, "fmi2GetBooleanStatus", STEP_MODE | TERMINATED, &st);
    if (!in) {
        return st;
    }
    if (value == NULL) {
        return fail(in, fmi2Error, "fmi2GetBooleanStatus: NULL value pointer");
    }
    if (s != fmi2Terminated) {
        return fail(in, fmi2Discard, "fmi2GetBooleanStatus: only fmi2Terminated is available");
    }
    if (in->state == TERMINATED) {
        *value = 1;
        return fmi2OK;
    }
    if (!guarded_slave) {
        return leave(in, inner.GetBooleanStatus(in->inner, s, value), "fmi2GetBooleanStatus");
    }
    const fmi2ValueReference vr = TERMINATED_VR;
    fmi2Real stuck = 0.0;
    st = leave(in, inner.GetReal(in->inner, &vr, 1, &stuck), "fmi2GetBooleanStatus");
    if (st <= fmi2Warning) {
        *value = stuck != 0.0;
    }
    return st;
}
