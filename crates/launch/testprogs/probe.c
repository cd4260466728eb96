/*
 * Test program for pinsight-launch: starts threads and reports, from inside
 * each thread, where it runs (sched_getcpu) and what it may run on
 * (sched_getaffinity) -- the program's own view, to compare with the plan.
 *
 *   probe [-t N] [-d MS] [-w] [-p] [-l MS] [-o FILE]
 *     -t N   create N threads besides the main thread (default 2)
 *     -d MS  sleep MS milliseconds before creating the threads
 *     -w     print "ready" after all threads reported, wait for a line (or
 *            EOF) on stdin, then report every thread again ("after" lines)
 *     -p     each created thread spins until its affinity changes from the
 *            one it started with (at most 2 s) and reports after how many
 *            microseconds (and the affinity it then has): the delay of an
 *            outside pinner such as --follow
 *     -l MS  every thread lingers MS milliseconds before exiting (so an
 *            outside observer can sample it)
 *     -o F   write the report to file F instead of stdout
 *     -q     name created thread i "CPU <i-1>/KVM", like QEMU's vCPU threads
 *     -e     also print what the program sees at start: "ncpus N" (CPUs in
 *            its affinity mask, as nproc counts them) and "env NAME=VALUE"
 *            for the variables pinsight may set (or "env NAME unset")
 *     -F     first try a pthread_create that must fail (a stack larger than
 *            the address space) and print "failed_create <errno>"
 *     -f     after the threads reported, fork without exec: the child prints
 *            its main thread ("fork 0 ...") and one thread it creates
 *            ("fork 1 ...") and exits; the parent waits for it
 *
 * Output lines: "<phase> <i> tid <tid> cpu <cpu> affinity <cpulist> [pinned_after_us <us>]"
 * with phase "start" or "after", i = 0 for the main thread, 1.. in creation order;
 * "created 0 ..." is the main thread right after it created its threads.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpulist.h"

#define MAXT 256

struct rec {
    long tid;
    int cpu;
    char aff[512];
    long pinned_after_us;
};

static struct rec start_rec[MAXT + 1], after_rec[MAXT + 1], created_rec, fork_rec[2];
static int spin_for_pin, linger_ms, qemu_names;
static pthread_barrier_t reported, go_on, done;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void fill(struct rec *r) {
    r->tid = (long)syscall(SYS_gettid);
    r->cpu = sched_getcpu();
    cpulist(r->aff, sizeof r->aff);
    r->pinned_after_us = -1;
}

static void *worker(void *arg) {
    long i = (long)arg;
    double t0 = now_us();
    if (qemu_names) {
        char name[16];
        snprintf(name, sizeof name, "CPU %ld/KVM", i - 1);
        pthread_setname_np(pthread_self(), name);
    }
    fill(&start_rec[i]);
    if (spin_for_pin && strcmp(start_rec[i].aff, start_rec[0].aff) != 0) {
        /* Already moved off the inherited mask before its first look. */
        start_rec[i].pinned_after_us = 0;
    } else if (spin_for_pin) {
        char cur[512];
        for (;;) {
            cpulist(cur, sizeof cur);
            double t = now_us();
            if (strcmp(cur, start_rec[i].aff) != 0) {
                start_rec[i].pinned_after_us = (long)(t - t0);
                strcpy(start_rec[i].aff, cur);
                start_rec[i].cpu = sched_getcpu();
                break;
            }
            if (t - t0 > 2e6)
                break;
        }
    }
    pthread_barrier_wait(&reported);
    pthread_barrier_wait(&go_on);
    fill(&after_rec[i]);
    pthread_barrier_wait(&done);
    if (linger_ms > 0)
        usleep((useconds_t)linger_ms * 1000);
    return NULL;
}

static void print(const char *phase, struct rec *r, int n) {
    for (int i = 0; i <= n; i++) {
        printf("%s %d tid %ld cpu %d affinity %s", phase, i, r[i].tid, r[i].cpu, r[i].aff);
        if (r[i].pinned_after_us >= 0)
            printf(" pinned_after_us %ld", r[i].pinned_after_us);
        printf("\n");
    }
    fflush(stdout);
}

static void *fork_worker(void *arg) {
    (void)arg;
    fill(&fork_rec[1]);
    return NULL;
}

static void print_env(void) {
    static const char *names[] = {"OMP_NUM_THREADS", "RAYON_NUM_THREADS", "CILK_NWORKERS",
                                  "OMP_PLACES",      "OMP_PROC_BIND",     "GOMP_CPU_AFFINITY",
                                  "LD_PRELOAD",      "PINSIGHT_PLACES",   NULL};
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        printf("ncpus %d\n", CPU_COUNT(&set));
    for (int i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        if (v)
            printf("env %s=%s\n", names[i], v);
        else
            printf("env %s unset\n", names[i]);
    }
    fflush(stdout);
}

static int do_fork(void) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("probe: fork");
        return 1;
    }
    if (pid == 0) {
        fill(&fork_rec[0]);
        pthread_t t;
        if (pthread_create(&t, NULL, fork_worker, NULL) != 0)
            _exit(3);
        pthread_join(t, NULL);
        print("fork", fork_rec, 1);
        _exit(0);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "probe: forked child failed\n");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    int n = 2, delay_ms = 0, wait = 0, opt, env = 0, fail_first = 0, forks = 0;
    while ((opt = getopt(argc, argv, "t:d:wpl:o:qeFf")) != -1) {
        switch (opt) {
        case 't': n = atoi(optarg); break;
        case 'd': delay_ms = atoi(optarg); break;
        case 'w': wait = 1; break;
        case 'p': spin_for_pin = 1; break;
        case 'l': linger_ms = atoi(optarg); break;
        case 'q': qemu_names = 1; break;
        case 'e': env = 1; break;
        case 'F': fail_first = 1; break;
        case 'f': forks = 1; break;
        case 'o':
            if (!freopen(optarg, "w", stdout)) {
                perror("probe: -o");
                return 2;
            }
            break;
        default:
            fprintf(stderr, "usage: probe [-t N] [-d MS] [-w] [-p] [-l MS] [-o FILE] [-q] [-e] [-F] [-f]\n");
            return 2;
        }
    }
    if (n < 0 || n > MAXT) {
        fprintf(stderr, "probe: -t must be 0..%d\n", MAXT);
        return 2;
    }
    fill(&start_rec[0]);
    if (env)
        print_env();
    if (fail_first) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        /* Larger than any address space: mmap of the stack fails. */
        int r = pthread_attr_setstacksize(&attr, (size_t)1 << (sizeof(size_t) * 8 - 2));
        pthread_t t;
        if (r == 0)
            r = pthread_create(&t, &attr, fork_worker, NULL);
        if (r == 0) {
            pthread_join(t, NULL);
            fprintf(stderr, "probe: the huge-stack pthread_create succeeded\n");
            return 1;
        }
        printf("failed_create %d\n", r);
        fflush(stdout);
        pthread_attr_destroy(&attr);
    }
    if (delay_ms > 0)
        usleep((useconds_t)delay_ms * 1000);
    pthread_barrier_init(&reported, NULL, (unsigned)n + 1);
    pthread_barrier_init(&go_on, NULL, (unsigned)n + 1);
    pthread_barrier_init(&done, NULL, (unsigned)n + 1);
    pthread_t th[MAXT];
    for (long i = 1; i <= n; i++) {
        if (pthread_create(&th[i - 1], NULL, worker, (void *)i) != 0) {
            perror("probe: pthread_create");
            return 1;
        }
    }
    fill(&created_rec);
    pthread_barrier_wait(&reported);
    print("start", start_rec, n);
    print("created", &created_rec, 0);
    if (forks && do_fork() != 0)
        return 1;
    if (wait) {
        printf("ready\n");
        fflush(stdout);
        char line[64];
        if (!fgets(line, sizeof line, stdin)) {
            /* EOF: go on */
        }
    }
    pthread_barrier_wait(&go_on);
    fill(&after_rec[0]);
    pthread_barrier_wait(&done);
    if (wait)
        print("after", after_rec, n);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    if (linger_ms > 0)
        usleep((useconds_t)linger_ms * 1000);
    return 0;
}
