#!/usr/bin/env python3
"""Writes before/ and after/: two readings, 2.00 s apart, of a 2-CPU
machine emulating a hybrid (`pinsight emulate --kinds 0:P,1:E@0.5`, a
duty-cycle stealer, pid 4425, taking half of CPU 1) with six tasks of 12%
of a CPU each, three pinned on each CPU. /proc/schedstat (version 17)
gives each CPU's run time: CPU 0 38%, CPU 1 88% of which the stealer's
own schedstat says 50% is its. /proc/stat's tick samples alias with the
stealer's 2 ms period (CPU 1 reads 192 busy ticks of 216 for 176 of run
time; CPU 0 shows system time for user loops), as on a VM at 100 Hz.

Run it from this directory: python3 make_emulated.py
"""
import os

UPTIME = (1000.00, 1002.00)
# CPU: (user, nice, system, idle, iowait, irq, softirq, steal) before, delta.
STAT = {
    0: ((50000, 10, 9000, 80000, 300, 0, 200, 0), (54, 0, 22, 124, 0, 0, 0, 0)),
    1: ((60000, 10, 8000, 70000, 200, 0, 150, 0), (190, 0, 2, 24, 0, 0, 0, 0)),
}
# CPU: (running ns, waiting ns, timeslices) before, delta.
SCHED = {
    0: ((500_000_000_000, 20_000_000_000, 900_000), (760_000_000, 30_000_000, 400)),
    1: ((600_000_000_000, 90_000_000_000, 2_000_000), (1_760_000_000, 400_000_000, 1500)),
}
# pid: (comm, cpu, utime ticks before, delta, runtime ns before, delta).
THREADS = {
    4425: ("pinsight", 1, 5000, 100, 50_000_000_000, 1_000_000_000),
    5001: ("python3", 0, 300, 24, 3_000_000_000, 240_000_000),
    5002: ("python3", 1, 300, 24, 3_000_000_000, 240_000_000),
    5003: ("python3", 0, 300, 24, 3_000_000_000, 240_000_000),
    5004: ("python3", 1, 300, 24, 3_000_000_000, 240_000_000),
    5005: ("python3", 0, 300, 24, 3_000_000_000, 240_000_000),
    5006: ("python3", 1, 300, 24, 3_000_000_000, 240_000_000),
}


def stat_line(pid, comm, cpu, utime):
    # Fields 3..52 of proc(5)'s /proc/PID/stat: state R, ppid 1, ...,
    # utime (14), stime 0 (15), num_threads 1 (20), processor (39).
    f = ["R", "1", str(pid), str(pid), "0", "-1", "4194560"] + ["0"] * 4
    f += [str(utime), "0", "0", "0", "20", "0", "1", "0", "500"]
    f += ["0"] * 15 + ["17", str(cpu)] + ["0"] * 13
    return f"{pid} ({comm}) " + " ".join(f) + "\n"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)


for n, which in enumerate(("before", "after")):
    root = os.path.join(which, "proc")
    write(os.path.join(root, "uptime"), f"{UPTIME[n]:.2f} 1500.00\n")
    cpus = {c: [b + d * n for b, d in zip(*STAT[c])] for c in STAT}
    total = [sum(cpus[c][i] for c in cpus) for i in range(8)]
    lines = ["cpu  " + " ".join(map(str, total + [0, 0]))]
    lines += [f"cpu{c} " + " ".join(map(str, v + [0, 0])) for c, v in cpus.items()]
    lines += ["intr 0", "ctxt 0", "btime 1700000000", "processes 6000",
              "procs_running 4", "procs_blocked 0", "softirq 0"]
    write(os.path.join(root, "stat"), "\n".join(lines) + "\n")
    sched = ["version 17", f"timestamp {4295000000 + n * 500}"]
    for c, (b, d) in SCHED.items():
        run, wait, slices = (x + y * n for x, y in zip(b, d))
        sched.append(f"cpu{c} 0 0 3000000 1000000 2000000 900000 {run} {wait} {slices}")
        sched.append(f"domain0 00000003 " + " ".join(["0"] * 45))
    write(os.path.join(root, "schedstat"), "\n".join(sched) + "\n")
    for pid, (comm, cpu, ut, dut, ns, dns) in THREADS.items():
        line = stat_line(pid, comm, cpu, ut + dut * n)
        write(os.path.join(root, str(pid), "stat"), line)
        write(os.path.join(root, str(pid), "comm"), comm + "\n")
        task = os.path.join(root, str(pid), "task", str(pid))
        write(os.path.join(task, "stat"), line)
        write(os.path.join(task, "schedstat"), f"{ns + dns * n} 1000000 500\n")
