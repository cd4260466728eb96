//! A calibrated emulation run to its end as `pinsight emulate` shows it:
//! the report, then a program run on the emulated machine (the report on
//! stderr, the speeds measured again when it ends, its exit status) or,
//! without a program, the emulation held until a signal (the report on
//! stdout, exit 128 + N). Everything is said through
//! [`pinsight_term::out`], escaped and quiet on a closed pipe.

use crate::{Emulation, EndCheck, Report};
use pinsight_lifecycle::exit::SpawnError;
use pinsight_term::out;
use std::ffi::OsString;

/// Windows of the re-measurement after the program ended.
pub const END_WINDOWS: usize = 3;

/// How much to say: the report as JSON (`json`) or as text, and whether
/// notices and warnings are kept back (`quiet`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Talk {
    pub json: bool,
    pub quiet: bool,
}

impl Talk {
    /// The report as shown: pretty JSON, else the text view naming the
    /// declaration `kinds` that nested commands get.
    pub fn report(&self, r: &Report, kinds: &str) -> String {
        if self.json {
            serde_json::to_string_pretty(r).expect("a report serializes")
        } else {
            crate::view::render(r, kinds)
        }
    }

    /// The lines said on stderr after the program, from its end check:
    /// with `json` the `end_check` document, else a warning per kind that
    /// drifted beyond the tolerance (none when quiet).
    pub fn end_check(&self, check: &EndCheck) -> Vec<String> {
        if self.json {
            vec![serde_json::to_string(&check.document()).expect("an end check serializes")]
        } else if self.quiet {
            Vec::new()
        } else {
            let drifted = check.drifted().into_iter();
            drifted
                .map(|why| format!("pinsight: warning: the emulation did not hold: {why}"))
                .collect()
        }
    }
}

impl Emulation {
    /// Shows the report and runs the emulation to its end. With
    /// `program` (and its arguments): the report on stderr (unless quiet
    /// without `json`), the program run with the declaration `kinds`
    /// ([`Emulation::run_program`]), the end check said, and the
    /// program's exit status. Without: the report on stdout, the
    /// emulation held until SIGINT, SIGTERM or SIGHUP
    /// ([`Emulation::hold`]), and 128 + N. Values that could not be put
    /// back are said on stderr either way.
    pub fn run_shown(
        self,
        program: Option<(&OsString, &[OsString])>,
        kinds: &str,
        talk: Talk,
    ) -> Result<i32, SpawnError> {
        let text = talk.report(self.report(), kinds);
        let Some((program, args)) = program else {
            return Ok(self.hold_shown(&text, talk));
        };
        if talk.json || !talk.quiet {
            out::stderr(format_args!("{}\n", text.trim_end()));
        }
        let end = self.run_program(program, args, kinds, END_WINDOWS);
        for line in end.end_check.iter().flat_map(|c| talk.end_check(c)) {
            out::stderr(format_args!("{line}\n"));
        }
        say_failures(end.failures);
        end.code
    }

    /// Without a program: the report on stdout, then the emulation until a
    /// signal; its exit status (128 + N).
    fn hold_shown(self, text: &str, talk: Talk) -> i32 {
        out::stdout(format_args!("{}\n", text.trim_end()));
        let notices = !talk.quiet && !talk.json;
        if notices {
            out::stderr(format_args!(
                "pinsight: emulating until Ctrl-C (or SIGTERM)\n"
            ));
        }
        let end = self.hold();
        say_failures(end.failures);
        if notices {
            out::stderr(format_args!(
                "pinsight: emulation ended; every CPU is back to full speed\n"
            ));
        }
        drop(end.main);
        end.code
    }
}

/// One line on stderr per value that could not be put back.
pub fn say_failures(failures: Vec<String>) {
    for f in failures {
        out::stderr(format_args!("pinsight: {f}\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KindEnd, Spread};

    fn check(drift: f64) -> EndCheck {
        EndCheck {
            tolerance: 0.05,
            windows: 3,
            kinds: vec![KindEnd {
                name: "E".into(),
                mark: "E".into(),
                cpus: "1".into(),
                asked: 0.5,
                achieved: Spread::of(&[0.5 * (1.0 + drift)]),
                drift,
                within_tolerance: drift.abs() <= 0.05,
            }],
        }
    }

    #[test]
    fn the_end_check_is_a_document_with_json_and_a_warning_per_drift_in_text() {
        let json = Talk {
            json: true,
            quiet: true,
        };
        let doc = json.end_check(&check(0.0));
        assert_eq!(doc.len(), 1);
        assert!(doc[0].starts_with("{\"end_check\":{"), "{doc:?}");
        let text = Talk::default();
        assert!(text.end_check(&check(0.01)).is_empty());
        let drifted = text.end_check(&check(0.2));
        assert_eq!(drifted.len(), 1);
        assert!(
            drifted[0].starts_with("pinsight: warning: the emulation did not hold: E (CPUs 1)"),
            "{drifted:?}"
        );
        let quiet = Talk {
            json: false,
            quiet: true,
        };
        assert!(quiet.end_check(&check(0.2)).is_empty());
    }
}
