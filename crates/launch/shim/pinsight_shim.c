/*
 * pinsight's LD_PRELOAD shim: pins every thread a program creates, in
 * creation order, before the thread runs any user code (like likwid-pin).
 *
 * How: the shim wraps pthread_create. Under a lock it takes the next thread
 * index and hands the real pthread_create a trampoline that first sets the
 * new thread's affinity to its place and then calls the user's start
 * routine. The index is committed only when pthread_create succeeds, so a
 * failed call consumes no place and does not shift --skip indices.
 *
 * What the program sees (the contract `pinsight run --help` documents):
 * - At start, and after every exec in place, the main thread has the plan's
 *   whole process mask: sched_getaffinity, nproc and omp_get_num_procs
 *   report the planned CPUs, so programs that size themselves from their
 *   mask start as many threads as they would under `taskset -c MASK`.
 * - "lazy" (default): when the program's first pthread_create succeeds, the
 *   main thread moves to place 0 and the new thread starts on place 1.
 *   "early": the main thread is on place 0 from the start (the launcher
 *   starts it there; the constructor re-asserts it after each exec).
 * - A process the program forks (with or without exec) is not pinned
 *   thread by thread: its threads are its own, and numbering them on from
 *   the parent's places would stack two processes on the same CPUs. The
 *   fork child handler moves the child to the whole process mask, turns
 *   the shim off in it and removes the shim from its environment.
 *
 * Environment (written by pinsight; absent = the shim does nothing):
 *   PINSIGHT_PLACES        places, ';'-separated cpulists: "0;2;4-5"
 *   PINSIGHT_SKIP          created-thread indices (0 = first successful
 *                          pthread_create) that are not pinned: "0,3".
 *                          Skipped threads get PINSIGHT_PROCESS_MASK and
 *                          use no place.
 *   PINSIGHT_PROCESS_MASK  cpulist: the plan's whole mask
 *   PINSIGHT_PIN_MAIN      "lazy" (default) or "early", see above
 *   PINSIGHT_LAUNCHER_PID  pid of the launcher: the shim is active only in
 *                          a process whose parent is the launcher, i.e. the
 *                          launched program and whatever it exec()s in place
 *                          (`sh -c 'exec prog'`, `env`, `nice`). Other
 *                          processes that load it remove it from their
 *                          environment, so it goes no further.
 *   PINSIGHT_SHIM_FD       the memfd holding this shim (LD_PRELOAD names it
 *                          as /proc/self/fd/N, valid in every process that
 *                          inherits the descriptor, whether or not pinsight
 *                          still runs); see forget_self for why it stays
 *                          open in descendants.
 *   PINSIGHT_SHIM_VERBOSE  "1": one line on stderr per pinned thread.
 *   PINSIGHT_THREAD_LOG_FD a memfd named "pinsight-threads" (with --report):
 *                          one 16-byte record per pinned thread, appended
 *                          with one write(2) each: tid, created-thread index
 *                          (-1: the main thread moving to place 0), place
 *                          (-1: skipped), errno of the pin (0: pinned). The
 *                          launcher matches the threads it sampled to their
 *                          places by tid with it (a thread that exited
 *                          before it was sampled shifts nothing). Also one
 *                          record per image event (tid = pid, place -1):
 *                          index -2 when the shim is active in a new image
 *                          (the handshake), -3 just before the pinned
 *                          program executes in place, -4 (errno in the last
 *                          field) when that exec failed. An exec not
 *                          followed by -2 or -4 ran an image the loader
 *                          did not preload the shim into (a 32-bit or
 *                          static program): the launcher then does not
 *                          claim the shim placed its threads.
 *
 * Executing: the shim wraps execve, execv, execvp, execvpe, fexecve,
 * posix_spawn and posix_spawnp. Only an exec in place by the pinned program
 * itself passes the shim on (its next image is pinned afresh), and only
 * while the descriptor of PINSIGHT_SHIM_FD still holds the shim. Every
 * other exec (in a forked or vfork()ed child, from a process where the
 * shim is off, every spawn) gets an environment without this shim in
 * LD_PRELOAD and without the PINSIGHT_ variables. The loader of the new
 * image reads LD_PRELOAD before any code of the shim could run there, so
 * this is the last point where a stale name can be kept from it: a child
 * that closed the descriptor (Python's subprocess, close_fds) or a script
 * that reused it (`exec 200>lock; flock 200`) would otherwise get
 * "ld.so: object '/proc/self/fd/200' ... cannot be preloaded" (ld.so(8))
 * for every command it runs. Shells keep their own copy of the
 * environment and pass it to execve, which is why the environment handed
 * to the call is cleaned, not only environ. Not covered: execl, execlp and
 * execle, and glibc's system and popen, which exec through glibc's
 * internal entry points; their children still find the descriptor unless
 * the program closed or reused it.
 *
 * Threads beyond the last place wrap around to place 0 (likwid-pin does the
 * same). Output uses write(2) only (no stdio, no strerror: neither is safe
 * in a fork child or a freshly created thread). The trampoline's argument
 * comes from a fixed pool of slots, falling back to malloc only when more
 * than POOL_SLOTS threads are being started at once.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

#define POOL_SLOTS 256
#define MAX_CPUS (1 << 20)
#define WORD_BITS (8 * sizeof(unsigned long))

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static create_fn real_create;
static int active;                  /* atomic */
static int verbose;
static int pin_main_early;
static int main_pinned;             /* under create_lock */
static size_t nwords;               /* unsigned longs per mask */
static size_t nplaces;
static unsigned long *place_masks;  /* nplaces * nwords */
static char **place_text;           /* for verbose lines */
static unsigned long *process_mask; /* NULL: skipped threads keep inherited mask */
static size_t nskip;
static long *skip;                  /* sorted created-thread indices */
static long next_index;             /* under create_lock: next created-thread index */
static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;

struct slot {
    int used; /* atomic */
    void *(*start)(void *);
    void *arg;
    long index;
    int heap;
};
static struct slot pool[POOL_SLOTS];

/* ---- tiny async-safe output ---- */

static void put(const char *s) {
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(2, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void put_long(long v) {
    char buf[24];
    int i = (int)sizeof(buf) - 1;
    int neg = v < 0;
    unsigned long u = neg ? (unsigned long)(-v) : (unsigned long)v;
    buf[i] = 0;
    do {
        buf[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u && i > 1);
    if (neg)
        buf[--i] = '-';
    put(buf + i);
}

/* The errno values sched_setaffinity and pthread_create return, by name
 * and meaning; others as "errno N". strerror is not async-signal-safe and
 * may allocate (locale), so it is never called here. */
static void put_errno(int err) {
    switch (err) {
    case EINVAL:
        put("EINVAL (no CPU of the place is online and allowed)");
        break;
    case EPERM:
        put("EPERM (not permitted)");
        break;
    case ESRCH:
        put("ESRCH (no such thread)");
        break;
    case EFAULT:
        put("EFAULT (bad mask address)");
        break;
    case EAGAIN:
        put("EAGAIN (out of resources)");
        break;
    case ENOMEM:
        put("ENOMEM (out of memory)");
        break;
    default:
        put("errno ");
        put_long(err);
    }
}

/* ---- cpulist parsing (constructor only) ---- */

/* Largest CPU number in a list of cpulists, -1 if none. */
static long max_cpu_in(const char *s) {
    long max = -1;
    while (*s) {
        if (*s >= '0' && *s <= '9') {
            char *end;
            long v = strtol(s, &end, 10);
            if (v > max)
                max = v;
            s = end;
        } else {
            s++;
        }
    }
    return max;
}

/* Parses one cpulist ("0-3,8") of length len into mask; 0 on success. */
static int parse_list(const char *s, size_t len, unsigned long *mask) {
    const char *end = s + len;
    int any = 0;
    while (s < end) {
        char *e;
        long a, b;
        if (*s == ',') {
            s++;
            continue;
        }
        if (*s < '0' || *s > '9')
            return -1;
        a = strtol(s, &e, 10);
        b = a;
        s = e;
        if (s < end && *s == '-') {
            s++;
            if (s >= end || *s < '0' || *s > '9')
                return -1;
            b = strtol(s, &e, 10);
            s = e;
        }
        if (a < 0 || b < a || b >= MAX_CPUS)
            return -1;
        for (long c = a; c <= b; c++)
            mask[c / WORD_BITS] |= 1UL << (c % WORD_BITS);
        any = 1;
    }
    return any ? 0 : -1;
}

static void disable(const char *why) {
    put("pinsight-shim: not pinning: ");
    put(why);
    put("\n");
    __atomic_store_n(&active, 0, __ATOMIC_RELEASE);
}

/* Removes this shim from LD_PRELOAD and drops the PINSIGHT_ variables, so
 * the processes this one starts do not carry the shim further.
 *
 * The shim's memfd descriptor is deliberately left open: shells (dash,
 * bash) and make keep their own copy of the environment and pass it to
 * what they exec, so their children may still name /proc/self/fd/N in
 * LD_PRELOAD. With the descriptor inherited, the loader finds the shim
 * (which then turns itself off there) instead of printing "cannot be
 * preloaded" — also after pinsight has exited. The cost is one read-only
 * descriptor of a few KiB in descendants. */
static void forget_self(void) {
    Dl_info info;
    const char *pre = getenv("LD_PRELOAD");
    unsetenv("PINSIGHT_PLACES");
    unsetenv("PINSIGHT_SKIP");
    unsetenv("PINSIGHT_PROCESS_MASK");
    unsetenv("PINSIGHT_PIN_MAIN");
    unsetenv("PINSIGHT_LAUNCHER_PID");
    unsetenv("PINSIGHT_SHIM_FD");
    unsetenv("PINSIGHT_SHIM_VERBOSE");
    unsetenv("PINSIGHT_THREAD_LOG_FD");
    if (!pre || !dladdr((void *)forget_self, &info) || !info.dli_fname)
        return;
    size_t self_len = strlen(info.dli_fname);
    char *out = malloc(strlen(pre) + 1);
    if (!out)
        return;
    size_t o = 0;
    const char *p = pre;
    while (*p) {
        while (*p == ':' || *p == ' ')
            p++;
        const char *q = p;
        while (*q && *q != ':' && *q != ' ')
            q++;
        size_t n = (size_t)(q - p);
        if (n > 0 && !(n == self_len && memcmp(p, info.dli_fname, n) == 0)) {
            if (o > 0)
                out[o++] = ':';
            memcpy(out + o, p, n);
            o += n;
        }
        p = q;
    }
    out[o] = 0;
    if (o == 0)
        unsetenv("LD_PRELOAD");
    else
        setenv("LD_PRELOAD", out, 1);
    free(out);
}

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* ---- the thread log (PINSIGHT_THREAD_LOG_FD) ---- */

#define LOG_MAX (1L << 20)  /* records per image: 16 MiB at most */
static int log_fd = -1;     /* a private close-on-exec copy */
static long logged;         /* atomic */

/* Opens the log when the descriptor still is the launcher's memfd (the
 * program may have reused the number before an exec in place). */
static void open_log(void) {
    const char *e = getenv("PINSIGHT_THREAD_LOG_FD");
    char path[40], link[64];
    if (!e || !*e)
        return;
    snprintf(path, sizeof path, "/proc/self/fd/%ld", strtol(e, NULL, 10));
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n <= 0)
        return;
    link[n] = 0;
    if (strncmp(link, "/memfd:pinsight-threads", 23) != 0)
        return;
    log_fd = fcntl((int)strtol(e, NULL, 10), F_DUPFD_CLOEXEC, 200);
}

static void log_thread(long tid, long index, long place, int err) {
    if (log_fd < 0 || __atomic_fetch_add(&logged, 1, __ATOMIC_RELAXED) >= LOG_MAX)
        return;
    int32_t rec[4] = {(int32_t)tid, (int32_t)index, (int32_t)place, (int32_t)err};
    ssize_t w = write(log_fd, rec, sizeof rec);
    (void)w;
}

/* ---- pinning ---- */

/* Sets the affinity of thread `tid` (0 = the caller); 0 or an errno. */
static int set_affinity(long tid, const unsigned long *mask) {
    long r = syscall(SYS_sched_setaffinity, tid, nwords * sizeof(unsigned long), mask);
    return r == 0 ? 0 : errno;
}

static int is_skipped(long index) {
    for (size_t i = 0; i < nskip; i++)
        if (skip[i] == index)
            return 1;
    return 0;
}

/* Place of created thread `index`: the main thread holds place 0, each
 * non-skipped created thread the next one. -1 for skipped threads. Must
 * match `place_of` in crates/launch/src/skip.rs. */
static long place_of(long index) {
    if (is_skipped(index))
        return -1;
    long skipped_before = 0;
    for (size_t i = 0; i < nskip; i++)
        if (skip[i] < index)
            skipped_before++;
    return (index - skipped_before + 1) % (long)nplaces;
}

static void report_main(const char *when, int err) {
    if (!verbose && !err)
        return;
    put("pinsight-shim: main thread (tid ");
    put_long((long)getpid());
    put(") -> CPUs ");
    put(place_text[0]);
    put(when);
    if (err) {
        put(": failed: ");
        put_errno(err);
    }
    put("\n");
}

static void report(long index, long place, int err) {
    if (!verbose && !err)
        return;
    put("pinsight-shim: created thread #");
    put_long(index);
    put(" (tid ");
    put_long((long)syscall(SYS_gettid));
    put(") -> ");
    if (place < 0)
        put("process mask (skipped)");
    else {
        put("CPUs ");
        put(place_text[place]);
    }
    if (err) {
        put(": failed: ");
        put_errno(err);
    }
    put("\n");
}

static void pin_self(long index) {
    long place = place_of(index);
    int err = 0;
    if (place >= 0)
        err = set_affinity(0, place_masks + (size_t)place * nwords);
    else if (process_mask)
        err = set_affinity(0, process_mask);
    report(index, place, err);
    log_thread((long)syscall(SYS_gettid), index, place, err);
}

static void *trampoline(void *p) {
    struct slot *s = p;
    void *(*start)(void *) = s->start;
    void *arg = s->arg;
    long index = s->index;
    if (s->heap)
        free(s);
    else
        __atomic_store_n(&s->used, 0, __ATOMIC_RELEASE);
    pin_self(index);
    return start(arg);
}

static struct slot *take_slot(void) {
    for (int i = 0; i < POOL_SLOTS; i++) {
        int expected = 0;
        if (__atomic_compare_exchange_n(&pool[i].used, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            pool[i].heap = 0;
            return &pool[i];
        }
    }
    struct slot *s = malloc(sizeof *s);
    if (s)
        s->heap = 1;
    return s;
}

static void give_back(struct slot *s) {
    if (s->heap)
        free(s);
    else
        __atomic_store_n(&s->used, 0, __ATOMIC_RELEASE);
}

static create_fn resolve(void) {
    create_fn f = __atomic_load_n(&real_create, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
        __atomic_store_n(&real_create, f, __ATOMIC_RELEASE);
    }
    return f;
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
    create_fn real = resolve();
    if (!real)
        return EAGAIN;
    if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE))
        return real(thread, attr, start, arg);
    struct slot *s = take_slot();
    if (!s) {
        /* Creating it unpinned would silently break the plan. */
        put("pinsight-shim: pthread_create: no memory to pin the new thread: EAGAIN\n");
        return EAGAIN;
    }
    s->start = start;
    s->arg = arg;
    /* The lock orders indices by successful creation: the index is taken
     * and committed around the real call, so a failure consumes nothing.
     * The new thread never takes this lock before pinning itself (its index
     * is in its slot), so holding it across the call cannot deadlock. */
    pthread_mutex_lock(&create_lock);
    s->index = next_index;
    int r = real(thread, attr, trampoline, s);
    int pin_main = 0;
    if (r == 0) {
        next_index++;
        if (!main_pinned) {
            main_pinned = 1;
            pin_main = !pin_main_early;
        }
    }
    pthread_mutex_unlock(&create_lock);
    if (r != 0) {
        give_back(s);
        return r;
    }
    if (pin_main) {
        /* The main thread's tid is the pid; this works from any thread. */
        int err = set_affinity((long)getpid(), place_masks);
        report_main(" (first thread created)", err);
        log_thread((long)getpid(), -1, 0, err);
    }
    return 0;
}

/* ---- fork ---- */

static void before_fork(void) {
    if (__atomic_load_n(&active, __ATOMIC_ACQUIRE))
        pthread_mutex_lock(&create_lock);
}

static void after_fork_parent(void) {
    if (__atomic_load_n(&active, __ATOMIC_ACQUIRE))
        pthread_mutex_unlock(&create_lock);
}

/* A forked child is another process: it gets the plan's whole mask, no
 * per-thread pinning, and no shim for what it executes. */
static void after_fork_child(void) {
    if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_init(&create_lock, NULL);
    __atomic_store_n(&active, 0, __ATOMIC_RELEASE);
    if (log_fd >= 0) {
        close(log_fd);
        log_fd = -1;
    }
    if (process_mask) {
        int err = set_affinity(0, process_mask);
        if (err) {
            put("pinsight-shim: forked child (pid ");
            put_long((long)getpid());
            put(") -> process mask: failed: ");
            put_errno(err);
            put("\n");
        }
    }
    forget_self();
}

/* ---- exec: keeping the shim's name from processes that cannot load it ---- */

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);

/* Resolved in the constructor: a vfork()ed child must not call dlsym
 * (it takes the loader's lock, which another thread may hold). */
static execve_fn real_execve, real_execvpe;
static fexecve_fn real_fexecve;
static spawn_fn real_spawn, real_spawnp;
static pid_t main_pid;          /* the pinned program (0: the shim is off) */
static int shim_fd = -1;        /* PINSIGHT_SHIM_FD, -1 for a file shim */
static dev_t shim_dev;
static ino_t shim_ino;
static char self_path[4096];    /* this shim's name in LD_PRELOAD */

/* Environments larger than this are passed on unchanged (the cleaned copy
 * lives on the stack: no malloc in a vfork()ed child). */
#define CLEAN_MAX_VARS 8192
#define CLEAN_MAX_PRELOAD 8192

static void resolve_exec(void) {
    Dl_info info;
    real_execve = (execve_fn)dlsym(RTLD_NEXT, "execve");
    real_execvpe = (execve_fn)dlsym(RTLD_NEXT, "execvpe");
    real_fexecve = (fexecve_fn)dlsym(RTLD_NEXT, "fexecve");
    real_spawn = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawn");
    real_spawnp = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawnp");
    if (dladdr((void *)resolve_exec, &info) && info.dli_fname &&
        strlen(info.dli_fname) < sizeof self_path)
        strcpy(self_path, info.dli_fname);
}

/* Remembers which file the descriptor holds, to notice its reuse. */
static void remember_shim_fd(void) {
    const char *fd_env = getenv("PINSIGHT_SHIM_FD");
    struct stat st;
    main_pid = (pid_t)syscall(SYS_getpid);
    if (!fd_env || !*fd_env)
        return;
    int fd = (int)strtol(fd_env, NULL, 10);
    if (fstat(fd, &st) == 0) {
        shim_fd = fd;
        shim_dev = st.st_dev;
        shim_ino = st.st_ino;
    }
}

/* Whether an exec by this process may pass the shim on: an exec in place
 * by the pinned program itself, while the descriptor still holds it. */
static int keeps_shim_on_exec(void) {
    struct stat st;
    if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE) || (pid_t)syscall(SYS_getpid) != main_pid)
        return 0;
    if (shim_fd < 0)
        return 1;
    if (fstat(shim_fd, &st) == 0 && st.st_dev == shim_dev && st.st_ino == shim_ino)
        return 1;
    put("pinsight-shim: descriptor ");
    put_long(shim_fd);
    put(" no longer holds the shim (the program reused or closed it): the program it executes is not pinned thread by thread\n");
    return 0;
}

static int is_shim_var(const char *e) {
    static const char *const names[] = {
        "PINSIGHT_PLACES=",       "PINSIGHT_SKIP=",      "PINSIGHT_PROCESS_MASK=",
        "PINSIGHT_PIN_MAIN=",     "PINSIGHT_LAUNCHER_PID=", "PINSIGHT_SHIM_FD=",
        "PINSIGHT_SHIM_VERBOSE=", "PINSIGHT_THREAD_LOG_FD=",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strncmp(e, names[i], strlen(names[i])) == 0)
            return 1;
    return 0;
}

static size_t env_len(char *const envp[]) {
    size_t n = 0;
    while (envp[n])
        n++;
    return n;
}

static size_t preload_len(char *const envp[]) {
    for (size_t i = 0; envp[i]; i++)
        if (strncmp(envp[i], "LD_PRELOAD=", 11) == 0)
            return strlen(envp[i]) + 1;
    return 1;
}

/* Copies envp into out without the PINSIGHT_ variables and with this shim
 * removed from LD_PRELOAD (rewritten into buf, which has room for the
 * whole entry; the entry is dropped when nothing else is preloaded). */
static void strip_env(char *const envp[], char **out, char *buf) {
    size_t o = 0, self_len = strlen(self_path);
    for (size_t i = 0; envp[i]; i++) {
        const char *e = envp[i];
        if (is_shim_var(e))
            continue;
        if (self_len == 0 || strncmp(e, "LD_PRELOAD=", 11) != 0) {
            out[o++] = (char *)e;
            continue;
        }
        size_t b = 11, kept = 0;
        memcpy(buf, e, 11);
        for (const char *p = e + 11; *p;) {
            while (*p == ':' || *p == ' ')
                p++;
            const char *q = p;
            while (*q && *q != ':' && *q != ' ')
                q++;
            size_t n = (size_t)(q - p);
            if (n > 0 && !(n == self_len && memcmp(p, self_path, n) == 0)) {
                if (kept++)
                    buf[b++] = ':';
                memcpy(buf + b, p, n);
                b += n;
            }
            p = q;
        }
        buf[b] = 0;
        if (kept)
            out[o++] = buf;
    }
    out[o] = NULL;
}

enum call_kind { CALL_EXECVE, CALL_EXECVPE, CALL_FEXECVE, CALL_SPAWN, CALL_SPAWNP };

struct exec_call {
    enum call_kind kind;
    const char *path;
    int fd;
    char *const *argv;
    pid_t *pid;
    const posix_spawn_file_actions_t *actions;
    const posix_spawnattr_t *attr;
};

static int call_real(const struct exec_call *c, char *const envp[]) {
    switch (c->kind) {
    case CALL_EXECVE:
    case CALL_EXECVPE: {
        execve_fn f = c->kind == CALL_EXECVE ? real_execve : real_execvpe;
        if (f)
            return f(c->path, c->argv, envp);
        break;
    }
    case CALL_FEXECVE:
        if (real_fexecve)
            return real_fexecve(c->fd, c->argv, envp);
        break;
    case CALL_SPAWN:
    case CALL_SPAWNP: {
        spawn_fn f = c->kind == CALL_SPAWN ? real_spawn : real_spawnp;
        return f ? f(c->pid, c->path, c->actions, c->attr, c->argv, envp) : ENOSYS;
    }
    }
    errno = ENOSYS;
    return -1;
}

/* The call with the shim removed from its environment. */
static int call_without_shim(const struct exec_call *c, char *const envp[]) {
    if (!envp)
        return call_real(c, envp);
    size_t n = env_len(envp), p = preload_len(envp);
    if (n >= CLEAN_MAX_VARS || p >= CLEAN_MAX_PRELOAD)
        return call_real(c, envp);
    char *clean[n + 1];
    char buf[p];
    strip_env(envp, clean, buf);
    return call_real(c, clean);
}

/* Image events in the thread log (see the header). */
#define EVENT_LOADED (-2)
#define EVENT_EXEC (-3)
#define EVENT_EXEC_FAILED (-4)

static int exec_call(const struct exec_call *c, char *const envp[]) {
    if (!keeps_shim_on_exec())
        return call_without_shim(c, envp);
    log_thread((long)getpid(), EVENT_EXEC, -1, 0);
    int r = call_real(c, envp);
    int err = errno;
    log_thread((long)getpid(), EVENT_EXEC_FAILED, -1, err);
    errno = err;
    return r;
}

int execve(const char *path, char *const argv[], char *const envp[]) {
    struct exec_call c = {CALL_EXECVE, path, -1, argv, NULL, NULL, NULL};
    return exec_call(&c, envp);
}

int execv(const char *path, char *const argv[]) {
    struct exec_call c = {CALL_EXECVE, path, -1, argv, NULL, NULL, NULL};
    return exec_call(&c, environ);
}

int execvpe(const char *file, char *const argv[], char *const envp[]) {
    struct exec_call c = {CALL_EXECVPE, file, -1, argv, NULL, NULL, NULL};
    return exec_call(&c, envp);
}

int execvp(const char *file, char *const argv[]) {
    struct exec_call c = {CALL_EXECVPE, file, -1, argv, NULL, NULL, NULL};
    return exec_call(&c, environ);
}

int fexecve(int fd, char *const argv[], char *const envp[]) {
    struct exec_call c = {CALL_FEXECVE, NULL, fd, argv, NULL, NULL, NULL};
    return exec_call(&c, envp);
}

/* A spawned process is never the program executing in place. */
int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    struct exec_call c = {CALL_SPAWN, path, -1, argv, pid, actions, attr};
    return call_without_shim(&c, envp);
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                 const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    struct exec_call c = {CALL_SPAWNP, file, -1, argv, pid, actions, attr};
    return call_without_shim(&c, envp);
}

/* ---- setup ---- */

__attribute__((constructor)) static void pinsight_shim_init(void) {
    resolve();
    resolve_exec();
    const char *places = getenv("PINSIGHT_PLACES");
    const char *launcher = getenv("PINSIGHT_LAUNCHER_PID");
    if (!places || !*places)
        return;
    if (!launcher || strtol(launcher, NULL, 10) != (long)getppid()) {
        forget_self();
        return;
    }
    const char *skip_env = getenv("PINSIGHT_SKIP");
    const char *proc_env = getenv("PINSIGHT_PROCESS_MASK");
    const char *verbose_env = getenv("PINSIGHT_SHIM_VERBOSE");
    const char *main_env = getenv("PINSIGHT_PIN_MAIN");
    verbose = verbose_env && verbose_env[0] == '1';
    pin_main_early = main_env && strcmp(main_env, "early") == 0;
    if (main_env && *main_env && !pin_main_early && strcmp(main_env, "lazy") != 0) {
        disable("PINSIGHT_PIN_MAIN is neither lazy nor early");
        return;
    }

    long max = max_cpu_in(places);
    if (proc_env) {
        long m = max_cpu_in(proc_env);
        if (m > max)
            max = m;
    }
    if (max < 0 || max >= MAX_CPUS) {
        disable("PINSIGHT_PLACES names no valid CPU");
        return;
    }
    nwords = (size_t)max / WORD_BITS + 1;
    nplaces = 1;
    for (const char *c = places; *c; c++)
        if (*c == ';')
            nplaces++;
    place_masks = calloc(nplaces * nwords, sizeof(unsigned long));
    place_text = calloc(nplaces, sizeof(char *));
    if (!place_masks || !place_text) {
        disable("out of memory");
        return;
    }
    const char *p = places;
    for (size_t i = 0; i < nplaces; i++) {
        const char *e = strchr(p, ';');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (parse_list(p, len, place_masks + i * nwords) != 0) {
            disable("PINSIGHT_PLACES is not a ';'-separated list of cpulists");
            return;
        }
        place_text[i] = strndup(p, len);
        if (!place_text[i]) {
            disable("out of memory");
            return;
        }
        p = e ? e + 1 : p + len;
    }
    if (proc_env && *proc_env) {
        process_mask = calloc(nwords, sizeof(unsigned long));
        if (!process_mask || parse_list(proc_env, strlen(proc_env), process_mask) != 0) {
            disable("PINSIGHT_PROCESS_MASK is not a cpulist");
            return;
        }
    }
    if (skip_env && *skip_env) {
        size_t cap = 1;
        for (const char *c = skip_env; *c; c++)
            if (*c == ',')
                cap++;
        skip = calloc(cap, sizeof(long));
        if (!skip) {
            disable("out of memory");
            return;
        }
        const char *s = skip_env;
        while (*s) {
            char *e;
            if (*s == ',') {
                s++;
                continue;
            }
            long v = strtol(s, &e, 10);
            if (e == s || v < 0 || nskip >= cap) {
                disable("PINSIGHT_SKIP is not a list of thread indices");
                return;
            }
            skip[nskip++] = v;
            s = e;
        }
        qsort(skip, nskip, sizeof(long), cmp_long);
    }
    if (pthread_atfork(before_fork, after_fork_parent, after_fork_child) != 0) {
        disable("pthread_atfork failed");
        return;
    }
    if (pin_main_early) {
        int err = set_affinity(0, place_masks);
        report_main(" (at start, --pin-main early)", err);
    } else if (process_mask) {
        /* Every image starts on the whole plan, also after an exec in
         * place by a process whose main thread had already moved. */
        int err = set_affinity(0, process_mask);
        if (err) {
            put("pinsight-shim: main thread -> process mask: failed: ");
            put_errno(err);
            put("\n");
        }
    }
    remember_shim_fd();
    open_log();
    __atomic_store_n(&active, 1, __ATOMIC_RELEASE);
    log_thread((long)getpid(), EVENT_LOADED, -1, 0);
}
