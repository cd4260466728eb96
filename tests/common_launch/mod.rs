//! Shared by the suites that start real launchers (tests/launchers.rs,
//! tests/compare_ranks.rs): the two CPUs to slice, Open MPI's root
//! environment, and a one-node Slurm (munged, slurmctld, slurmd) started
//! in a temporary directory and stopped on every path.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Lets Open MPI's mpirun run as root (CI runs as root).
pub const MPI_ENV: [(&str, &str); 2] = [
    ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
    ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
];

/// The first two CPUs this process may use and a `--kinds` spec declaring
/// the first P and every other E. `None` with fewer than two CPUs.
pub fn two_cpus() -> Option<(usize, usize, String)> {
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

/// Daemons started by the test, stopped (SIGTERM, then SIGKILL) when the
/// test ends on any path.
pub struct Daemons {
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
    pub fn start(&mut self, name: &str, cmd: &mut Command, log: &Path) {
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

    pub fn check_alive(&mut self, dir: &Path) {
        for (name, c) in &mut self.children {
            if let Ok(Some(st)) = c.try_wait() {
                let log =
                    std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default();
                panic!("{name} exited ({st}):\n{log}");
            }
        }
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn command_text(program: &str, args: &[&str]) -> String {
    let o = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A one-node Slurm in `d` (munged, slurmctld, slurmd, as tests/launchers.rs
/// starts it), idle; returns the daemons and the `slurm.conf` path.
pub fn start_slurm(d: &Path) -> (Daemons, String) {
    for sub in ["state", "spool"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
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
    (daemons, conf_s)
}
