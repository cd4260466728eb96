#!/usr/bin/env python3
"""Writes the recorded /proc readings of tests/data/load/hot-irq/: two
readings 2 s apart (200 ticks at USER_HZ 100) of the 20-CPU hybrid laptop
of hwloc's fixtures (20em64t-hybrid-1p6c2t+2ca4co1t: CPUs 0-11 six P-cores
with SMT, 12-19 eight E-cores). Twenty single-threaded `stream` processes
are pinned one per CPU (the operator's story: the E-cores carry more load
per unit of capacity); the NIC queue eth0-TxRx-0 (IRQ 36) lands on CPU 3
alone, which spends 40% of its time in hard and soft interrupts.

Run it from this directory; the files are committed, the script documents
them: python3 make_hot_irq.py
"""
import os

N = 20
T = 200  # ticks per CPU over the interval
BASE = [100000 + 1000 * c for c in range(N)]


def split(cpu):
    """(user, nice, system, idle, iowait, irq, softirq, steal) over T."""
    if cpu == 3:
        return (60, 0, 10, 50, 0, 30, 50, 0)
    if cpu < 12:
        return (110, 0, 10, 78, 2, 0, 0, 0)
    return (150, 0, 10, 40, 0, 0, 0, 0)


def stat(after):
    lines = []
    tot = [0] * 10
    rows = []
    for c in range(N):
        f = [BASE[c] * (k + 1) // 7 for k in range(8)]
        if after:
            f = [a + b for a, b in zip(f, split(c))]
        row = f + [0, 0]
        rows.append(f"cpu{c} " + " ".join(map(str, row)))
        tot = [a + b for a, b in zip(tot, row)]
    lines.append("cpu  " + " ".join(map(str, tot)))
    lines += rows
    lines += ["intr 0", "ctxt 123456", "btime 1764140000", "processes 5000",
              "procs_running 21", "procs_blocked 0", "softirq 0"]
    return "\n".join(lines) + "\n"


def row(name, counts, desc=""):
    return f"{name:>4}:" + "".join(f" {v:>10}" for v in counts) + (f"   {desc}" if desc else "")


def interrupts(after):
    k = 1 if after else 0
    out = ["     " + "".join(f"       CPU{c:<3}" for c in range(N)).rstrip()]
    def per(cpu_counts):
        return [cpu_counts.get(c, 0) for c in range(N)]
    out.append(row("0", per({0: 36}), "IO-APIC   2-edge      timer"))
    out.append(row("9", per({0: 10, 1: 4}), "IO-APIC   9-fasteoi   acpi"))
    out.append(row("16", per({2: 500 + 20 * k}), "IO-APIC  16-fasteoi   ehci_hcd:usb1, i801_smbus"))
    out.append(row("36", per({3: 9_000_000 + 90_000 * k}), "PCI-MSI 524288-edge      eth0-TxRx-0"))
    out.append(row("37", per({5: 400_000 + 2_000 * k}), "PCI-MSI 524289-edge      eth0-TxRx-1"))
    out.append(row("40", per({0: 70_000 + 600 * k, 8: 1000}), "PCI-MSI 1048576-edge      nvme0q1"))
    out.append(row("41", per({}), "PCI-MSI 1048577-edge      nvme0q2"))
    out.append(row("NMI", per({}), "Non-maskable interrupts"))
    out.append(row("LOC", per({c: 5_000_000 + 2_000 * k for c in range(N)}), "Local timer interrupts"))
    out.append(row("RES", per({c: 1000 + 50 * k for c in range(N)}), "Rescheduling interrupts"))
    out.append("ERR:          0")
    out.append("MIS:          0")
    return "\n".join(out) + "\n"


def softirqs(after):
    k = 1 if after else 0
    names = ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"]
    out = ["                    " + "".join(f"CPU{c:<8}" for c in range(N)).rstrip()]
    for n in names:
        vals = []
        for c in range(N):
            v = {"TIMER": 400_000 + 1_000 * k, "SCHED": 300_000 + 800 * k, "RCU": 200_000 + 500 * k}.get(n, 0)
            if n == "NET_RX" and c == 3:
                v = 8_000_000 + 80_000 * k
            if n == "NET_RX" and c == 5:
                v = 300_000 + 1_500 * k
            if n == "BLOCK" and c == 0:
                v = 60_000 + 500 * k
            vals.append(v)
        out.append(f"{n:>12}:" + "".join(f" {v:>10}" for v in vals))
    return "\n".join(out) + "\n"


def task_stat(pid, comm, cpu, utime, stime, flags):
    # Fields 3..52 (proc(5)); 9 flags, 14 utime, 15 stime, 22 starttime, 39 processor.
    f = ["S", "1", str(pid), str(pid), "0", "-1", str(flags), "0", "0", "0", "0",
         str(utime), str(stime), "0", "0", "20", "0", "1", "0", "500"] + ["0"] * 16
    f += [str(cpu)] + ["0"] * 13
    return f"{pid} ({comm}) " + " ".join(f) + "\n"


def threads(after):
    out = {}
    for c in range(N):
        user, _, system, *_ = split(c)
        busy = user + system
        base = 5000 + 100 * c
        run = busy - (10 if c != 3 else 0)  # the rest: other threads
        u = base + (run * 9 // 10 if after else 0)
        s = 300 + (run - run * 9 // 10 if after else 0)
        out[(1000 + c, 1000 + c)] = task_stat(1000 + c, "stream", c, u, s, 0x400100)
    # ksoftirqd/3: a per-CPU kernel thread (PF_KTHREAD | PF_NO_SETAFFINITY).
    out[(30, 30)] = task_stat(30, "ksoftirqd/3", 3, 0, 2000 + (40 if after else 0), 0x4208040)
    out[(31, 31)] = task_stat(31, "kworker/3:1", 3, 0, 100 + (3 if after else 0), 0x4208060)
    # A two-thread service on the P-cores.
    out[(900, 900)] = task_stat(900, "sshd", 0, 10 + (5 if after else 0), 5, 0x400100)
    out[(900, 901)] = task_stat(900, "sshd-worker", 0, 3, 2 + (3 if after else 0), 0x400040)
    return out


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


for name, after in (("before", False), ("after", True)):
    root = os.path.join("hot-irq", name, "proc")
    write(os.path.join(root, "stat"), stat(after))
    write(os.path.join(root, "interrupts"), interrupts(after))
    write(os.path.join(root, "softirqs"), softirqs(after))
    for irq, aff, eff in ((0, "0", "0"), (9, "0-19", "0"), (16, "0-19", "2"), (36, "3", "3"),
                          (37, "0-19", "5"), (40, "0-19", "0"), (41, "0-19", "1")):
        write(os.path.join(root, "irq", str(irq), "smp_affinity_list"), aff + "\n")
        write(os.path.join(root, "irq", str(irq), "effective_affinity_list"), eff + "\n")
    for (pid, tid), text in threads(after).items():
        write(os.path.join(root, str(pid), "task", str(tid), "stat"), text)
        write(os.path.join(root, str(pid), "comm"), text.split("(")[1].split(")")[0] + "\n")
