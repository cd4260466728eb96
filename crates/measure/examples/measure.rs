//! Measure a command N times and print one JSON record per run (for
//! comparing with `perf stat -r N`):
//!
//! ```text
//! cargo run --release -p pinsight-measure --example measure -- 5 sh -c 'yes | head -c 100M >/dev/null'
//! ```

use pinsight_measure::{Measurer, Options};
use pinsight_sys::spawn::Spawn;
use pinsight_sys::FsRoot;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: measure RUNS PROGRAM [ARGS...]");
        std::process::exit(2);
    }
    let runs: usize = args[0].parse().unwrap_or_else(|_| {
        eprintln!("measure: RUNS '{}' is not a number", args[0]);
        std::process::exit(2)
    });
    pinsight_measure::install_signal_cleanup().expect("signal cleanup");
    let (m, notes) = Measurer::new(&FsRoot::live(), Options::default());
    for n in notes {
        eprintln!("{n}");
    }
    for _ in 0..runs {
        let mut cmd = Spawn::new(&args[1]);
        cmd.args(&args[2..]);
        match m.run(cmd) {
            Ok(r) => println!("{}", serde_json::to_string(&r).unwrap()),
            Err(e) => {
                eprintln!("measure: {e}");
                std::process::exit(e.exit_code());
            }
        }
    }
}
