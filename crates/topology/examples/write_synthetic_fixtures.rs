//! Rewrites the committed synthetic sysfs trees
//! (`crates/topology/tests/fixtures/synthetic/<name>/`) from the generator
//! in `tests/common/synth.rs`. Run it deliberately after changing the
//! generator, then review `git diff` and commit the trees with it:
//!
//! ```text
//! cargo run -p pinsight-topology --example write_synthetic_fixtures
//! ```
//!
//! No test writes these trees: `tests/synthetic.rs` only compares them
//! with what the generator writes and fails when they differ.

#[path = "../tests/common/synth.rs"]
mod synth;

use std::path::PathBuf;

fn main() {
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/synthetic");
    for (name, machine) in synth::committed() {
        let dest = base.join(name);
        if dest.exists() {
            std::fs::remove_dir_all(&dest)
                .unwrap_or_else(|e| panic!("removing {}: {e}", dest.display()));
        }
        machine.write(&dest);
        println!("wrote {}", dest.display());
    }
    println!("review `git diff -- crates/topology/tests/fixtures/synthetic` before committing");
}
