//! Builds the LD_PRELOAD shim (a shared object, embedded in the library with
//! `include_bytes!`) and the C test programs the tests run.
//!
//! `cc::Build` makes static archives; a preload shim must be a `.so`, so we
//! take the configured compiler from `cc` (honouring CC/CFLAGS/target) and
//! link it ourselves with `-shared -fPIC`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn compile(args: &[&str], what: &str) -> Result<(), String> {
    let tool = cc::Build::new()
        .cargo_metadata(false)
        .opt_level(2)
        .get_compiler();
    let mut cmd: Command = tool.to_command();
    cmd.args(args);
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot run the C compiler: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what}: C compiler failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("OUT_DIR is valid UTF-8")
}

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    for f in [
        "shim/pinsight_shim.c",
        "testprogs/probe.c",
        "testprogs/omp_probe.c",
        "testprogs/cpulist.h",
    ] {
        println!("cargo:rerun-if-changed={f}");
    }
    println!("cargo:rerun-if-env-changed=CC");
    println!("cargo:rerun-if-env-changed=CFLAGS");

    let shim = out.join("libpinsight_shim.so");
    if let Err(e) = compile(
        &[
            "-shared",
            "-fPIC",
            "-Wall",
            "-Wextra",
            "-o",
            path_str(&shim),
            "shim/pinsight_shim.c",
            "-ldl",
            "-lpthread",
        ],
        "pinsight shim",
    ) {
        panic!("{e}");
    }
    println!("cargo:rustc-env=PINSIGHT_SHIM_SO={}", shim.display());

    // Test programs: the probe is required (tests depend on it); the OpenMP
    // one only if the compiler has OpenMP (the test then says it skipped).
    let probe = out.join("pinsight-probe");
    if let Err(e) = compile(
        &[
            "-Wall",
            "-pthread",
            "-o",
            path_str(&probe),
            "testprogs/probe.c",
        ],
        "probe",
    ) {
        panic!("{e}");
    }
    println!("cargo:rustc-env=PINSIGHT_PROBE_BIN={}", probe.display());
    // The same probe statically linked: the shim cannot reach it, and `run`
    // must notice before exec. Tests that need it fail (never skip) when the
    // static C library is missing, naming the package.
    let static_probe = out.join("pinsight-probe-static");
    let static_path = match compile(
        &[
            "-static",
            "-pthread",
            "-o",
            path_str(&static_probe),
            "testprogs/probe.c",
        ],
        "static probe",
    ) {
        Ok(()) => static_probe.display().to_string(),
        Err(_) => String::new(),
    };
    println!("cargo:rustc-env=PINSIGHT_STATIC_PROBE_BIN={static_path}");
    let omp = out.join("pinsight-omp-probe");
    let omp_path = match compile(
        &["-fopenmp", "-o", path_str(&omp), "testprogs/omp_probe.c"],
        "OpenMP probe",
    ) {
        Ok(()) => omp.display().to_string(),
        Err(_) => String::new(),
    };
    println!("cargo:rustc-env=PINSIGHT_OMP_PROBE_BIN={omp_path}");
}
