//! Links the `pinsight` binary for a fast start: position-dependent, and
//! with gcc's unwinder linked in statically (as gcc's `-static-libgcc`)
//! when the C toolchain has its static archive.
//!
//! Why position-dependent (`-no-pie`, gcc(1)): a PIE of this size carries
//! ~20 000 `R_X86_64_RELATIVE` relocations that the loader applies at
//! every start, writing (and so copying) every page of `.data.rel.ro`
//! (`LD_DEBUG=statistics` shows them; ld.so(8)): 80 page faults and
//! 0.1-0.3 ms of a `pinsight run cpus:0 -- true` whose target is taskset's
//! time + 1 ms. The binary loses only ASLR of its own image (libraries,
//! stack and heap stay randomised).
//!
//! Why the static unwinder: Rust's standard library links gcc's unwinder
//! as the shared `libgcc_s.so.1`, which every start then opens, maps and
//! binds, and whose constructor (`__cpu_indicator_init`) runs a few dozen
//! CPUID instructions, each a trap to the hypervisor on a virtual machine:
//! about 0.2 ms of a 2.2 ms `pinsight run cpus:0 -- true` on the 2-vCPU
//! test VM (hyperfine, 400 runs: 2.27 -> 2.09 ms median, taskset 1.22).
//! `libgcc_eh.a` is the same unwinder as an archive, the one gcc links for
//! `-static-libgcc` and `-static`. The C library stays shared: a static
//! pinsight would itself be a static program to the LD_PRELOAD shim, and
//! `pinsight workload` (the reference program of the docs and tests) must
//! be pinned per thread at its threads' birth like any dynamic program.
//!
//! How: rustc names the unwinder on the link line itself (`-lgcc_s`, from
//! std's `unwind` crate when crt-static is off), so gcc's
//! `-static-libgcc` cannot replace it, and `-C target-feature=+crt-static`
//! would make the whole program static (and rustc refuses it for the
//! proc-macros of a host build). A directory searched before the system's
//! (given to the binary's link only) holds a `libgcc_s.so` that is a
//! linker script naming the archive, `INPUT(/…/libgcc_eh.a)`: GNU ld and
//! lld read an input that is not an object or archive as a linker script
//! (ld(1), "INPUT"). Only the binary: tests, build scripts and proc-macros
//! keep the default link.
//!
//! Where the C compiler cannot find `libgcc_eh.a` (libgcc-N-dev, a
//! dependency of Debian's gcc) the unwinder stays shared, with a build
//! warning: slower to start, same behaviour. A cross build (target other
//! than the host) keeps it shared too: `cc` is the host's compiler. `PINSIGHT_SHARED_LIBGCC=1`
//! in the build environment asks for the shared one.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PINSIGHT_SHARED_LIBGCC");
    println!("cargo:rerun-if-env-changed=CC");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-no-pie");
    // `cc` is asked where the archive is: the host's compiler, so only
    // for a build for the host (a cross build keeps the shared unwinder).
    if std::env::var("CARGO_CFG_TARGET_ENV").as_deref() != Ok("gnu")
        || std::env::var("TARGET").ok() != std::env::var("HOST").ok()
        || std::env::var_os("PINSIGHT_SHARED_LIBGCC").is_some_and(|v| v != "0")
    {
        return;
    }
    match archive("libgcc_eh.a") {
        Ok(path) => {
            let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
            let dir = out.join("static-libgcc");
            std::fs::create_dir_all(&dir).expect("OUT_DIR is writable");
            // Quoted: a linker script's file name may hold spaces or
            // parentheses only between double quotes (ld(1), "File
            // Commands"); a name with a quote in it is left to the
            // shared unwinder (below).
            std::fs::write(
                dir.join("libgcc_s.so"),
                format!("INPUT(\"{}\")\n", path.display()),
            )
            .expect("OUT_DIR is writable");
            println!("cargo:rustc-link-arg-bins=-L{}", dir.display());
        }
        Err(why) => println!(
            "cargo:warning=pinsight links the shared libgcc_s (starts ~0.2 ms slower): {why}"
        ),
    }
}

/// `name`'s full path, as the C compiler finds it.
fn archive(name: &str) -> Result<PathBuf, String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    // `cc -print-file-name=X` prints X's full path when the compiler's
    // search finds it, and X alone when it does not (gcc(1)).
    let out = Command::new(&cc)
        .arg(format!("-print-file-name={name}"))
        .output()
        .map_err(|e| format!("cannot run the C compiler `{cc}`: {e}"))?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if out.status.success()
        && path.is_absolute()
        && path.exists()
        && !path.to_string_lossy().contains('"')
    {
        Ok(path)
    } else {
        Err(format!(
            "`{cc}` finds no {name} (gcc's libgcc-N-dev has it)"
        ))
    }
}
