//! The binary's messages for topology and snapshot errors: the libraries
//! return typed errors in domain terms (no flag names), and `pinsight`
//! words them, naming the flag or variable the user must change. These
//! tests hold the exact wording the CLI has always printed.

use crate::common_cli;

use common_cli::*;
use std::path::Path;

fn hybrid() -> std::path::PathBuf {
    hwloc_fixture("20em64t-hybrid-1p6c2t+2ca4co1t")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A usage error (exit 2) whose one-line message is exactly `want`.
fn usage_message(o: &Out, want: &str) {
    assert_eq!(o.code, 2, "{}: {}", o.argv, o.stderr);
    assert_eq!(o.first_err_line(), want, "{}", o.argv);
}

#[test]
fn snapshot_into_a_non_empty_directory_advises_force() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let o = pinsight(&["--fsroot", s(&hybrid()), "snapshot", s(dir.path())]).run();
    usage_message(
        &o,
        &format!(
            "pinsight: error: snapshot: '{}' is not empty; choose a new directory or pass --force to replace the snapshot in it",
            dir.path().display()
        ),
    );
}

#[test]
fn snapshot_over_an_existing_archive_advises_force() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("box.tar.gz");
    std::fs::write(&archive, "old").unwrap();
    let o = pinsight(&["--fsroot", s(&hybrid()), "snapshot", s(&archive)]).run();
    usage_message(
        &o,
        &format!(
            "pinsight: error: snapshot: '{}' exists; pass --force to replace it",
            archive.display()
        ),
    );
    assert_eq!(std::fs::read(&archive).unwrap(), b"old", "left alone");
}

#[test]
fn unreadable_fsroot_names_the_flag_or_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    let o = pinsight(&["--fsroot", s(&gone), "topo"]).run();
    usage_message(
        &o,
        &format!(
            "pinsight: error: --fsroot '{}': No such file or directory (os error 2) (expected a directory holding sys/ and proc/)",
            gone.display()
        ),
    );
    let o = pinsight(&["topo"]).env("PINSIGHT_FSROOT", &gone).run();
    usage_message(
        &o,
        &format!(
            "pinsight: error: PINSIGHT_FSROOT '{}': No such file or directory (os error 2) (expected a directory holding sys/ and proc/)",
            gone.display()
        ),
    );
}

#[test]
fn bad_hwloc_xml_is_one_line_naming_the_file_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("box.xml");
    std::fs::write(&xml, "<topology>\n<object type=\"Machine\"/></topology>").unwrap();
    let o = pinsight(&["--hwloc-xml", s(&xml), "topo"]).run();
    usage_message(
        &o,
        &format!(
            "pinsight: error: hwloc XML '{}' line 2, column 1: root object has no cpuset",
            xml.display()
        ),
    );
}
