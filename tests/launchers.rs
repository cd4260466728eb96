//! `pinsight run --slice` under real launchers, started by these tests on
//! this machine: Open MPI's `mpirun` and a one-node Slurm (munged,
//! slurmctld and slurmd with a `slurm.conf` written here, on free ports,
//! stopped on every path). Two ranks must get disjoint CPUs, checked from
//! `/proc/self/status` inside each rank; with declared kinds (`--kinds
//! 0:P,1:E` on a two-CPU machine) each rank gets exactly one CPU; `pinsight
//! gather` merges the ranks' `--report-dir` files.
//!
//! The launchers are test prerequisites (`.ci/deps` installs Debian's
//! `openmpi-bin`, `slurm-wlm`, `munge`): a launcher that cannot start here
//! FAILS the test with the reason; only a machine with fewer than two usable
//! CPUs, where two disjoint slices cannot exist, skips.
//!
//! How they are started:
//! - `mpirun --oversubscribe --bind-to none -np 2`: Open MPI would otherwise
//!   bind each rank to a core of its own choosing (then each rank's allowed
//!   CPUs are already one core and there is nothing to slice); as root it
//!   needs `OMPI_ALLOW_RUN_AS_ROOT=1` and `OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`.
//! - Slurm: `TaskPlugin=task/none` (Slurm does not bind),
//!   `ProctrackType=proctrack/linuxproc`, auth through a munged on a socket
//!   in the temporary directory with a fresh key; `sinfo` must report the
//!   node idle before `srun -n 2`.
//!
//! Each rank runs `taskset -c A,B pinsight ...` so that the two CPUs sliced
//! are the same on any machine (A, B: the first two CPUs this test may use).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn pinsight() -> &'static str {
    env!("CARGO_BIN_EXE_pinsight")
}

/// The rank's program: the shell itself reads its own status (a builtin
/// loop, no child) and prints the launcher's local rank and its CPUs.
const PROBE: &str = r#"while read k v; do if [ "$k" = Cpus_allowed_list: ]; then echo "probe rank=${OMPI_COMM_WORLD_LOCAL_RANK:-$SLURM_LOCALID} cpus=$v"; fi; done < /proc/self/status"#;

/// The first two CPUs this process may use, and a `--kinds` spec
/// declaring the first P and every other E (on this two-CPU machine:
/// `0:P,1:E`). `None` with fewer than two CPUs.
fn two_cpus() -> Option<(usize, usize, String)> {
    let mask = pinsight_sys::affinity::get_affinity(0).expect("sched_getaffinity");
    let cpus: Vec<usize> = mask.iter().collect();
    if cpus.len() < 2 {
        return None;
    }
    let rest: Vec<String> = cpus[1..].iter().map(|c| c.to_string()).collect();
    Some((
        cpus[0],
        cpus[1],
        format!("{}:P,{}:E", cpus[0], rest.join(",")),
    ))
}

/// The rank command after the launcher: taskset, pinsight, probe.
fn rank_command(a: usize, b: usize, kinds: &str, report_dir: &Path) -> Vec<String> {
    [
        "taskset",
        "-c",
        &format!("{a},{b}"),
        pinsight(),
        "-q",
        "--kinds",
        kinds,
        "run",
        "--slice",
        "p-pinned",
        "--report-dir",
        report_dir.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        PROBE,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The (rank, CPUs) lines of the probes: two ranks, disjoint, one CPU each.
fn check_ranks(out: &Output, a: usize, b: usize, what: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    let mut seen: Vec<(usize, String)> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("probe rank="))
        .map(|l| {
            let (r, c) = l.split_once(" cpus=").expect("probe line");
            (r.parse().expect("rank"), c.trim().to_string())
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![(0, a.to_string()), (1, b.to_string())],
        "{what}: each rank on its own CPU (rank 0 on the declared P-core):\n{stdout}\n{stderr}"
    );
}

/// The ranks' report files, and `pinsight gather` merging them.
fn check_reports(dir: &Path, a: usize, b: usize) {
    let hosts: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(hosts.len(), 1, "one host directory: {hosts:?}");
    for (rank, cpu) in [(0, a), (1, b)] {
        let f = hosts[0].join(format!("rank-{rank}.json"));
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())),
        )
        .unwrap();
        assert_eq!(v["slice"]["rank"], rank);
        assert_eq!(v["slice"]["size"], 2);
        assert_eq!(v["slice"]["cpus"], cpu.to_string());
        assert_eq!(v["plan"]["process_mask"], cpu.to_string());
    }
    let out = Command::new(pinsight())
        .args(["gather", "--json"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gather: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ranks = v["nodes"][0]["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 2, "{v}");
    assert_eq!(ranks[0]["cpus"], a.to_string());
    assert_eq!(ranks[1]["cpus"], b.to_string());
    assert!(v["nodes"][0]["wall_ms_spread"].as_f64().is_some(), "{v}");
}

/// `timeout 60 PROGRAM ARGS`, output captured.
fn run_bounded(program: &str, args: &[String], envs: &[(&str, &str)]) -> Output {
    Command::new("timeout")
        .arg("60")
        .arg(program)
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot start timeout {program}: {e} (coreutils timeout is a test prerequisite)")
        })
}

#[test]
fn mpirun_two_ranks_get_disjoint_slices() {
    let Some((a, b, kinds)) = two_cpus() else {
        pinsight_testkit::skip_test!(
            "fewer than two usable CPUs: two disjoint slices cannot exist"
        );
    };
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("reports");
    let mut args: Vec<String> = ["--oversubscribe", "--bind-to", "none", "-np", "2"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(rank_command(a, b, &kinds, &reports));
    let out = run_bounded(
        "mpirun",
        &args,
        &[
            ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
            ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
        ],
    );
    check_ranks(&out, a, b, "mpirun -np 2 pinsight run --slice p-pinned");
    check_reports(&reports, a, b);
}

/// A daemon started by the test, stopped (SIGTERM, then SIGKILL) when the
/// test ends on any path.
struct Daemons {
    children: Vec<(String, Child)>,
}

impl Drop for Daemons {
    fn drop(&mut self) {
        for (_, c) in self.children.iter_mut().rev() {
            // SAFETY: kill(2) on our own child's pid.
            unsafe {
                libc::kill(c.id() as i32, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for (_, c) in self.children.iter_mut().rev() {
            while Instant::now() < deadline {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Daemons {
    fn start(&mut self, name: &str, cmd: &mut Command, log: &Path) {
        let f = std::fs::File::create(log).unwrap();
        let child = cmd
            .stdout(Stdio::from(f.try_clone().unwrap()))
            .stderr(Stdio::from(f))
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start {name}: {e} (Debian packages slurm-wlm and munge are test prerequisites)")
            });
        self.children.push((name.to_string(), child));
    }

    /// Fails naming the daemon that died, with its log.
    fn check_alive(&mut self, dir: &Path) {
        for (name, c) in &mut self.children {
            if let Ok(Some(st)) = c.try_wait() {
                let log =
                    std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default();
                panic!("{name} exited ({st}):\n{log}");
            }
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn command_text(program: &str, args: &[&str]) -> String {
    let o = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn srun_two_ranks_get_disjoint_slices() {
    let Some((a, b, kinds)) = two_cpus() else {
        pinsight_testkit::skip_test!(
            "fewer than two usable CPUs: two disjoint slices cannot exist"
        );
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sub in ["state", "spool"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    // A fresh munge key (munged wants 0600, owned by the user running it).
    let key = d.join("munge.key");
    let mut bytes = vec![0u8; 1024];
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut bytes)
        .unwrap();
    std::fs::write(&key, &bytes).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let sock = d.join("munge.sock");
    let host = command_text("hostname", &["-s"]);
    assert!(!host.is_empty(), "hostname -s printed nothing");
    let ncpus = command_text("getconf", &["_NPROCESSORS_ONLN"]);
    let (ctld_port, d_port) = (free_port(), free_port());
    let p = |x: &str| d.join(x).display().to_string();
    let conf = format!(
        "ClusterName=pinsight\n\
         SlurmctldHost={host}(127.0.0.1)\n\
         SlurmctldPort={ctld_port}\n\
         SlurmdPort={d_port}\n\
         AuthType=auth/munge\n\
         AuthInfo=socket={sock}\n\
         CredType=cred/munge\n\
         ProctrackType=proctrack/linuxproc\n\
         TaskPlugin=task/none\n\
         SelectType=select/cons_tres\n\
         SelectTypeParameters=CR_CPU\n\
         MpiDefault=none\n\
         SlurmUser=root\n\
         SlurmdUser=root\n\
         StateSaveLocation={state}\n\
         SlurmdSpoolDir={spool}\n\
         SlurmctldPidFile={cpid}\n\
         SlurmdPidFile={dpid}\n\
         JobAcctGatherType=jobacct_gather/none\n\
         AccountingStorageType=accounting_storage/none\n\
         ReturnToService=2\n\
         NodeName={host} NodeAddr=127.0.0.1 CPUs={ncpus} State=UNKNOWN\n\
         PartitionName=pinsight Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
        sock = sock.display(),
        state = p("state"),
        spool = p("spool"),
        cpid = p("slurmctld.pid"),
        dpid = p("slurmd.pid"),
    );
    let conf_path = d.join("slurm.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let conf_s = conf_path.display().to_string();
    let mut daemons = Daemons {
        children: Vec::new(),
    };
    daemons.start(
        "munged",
        Command::new("munged").args([
            "--foreground",
            "--force",
            &format!("--socket={}", sock.display()),
            &format!("--key-file={}", key.display()),
            &format!("--pid-file={}", p("munged.pid")),
            &format!("--seed-file={}", p("munge.seed")),
            &format!("--log-file={}", p("munged.file.log")),
        ]),
        &d.join("munged.log"),
    );
    let t0 = Instant::now();
    while !sock.exists() {
        daemons.check_alive(d);
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "munged made no socket in 10 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    daemons.start(
        "slurmctld",
        Command::new("slurmctld").args(["-D", "-i", "-f", &conf_s]),
        &d.join("slurmctld.log"),
    );
    daemons.start(
        "slurmd",
        Command::new("slurmd").args(["-D", "-f", &conf_s, "-N", &host]),
        &d.join("slurmd.log"),
    );
    let t0 = Instant::now();
    loop {
        daemons.check_alive(d);
        let state = Command::new("sinfo")
            .args(["-h", "-o", "%T"])
            .env("SLURM_CONF", &conf_s)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        if state == "idle" {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the Slurm node is not idle after 30 s (sinfo: '{state}'):\n{}\n{}",
            std::fs::read_to_string(d.join("slurmctld.log")).unwrap_or_default(),
            std::fs::read_to_string(d.join("slurmd.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let reports = d.join("reports");
    let mut args: Vec<String> = ["-n", "2", "-N", "1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(rank_command(a, b, &kinds, &reports));
    let out = run_bounded("srun", &args, &[("SLURM_CONF", &conf_s)]);
    check_ranks(&out, a, b, "srun -n 2 pinsight run --slice p-pinned");
    check_reports(&reports, a, b);
    drop(daemons);
}
