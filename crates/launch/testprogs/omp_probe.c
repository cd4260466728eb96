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

#include "cpulist.h"

#define MAXT 256

static struct {
    long tid;
    int cpu;
    char aff[512];
} rec[MAXT];

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
