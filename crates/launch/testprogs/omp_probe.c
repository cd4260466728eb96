/*
 * OpenMP test program for pinsight-launch: every OpenMP thread reports,
 * from inside the parallel region, its thread number, tid, current CPU and
 * affinity. Output: "omp <thread_num> tid <tid> cpu <cpu> affinity <cpulist>"
 * sorted by thread number, after a line "threads <n>".
 */
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAXT 256

static struct {
    long tid;
    int cpu;
    char aff[512];
} rec[MAXT];

static void cpulist(char *out, size_t cap) {
    cpu_set_t set;
    CPU_ZERO(&set);
    out[0] = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    size_t o = 0;
    for (int c = 0; c < CPU_SETSIZE && o < cap; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
            e++;
        o += (size_t)snprintf(out + o, cap - o, o ? ",%d" : "%d", c);
        if (e > c && o < cap)
            o += (size_t)snprintf(out + o, cap - o, "-%d", e);
        c = e;
    }
}

int main(void) {
    int n = 0;
#pragma omp parallel
    {
        int t = omp_get_thread_num();
        if (t < MAXT) {
            rec[t].tid = (long)syscall(SYS_gettid);
            rec[t].cpu = sched_getcpu();
            cpulist(rec[t].aff, sizeof rec[t].aff);
        }
#pragma omp single
        n = omp_get_num_threads();
    }
    printf("threads %d\n", n);
    for (int t = 0; t < n && t < MAXT; t++)
        printf("omp %d tid %ld cpu %d affinity %s\n", t, rec[t].tid, rec[t].cpu, rec[t].aff);
    return 0;
}
