//! IRQ moves on a fake /proc: the plan's properties (off: no IRQ keeps a
//! CPU of the set; spread: one CPU each, outside it), the saved state and
//! its restore, and the all-or-nothing rule (a refused write puts back
//! every IRQ already written).

use pinsight_cpuset::CpuSet;
use pinsight_load::irq::{self, IrqError, SavedState, Target};
use pinsight_sys::FsRoot;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// A fake /proc with IRQs `irqs` (number, counts on CPUs 0-3, affinity).
fn fake(dir: &Path, irqs: &[(u32, [u64; 4], &str)]) {
    let mut text = String::from("           CPU0       CPU1       CPU2       CPU3\n");
    for (n, c, _) in irqs {
        text.push_str(&format!(
            "{n:>4}: {:>10} {:>10} {:>10} {:>10}  PCI-MSI {n}-edge  dev{n}\n",
            c[0], c[1], c[2], c[3]
        ));
    }
    text.push_str(" LOC:  1 1 1 1   Local timer interrupts\n");
    std::fs::create_dir_all(dir.join("proc")).unwrap();
    std::fs::write(dir.join("proc/interrupts"), text).unwrap();
    for (n, _, aff) in irqs {
        let d = dir.join(format!("proc/irq/{n}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("smp_affinity_list"), format!("{aff}\n")).unwrap();
    }
}

/// [`fake`] in a fresh directory: the directory, its root and the view of
/// its IRQs.
fn faked(irqs: &[(u32, [u64; 4], &str)]) -> (tempfile::TempDir, FsRoot, irq::IrqView) {
    let d = tempfile::tempdir().unwrap();
    fake(d.path(), irqs);
    let fs = FsRoot::at(d.path()).unwrap();
    let v = irq::view(&fs).unwrap();
    (d, fs, v)
}

fn caps() -> BTreeMap<usize, f64> {
    [(0, 1.0), (1, 1.0), (2, 0.5), (3, 0.5)]
        .into_iter()
        .collect()
}

fn affinity(dir: &Path, n: u32) -> String {
    std::fs::read_to_string(dir.join(format!("proc/irq/{n}/smp_affinity_list")))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn off_moves_apply_save_and_restore() {
    let (d, fs, v) = faked(&[
        (24, [0, 900, 0, 0], "1"),
        (25, [5, 5, 5, 5], "0-3"),
        (26, [0, 0, 0, 7], "3"),
    ]);
    assert_eq!(v.irqs.len(), 3);
    assert_eq!(v.per_cpu, vec!["LOC"]);
    let off = CpuSet::parse_list("1").unwrap();
    let moves = irq::plan(&v, None, &Target::Off(off), &caps()).unwrap();
    // 24 (only on 1) gets every other CPU; 25 keeps 0,2-3; 26 is left.
    assert_eq!(moves.len(), 2);
    assert_eq!(moves[0].after.to_list_string(), "0,2-3");
    assert_eq!(moves[1].after.to_list_string(), "0,2-3");
    let state = SavedState::of(&moves);
    let path = d.path().join("state.json");
    irq::save_state(&state, &path).unwrap();
    // A second save never replaces the first one's undo.
    assert!(irq::save_state(&state, &path).is_err());
    irq::apply(&fs, &moves).unwrap();
    assert_eq!(affinity(d.path(), 24), "0,2-3");
    let back = SavedState::load(&path)
        .unwrap()
        .moves(&irq::view(&fs).unwrap())
        .unwrap();
    irq::apply(&fs, &back).unwrap();
    assert_eq!(affinity(d.path(), 24), "1");
    assert_eq!(affinity(d.path(), 25), "0-3");
}

#[test]
fn a_refused_write_rolls_back_every_irq_already_moved() {
    let (d, fs, v) = faked(&[
        (24, [1, 0, 0, 0], "0"),
        (25, [1, 0, 0, 0], "0"),
        (26, [1, 0, 0, 0], "0"),
    ]);
    let moves = irq::plan(&v, None, &Target::Off(CpuSet::single(0)), &caps()).unwrap();
    assert_eq!(moves.len(), 3);
    // IRQ 26's file becomes a directory: its write fails (EISDIR).
    let f = d.path().join("proc/irq/26/smp_affinity_list");
    std::fs::remove_file(&f).unwrap();
    std::fs::create_dir(&f).unwrap();
    let e = irq::apply(&fs, &moves).unwrap_err();
    assert!(matches!(e, IrqError::Write { irq: 26, .. }), "{e}");
    assert!(
        e.to_string().starts_with("IRQ 26 cannot be moved to 1-3: "),
        "{e}"
    );
    assert_eq!(affinity(d.path(), 24), "0");
    assert_eq!(affinity(d.path(), 25), "0");
}

/// The undo file of a move the kernel refused is removed again: nothing
/// changed, so there is nothing to put back.
#[test]
fn a_refused_move_leaves_no_undo_file() {
    let (d, fs, v) = faked(&[(24, [1, 0, 0, 0], "0"), (25, [1, 0, 0, 0], "0")]);
    let moves = irq::plan(&v, None, &Target::Off(CpuSet::single(0)), &caps()).unwrap();
    let f = d.path().join("proc/irq/25/smp_affinity_list");
    std::fs::remove_file(&f).unwrap();
    std::fs::create_dir(&f).unwrap();
    let undo = d.path().join("undo.json");
    let e = irq::save_and_apply(&fs, &moves, Some(&undo)).unwrap_err();
    assert!(matches!(e, IrqError::Write { irq: 25, .. }), "{e}");
    assert!(!undo.exists(), "the undo file of a refused move is gone");
    assert_eq!(affinity(d.path(), 24), "0");
    std::fs::remove_dir(&f).unwrap();
    std::fs::write(&f, "0\n").unwrap();
    irq::save_and_apply(&fs, &moves, Some(&undo)).unwrap();
    assert!(undo.exists());
    assert_eq!(affinity(d.path(), 24), "1-3");
}

#[test]
fn unknown_unmovable_and_no_cpu_left_are_refused() {
    let d = tempfile::tempdir().unwrap();
    fake(d.path(), &[(24, [1, 0, 0, 0], "0")]);
    // IRQ 30 is counted but has no smp_affinity_list.
    let mut text = std::fs::read_to_string(d.path().join("proc/interrupts")).unwrap();
    text.push_str("  30:  1 0 0 0  GICv3 30 Level arch_timer\n");
    std::fs::write(d.path().join("proc/interrupts"), text).unwrap();
    let fs = FsRoot::at(d.path()).unwrap();
    let v = irq::view(&fs).unwrap();
    let off = Target::Off(CpuSet::single(0));
    assert!(matches!(
        irq::plan(&v, Some(&[99]), &off, &caps()),
        Err(IrqError::Unknown { irq: 99 })
    ));
    assert!(matches!(
        irq::plan(&v, Some(&[30]), &off, &caps()),
        Err(IrqError::NotMovable { irq: 30 })
    ));
    let all = Target::Off(CpuSet::parse_list("0-3").unwrap());
    assert!(matches!(
        irq::plan(&v, None, &all, &caps()),
        Err(IrqError::NoCpuLeft { .. })
    ));
    // Without the list, the unmovable one is simply left out.
    assert_eq!(irq::plan(&v, None, &off, &caps()).unwrap().len(), 1);
}

#[test]
fn spread_weighs_by_capacity() {
    let d = tempfile::tempdir().unwrap();
    // Four equal IRQs over CPUs 0,1 (capacity 1) and 2,3 (0.5): the
    // big CPUs take two each before a small one takes any... LPT: each
    // small CPU reaches the big ones' load per capacity with half the count.
    fake(
        d.path(),
        &[
            (24, [100, 0, 0, 0], "0-3"),
            (25, [100, 0, 0, 0], "0-3"),
            (26, [100, 0, 0, 0], "0-3"),
            (27, [100, 0, 0, 0], "0-3"),
            (28, [100, 0, 0, 0], "0-3"),
            (29, [100, 0, 0, 0], "0-3"),
        ],
    );
    let fs = FsRoot::at(d.path()).unwrap();
    let v = irq::view(&fs).unwrap();
    let moves = irq::plan(&v, None, &Target::Spread { off: CpuSet::new() }, &caps()).unwrap();
    let mut per: BTreeMap<usize, usize> = BTreeMap::new();
    for m in &moves {
        assert_eq!(m.after.len(), 1);
        *per.entry(m.after.first().unwrap()).or_default() += 1;
    }
    assert_eq!(per, [(0, 2), (1, 2), (2, 1), (3, 1)].into_iter().collect());
}

#[test]
fn saved_state_files_are_checked() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.json");
    for bad in [
        "",
        "{}",
        r#"{"format":"other","irqs":{}}"#,
        r#"{"format":"pinsight-irq-state","irqs":{"3":"x"}}"#,
    ] {
        std::fs::write(&p, bad).unwrap();
        let e = SavedState::load(&p).unwrap_err();
        assert!(e.to_string().contains("s.json"), "{e}");
    }
}

/// An empty affinity was never saved by a move: refused, and a state that
/// holds one (or an IRQ already where it was) moves nothing for it.
#[test]
fn an_empty_or_unchanged_saved_affinity_moves_nothing() {
    let d = tempfile::tempdir().unwrap();
    fake(
        d.path(),
        &[(25, [1, 0, 0, 0], "0-3"), (26, [1, 0, 0, 0], "1")],
    );
    let p = d.path().join("s.json");
    std::fs::write(&p, r#"{"format":"pinsight-irq-state","irqs":{"26":""}}"#).unwrap();
    let e = SavedState::load(&p).unwrap_err();
    assert!(e.to_string().contains("IRQ 26: an empty CPU list"), "{e}");
    let fs = FsRoot::at(d.path()).unwrap();
    let v = irq::view(&fs).unwrap();
    let state = SavedState {
        format: "pinsight-irq-state".into(),
        irqs: [(25, "0-3".to_string()), (26, String::new())]
            .into_iter()
            .collect(),
    };
    assert_eq!(state.moves(&v).unwrap(), vec![]);
}

/// The state file is written whole or not at all, and a state file that
/// is a FIFO, a device or huge is refused unread (no hang, no memory).
#[test]
fn state_files_are_regular_files_within_a_bound() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let sparse = d.path().join("sparse");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let t = std::time::Instant::now();
    for (p, says) in [
        (fifo.as_path(), "a FIFO, not a regular file"),
        (Path::new("/dev/zero"), "a character device"),
        (sparse.as_path(), "larger than"),
    ] {
        let e = SavedState::load(p).unwrap_err();
        assert!(e.to_string().contains(says), "{e}");
    }
    assert!(t.elapsed() < std::time::Duration::from_secs(1));
}

proptest! {
    #[test]
    fn plans_keep_irqs_off_the_set_and_on_online_cpus(
        affs in prop::collection::vec(1u8..16, 1..8),
        counts in prop::collection::vec(0u64..1000, 8),
        off in 1u8..15,
        spread in any::<bool>(),
    ) {
        let d = tempfile::tempdir().unwrap();
        let list = |m: u8| CpuSet::from_words(vec![m as u64]).to_list_string();
        let irqs: Vec<(u32, [u64; 4], String)> = affs
            .iter()
            .enumerate()
            .map(|(i, a)| (24 + i as u32, [counts[i], 0, 0, 0], list(*a)))
            .collect();
        let refs: Vec<(u32, [u64; 4], &str)> = irqs.iter().map(|(n, c, a)| (*n, *c, a.as_str())).collect();
        fake(d.path(), &refs);
        let fs = FsRoot::at(d.path()).unwrap();
        let v = irq::view(&fs).unwrap();
        let off = CpuSet::from_words(vec![off as u64]);
        let target = if spread { Target::Spread { off: off.clone() } } else { Target::Off(off.clone()) };
        let moves = irq::plan(&v, None, &target, &caps()).unwrap();
        let online = CpuSet::parse_list("0-3").unwrap();
        for m in &moves {
            prop_assert!(!m.after.is_empty());
            prop_assert!(!m.after.intersects(&off), "{m:?}");
            prop_assert!(m.after.is_subset(&online));
            prop_assert!(m.after != m.before);
            if spread {
                prop_assert_eq!(m.after.len(), 1);
            }
        }
        // Off: every IRQ not moved already avoids the set.
        if !spread {
            for i in &v.irqs {
                if !moves.iter().any(|m| m.irq == i.irq) {
                    prop_assert!(!i.affinity.as_ref().unwrap().intersects(&off));
                }
            }
        }
    }
}

#[test]
fn a_running_irqbalance_is_found_by_its_comm() {
    let d = tempfile::tempdir().unwrap();
    fake(d.path(), &[(24, [1, 0, 0, 0], "0")]);
    let fs = FsRoot::at(d.path()).unwrap();
    assert_eq!(irq::view(&fs).unwrap().irqbalance, None);
    std::fs::create_dir_all(d.path().join("proc/812")).unwrap();
    std::fs::write(d.path().join("proc/812/comm"), "irqbalance\n").unwrap();
    std::fs::create_dir_all(d.path().join("proc/900")).unwrap();
    std::fs::write(d.path().join("proc/900/comm"), "irqbalancer\n").unwrap();
    let fs = FsRoot::at(d.path()).unwrap();
    assert_eq!(irq::view(&fs).unwrap().irqbalance, Some(812));
}

/// `irq --watch`'s loop on a fake /proc: the first interval moves every
/// IRQ off the rule; an IRQ that appears later (a driver loaded) is moved
/// the interval it is seen; one written back onto the CPU (drift) moves
/// only after `patience` intervals; at the end every IRQ is put back and
/// the state file removed. The fake /proc changes between intervals
/// through the decision callback, as a driver or an admin would.
#[test]
fn watch_moves_new_irqs_at_once_drifted_ones_after_patience_and_puts_back() {
    let d = tempfile::tempdir().unwrap();
    fake(
        d.path(),
        &[(24, [0, 900, 0, 0], "1"), (25, [5, 5, 5, 5], "0-3")],
    );
    let fs = FsRoot::at(d.path()).unwrap();
    let state = d.path().join("state.json");
    let opts = pinsight_load::irq_watch::Options {
        patience: 2,
        max_moves: 8,
        interval: std::time::Duration::from_millis(1),
        intervals: Some(6),
    };
    let target = Target::Off(CpuSet::parse_list("1").unwrap());
    let mut seen = Vec::new();
    let root = d.path().to_path_buf();
    let mut on = |dec: &pinsight_load::irq_watch::Decision| {
        seen.push(dec.clone());
        match dec.interval {
            // A driver loads: IRQ 26 appears on CPU 1.
            1 => fake(
                &root,
                &[
                    (24, [0, 900, 0, 0], "0,2-3"),
                    (25, [5, 5, 5, 5], "0,2-3"),
                    (26, [0, 50, 0, 0], "1"),
                ],
            ),
            // Someone writes IRQ 25 back onto CPU 1.
            2 => std::fs::write(root.join("proc/irq/25/smp_affinity_list"), "1\n").unwrap(),
            _ => {}
        }
    };
    let capacity = caps();
    let watch = pinsight_load::irq_watch::Watch {
        only: None,
        target: &target,
        capacity: &capacity,
        options: &opts,
        state_path: &state,
    };
    let end = pinsight_load::irq_watch::run(&fs, &watch, &mut on).unwrap();
    let moved = |i: usize| -> Vec<u32> { seen[i].moved.iter().map(|m| m.irq).collect() };
    assert_eq!(moved(0), vec![24, 25], "{seen:#?}");
    assert_eq!(seen[1].new, vec![26]);
    assert_eq!(moved(1), vec![26]);
    // IRQ 25 drifted at interval 3: waits one interval, moves at the 4th.
    assert!(
        moved(2).is_empty() && seen[2].waiting.get(&25) == Some(&1),
        "{seen:#?}"
    );
    assert_eq!(moved(3), vec![25]);
    assert!(moved(4).is_empty() && moved(5).is_empty());
    assert_eq!(end.intervals, 6);
    assert_eq!(end.signal, None);
    // Put back as first seen: 24 on 1, 25 on 0-3, 26 on 1.
    assert_eq!(affinity(d.path(), 24), "1");
    assert_eq!(affinity(d.path(), 25), "0-3");
    assert_eq!(affinity(d.path(), 26), "1");
    assert!(end.state_removed && !state.exists());
}

/// A restore file another user could have written is refused before it
/// moves anything; the input's errors are told from the machine's.
#[test]
fn restore_moves_refuse_a_file_others_could_write() {
    use std::os::unix::fs::PermissionsExt;
    let (d, _fs, v) = faked(&[(24, [0, 9, 0, 0], "1")]);
    let p = d.path().join("s.json");
    std::fs::write(&p, r#"{"format":"pinsight-irq-state","irqs":{"24":"0"}}"#).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    let moves = irq::restore_moves(&p, &v).unwrap();
    assert_eq!(moves.len(), 1);
    assert_eq!(moves[0].after.to_list_string(), "0");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
    let e = irq::restore_moves(&p, &v).unwrap_err();
    assert!(matches!(e, IrqError::Untrusted { .. }), "{e:?}");
    assert!(e.to_string().contains("s.json: not restored: "), "{e}");
    assert!(e.is_input());
    assert!(IrqError::Unknown { irq: 3 }.is_input());
    assert!(!IrqError::NoInterrupts.is_input());
    assert!(!IrqError::NotMovable { irq: 3 }.is_input());
}

/// A dry run writes nothing and saves nothing; a move saves the
/// affinities before it where asked, a restore saves none; the view says
/// where the undo went.
#[test]
fn carry_out_saves_before_a_move_only() {
    let (d, fs, v) = faked(&[(24, [0, 9, 0, 0], "1")]);
    let off = Target::Off(CpuSet::parse_list("1").unwrap());
    let moves = irq::plan(&v, None, &off, &caps()).unwrap();
    let state = d.path().join("undo.json");
    let dry = irq::Carry {
        dry_run: true,
        restore: false,
        state: Some(state.clone()),
    };
    let r = irq::carry_out(&fs, moves.clone(), Vec::new(), &dry).unwrap();
    assert!(r.dry_run && r.state_file.is_none() && !state.exists());
    assert_eq!(affinity(d.path(), 24), "1");
    assert!(!pinsight_load::view::irq_moved(&r).contains("undo with"));
    let real = irq::Carry {
        dry_run: false,
        ..dry.clone()
    };
    let r = irq::carry_out(&fs, moves, Vec::new(), &real).unwrap();
    assert_eq!(r.state_file.as_deref(), Some(state.as_path()));
    assert_eq!(affinity(d.path(), 24), "0,2-3");
    let text = pinsight_load::view::irq_moved(&r);
    // Wrapped at 80 columns: the words may break across lines.
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("undo with: pinsight irq --restore "),
        "{text}"
    );
    let back = irq::restore_moves(&state, &irq::view(&fs).unwrap()).unwrap();
    let restore = irq::Carry {
        restore: true,
        state: None,
        ..real
    };
    let r = irq::carry_out(&fs, back, Vec::new(), &restore).unwrap();
    assert!(r.restore && r.state_file.is_none());
    assert_eq!(affinity(d.path(), 24), "1");
}
