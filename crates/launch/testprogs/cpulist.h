/*
 * What the test programs (probe.c, omp_probe.c) share: the calling
 * thread's affinity as the kernel writes a cpulist ("0-3,8"), "?" when it
 * cannot be read, cut short to fit `cap` bytes.
 */
#ifndef PINSIGHT_TESTPROGS_CPULIST_H
#define PINSIGHT_TESTPROGS_CPULIST_H

#include <sched.h>
#include <stdio.h>

static void cpulist(char *out, size_t cap) {
    cpu_set_t set;
    CPU_ZERO(&set);
    out[0] = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        snprintf(out, cap, "?");
        return;
    }
    size_t o = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
            e++;
        o += (size_t)snprintf(out + o, cap - o, o ? ",%d" : "%d", c);
        if (e > c && o < cap)
            o += (size_t)snprintf(out + o, cap - o, "-%d", e);
        c = e;
        if (o >= cap)
            break;
    }
}

#endif
