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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/* ---- setup ---- */

__attribute__((constructor)) static void pinsight_shim_init(void) {
    resolve();
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
    __atomic_store_n(&active, 1, __ATOMIC_RELEASE);
}
