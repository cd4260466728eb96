//! Links the `pinsight` binary as a position-dependent executable
//! (`-no-pie`, gcc(1)): a PIE of this size carries ~20 000
//! `R_X86_64_RELATIVE` relocations that the dynamic loader applies at
//! every start, writing (and so copying) every page of `.data.rel.ro`
//! (`LD_DEBUG=statistics` shows them; ld.so(8)): 80 page faults and
//! 0.1-0.3 ms of a `pinsight run cpus:0 -- true` whose target is taskset's
//! time + 1 ms. Only the binary: tests, build scripts and proc-macros keep
//! the default. gcc and clang accept `-no-pie` on every Linux target Rust
//! supports; the binary loses only ASLR of its own image (libraries,
//! stack and heap stay randomised).
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
