//! `tune`'s runner end to end with the simulated executor (nothing runs:
//! times come from a known model with seeded noise) on the recorded
//! i7-1370P: both stages journaled, interruption at any point then resume
//! gives the uninterrupted result, the budget, refused resumes.

use pinsight_compare::journal::{Field, Journal};
use pinsight_compare::session::{self, JournalTarget, Session, SessionError};
use pinsight_compare::setup::Request;
use pinsight_model::Topology;
use pinsight_sys::progress::Progress;
use pinsight_sys::FsRoot;
use pinsight_topology::discover;
use pinsight_tune::sim::SimSpec;
use pinsight_tune::{
    read_request, validation_path, Energy, ExecutorKind, Finished, Identity, Stage, TuneConfig,
    TuneError, TuneJournal, TuneRequest, TuneSession, KIND_DESIGN, KIND_VALIDATION,
};
use pinsight_tune_model::{Config, ModelKind};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

const LAPTOP: &str = "hwloc/20em64t-hybrid-1p6c2t+2ca4co1t";
const SPEC: &str = "model=static,t1=10,f=0.95,sf=2,smt_gain=0.3,noise=0.02,seed=1";

fn fixture_dir(rel: &str) -> String {
    pinsight_testkit::fixtures::machine(rel)
        .to_string_lossy()
        .into_owned()
}

fn fixture(rel: &str) -> Topology {
    discover(&FsRoot::at(fixture_dir(rel)).unwrap())
}

fn request(topo: &Topology, runs: usize) -> TuneRequest {
    let command = vec!["my-program".into(), "--size".into(), "3".into()];
    TuneRequest {
        runs,
        warmup: 0,
        seed: 42,
        ..TuneRequest::new(command, topo.usable())
    }
}

fn open<'a>(
    topo: &'a Topology,
    req: TuneRequest,
    journal: TuneJournal,
    spec: &str,
) -> Result<TuneSession<'a>, TuneError> {
    TuneSession::open(TuneConfig {
        request: req,
        topology: topo,
        measure_fs: FsRoot::at(fixture_dir(LAPTOP)).unwrap(),
        journal,
        show_output: false,
        is_env_set: &|_| false,
        executor: ExecutorKind::Simulated(spec.parse().unwrap()),
    })
}

/// Counts journaled runs (both stages: a step whose count went up) and
/// the tasks begun.
#[derive(Default)]
struct Count(Rc<Cell<usize>>, Vec<String>, u64);

impl Progress for Count {
    fn begin(&mut self, what: &str, _: u64, done: u64) {
        self.1.push(what.to_string());
        self.2 = done;
    }
    fn step(&mut self, _: &str, done: u64) {
        if done > self.2 {
            self.0.set(self.0.get() + (done - self.2) as usize);
            self.2 = done;
        }
    }
}

fn uninterrupted(topo: &Topology, dir: &Path, runs: usize) -> Finished {
    let path = dir.join("tune.jsonl");
    let s = open(topo, request(topo, runs), TuneJournal::New(path), SPEC).unwrap();
    s.run(&mut Count::default()).unwrap()
}

#[test]
fn design_and_validation_are_journaled_with_their_thread_counts() {
    let topo = fixture(LAPTOP);
    let d = tempfile::tempdir().unwrap();
    let f = uninterrupted(&topo, d.path(), 2);
    assert_eq!(f.layout.describe(), "6P+8E, 1 SMT sibling per P-core");
    assert_eq!(f.design.len(), 11, "{:?}", f.design);
    assert!(f.complete, "{:?}", f.outcome);
    assert_eq!(f.resume(), None);
    assert_eq!(f.design_runs.len(), 22);
    for c in &f.design {
        assert_eq!(f.design_runs.iter().filter(|o| o.config == *c).count(), 2);
    }
    // The static truth: the best configurations are P-cores (with SMT);
    // the validation runs the two best predicted ones not measured.
    assert_eq!(f.validation.len(), 2, "{:?}", f.notes);
    assert!(f.validation.iter().all(|c| !f.design.contains(c)));
    assert_eq!(f.validation_runs.len(), 4);
    assert_eq!(f.stage, Stage::Validation);
    assert_eq!(
        f.energy,
        Energy::Unavailable {
            reason: "simulated run without a power model".into()
        }
    );
    // The design journal: a tune, each arm with its configuration's threads
    // exported and as many CPUs.
    let j = Journal::read(&f.journal).unwrap();
    assert_eq!(j.header.kind.as_deref(), Some(KIND_DESIGN));
    assert_eq!(j.header.threads, None);
    let id = Identity::of(&j.header).unwrap();
    assert_eq!(id.stage, Stage::Design);
    assert_eq!(id.arms.len(), 11);
    for (arm, (id_arm, c)) in j.header.arms.iter().zip(&id.arms) {
        let c = Config::from(*c);
        assert_eq!(&arm.id, id_arm);
        assert_eq!(arm.plan.threads, c.threads() as usize, "{c}");
        assert_eq!(arm.plan.process_mask, f.layout.cpus(c).unwrap(), "{c}");
        let omp = arm.env.iter().find(|(k, _)| k == "OMP_NUM_THREADS");
        assert_eq!(omp.map(|(_, v)| v.clone()), Some(c.threads().to_string()));
    }
    assert_eq!(j.runs.len(), 22);
    // The validation journal names the design journal.
    let v = f.validation_journal.clone().unwrap();
    assert_eq!(v, validation_path(&f.journal));
    assert_eq!(v.file_name().unwrap(), "tune.validate.jsonl");
    let vj = Journal::read(&v).unwrap();
    assert_eq!(vj.header.kind.as_deref(), Some(KIND_VALIDATION));
    let vid = Identity::of(&vj.header).unwrap();
    assert_eq!(vid.design_journal.as_deref(), Some("tune.jsonl"));
    let vconfigs: Vec<Config> = vid.arms.iter().map(|(_, c)| Config::from(*c)).collect();
    assert_eq!(vconfigs, f.validation);
    assert_eq!(vj.runs.len(), 4);
}

/// Runs the tune, stopping after `k` journaled runs, then resumes it
/// (through `via`: the design or the validation journal) until done.
fn interrupted_then_resumed(
    topo: &Topology,
    dir: &Path,
    k: usize,
    via_validation: bool,
) -> Finished {
    let path = dir.join("tune.jsonl");
    let count = Rc::new(Cell::new(0));
    let s = open(topo, request(topo, 2), TuneJournal::New(path.clone()), SPEC).unwrap();
    let c = count.clone();
    let first = s
        .run_until(&mut Count(count.clone(), vec![], 0), &move || c.get() >= k)
        .unwrap();
    assert!(!first.complete);
    assert_eq!(first.signal, None);
    assert_eq!(first.resume(), Some(path.as_path()));
    assert_eq!(count.get(), k);
    let resume = if via_validation {
        first.validation_journal.clone().unwrap()
    } else {
        path.clone()
    };
    // The request comes back from the journal.
    let req = read_request(&resume).unwrap();
    assert_eq!(req, request(topo, 2));
    let s = open(topo, req, TuneJournal::Resume(resume), SPEC).unwrap();
    let (total, done) = s.progress();
    assert_eq!((total, done), (22, k.min(22)));
    let mut obs = Count::default();
    let f = s.run(&mut obs).unwrap();
    assert_eq!(obs.1, [Stage::Design.task(), Stage::Validation.task()]);
    assert_eq!(obs.0.get() + k, 26, "no run twice, none lost");
    f
}

#[test]
fn interrupted_anywhere_and_resumed_gives_the_uninterrupted_answer() {
    let topo = fixture(LAPTOP);
    let d = tempfile::tempdir().unwrap();
    let whole = uninterrupted(&topo, &d.path().join("whole").tap_mkdir(), 2);
    for (k, via_validation) in [(1, false), (13, false), (23, false), (23, true), (25, true)] {
        let dir = d
            .path()
            .join(format!("cut{k}-{via_validation}"))
            .tap_mkdir();
        let f = interrupted_then_resumed(&topo, &dir, k, via_validation);
        assert!(f.complete, "k={k}");
        assert_eq!(f.design_runs, whole.design_runs, "k={k}");
        assert_eq!(f.validation, whole.validation, "k={k}");
        assert_eq!(f.validation_runs, whole.validation_runs, "k={k}");
    }
}

trait TapMkdir {
    fn tap_mkdir(self) -> PathBuf;
}
impl TapMkdir for PathBuf {
    fn tap_mkdir(self) -> PathBuf {
        std::fs::create_dir_all(&self).unwrap();
        self
    }
}

#[test]
fn the_budget_keeps_one_run_per_design_configuration_and_says_what_it_cut() {
    let topo = fixture(LAPTOP);
    let d = tempfile::tempdir().unwrap();
    let mut req = request(&topo, 3);
    // 11 configurations of 1.5–20 s: one run of each is ~61 s, so
    // 90 s leaves room for some second runs, not all.
    req.budget = Some(Duration::from_secs(90));
    let s = open(&topo, req, TuneJournal::New(d.path().join("b.jsonl")), SPEC).unwrap();
    let f = s.run(&mut Count::default()).unwrap();
    assert!(!f.complete);
    assert!(matches!(f.outcome, pinsight_compare::Outcome::Complete));
    for c in &f.design {
        assert!(
            f.design_runs.iter().any(|o| o.config == *c),
            "{c} has a run"
        );
    }
    let spent: f64 = f
        .design_runs
        .iter()
        .chain(&f.validation_runs)
        .map(|o| o.time_s)
        .sum();
    let first_block: f64 = f
        .design
        .iter()
        .map(|c| {
            f.design_runs
                .iter()
                .find(|o| o.config == *c)
                .unwrap()
                .time_s
        })
        .sum();
    assert!(first_block < 90.0, "{first_block}");
    // Estimates are past runs of the same configuration; noise is 2%.
    assert!(spent <= 90.0 * 1.06, "spent {spent}");
    assert!(spent > first_block, "the budget left room for more runs");
    assert!(f.design_runs.len() > 11 && f.design_runs.len() < 33);
    assert!(!f.budget_cuts.is_empty());
    let cut: usize = f.budget_cuts.iter().map(|c| c.runs).sum();
    assert_eq!(
        cut,
        33 - f.design_runs.len() + f.validation.len() * 3 - f.validation_runs.len()
    );
    let note = f.notes.iter().find(|n| n.starts_with("budget: ")).unwrap();
    assert!(note.contains(&format!("{cut} runs not started")), "{note}");
    assert_eq!(f.resume(), Some(f.journal.as_path()));
    // Resumed without a budget, it completes.
    let req = read_request(&f.journal).unwrap();
    let s = open(&topo, req, TuneJournal::Resume(f.journal.clone()), SPEC).unwrap();
    let g = s.run(&mut Count::default()).unwrap();
    assert!(g.complete);
    assert_eq!(g.design_runs.len(), 33);
}

#[test]
fn a_journal_from_another_machine_or_command_is_refused() {
    let topo = fixture(LAPTOP);
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.jsonl");
    let s = open(
        &topo,
        request(&topo, 1),
        TuneJournal::New(path.clone()),
        SPEC,
    )
    .unwrap();
    let (total, _) = s.progress();
    assert_eq!(total, 11);
    drop(s);
    // Another machine.
    let other = fixture("hwloc/16em64t-4s2c2t");
    let e = resume_refused(&other, &path);
    assert!(
        matches!(
            e,
            TuneError::Session(SessionError::DifferentExperiment { .. })
        ),
        "{e}"
    );
    assert!(e.to_string().starts_with("cannot resume"), "{e}");
    // Another command.
    let mut req = request(&topo, 1);
    req.command = vec!["other-program".into()];
    match open(&topo, req, TuneJournal::Resume(path.clone()), SPEC) {
        Err(TuneError::Session(SessionError::DifferentExperiment { diffs, .. })) => {
            assert_eq!(diffs.len(), 1, "{diffs:?}");
            assert_eq!(diffs[0].field, Field::Command);
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("resumed with another command"),
    }
    // Pinned instead of floating: other arms.
    let mut req = request(&topo, 1);
    req.pinned = true;
    assert!(open(&topo, req, TuneJournal::Resume(path.clone()), SPEC).is_err());
}

/// Why the journal at `path` cannot be resumed with the one-run request
/// on `topo`.
fn resume_refused(topo: &Topology, path: &Path) -> TuneError {
    open(
        topo,
        request(topo, 1),
        TuneJournal::Resume(path.to_path_buf()),
        SPEC,
    )
    .err()
    .unwrap()
}

fn compare_request(policies: &[&str]) -> Request {
    Request {
        runs: 1,
        warmup: 0,
        seed: 1,
        ..Request::new(
            vec!["my-program".into()],
            policies.iter().map(|s| s.to_string()).collect(),
        )
    }
}

#[test]
fn tune_and_compare_never_resume_each_others_journals() {
    let topo = fixture(LAPTOP);
    let d = tempfile::tempdir().unwrap();
    // A compare journal given to tune.
    let cpath = d.path().join("compare.jsonl");
    let cfg = |journal| session::Config {
        request: compare_request(&["os", "p-set"]),
        topology: &topo,
        measure_fs: FsRoot::at(fixture_dir(LAPTOP)).unwrap(),
        journal,
        show_output: false,
        ignore_failure: false,
        disturbance_threshold: 0.05,
        rerun_disturbed: 0,
        is_env_set: &|_| false,
    };
    drop(Session::open(cfg(JournalTarget::New(cpath.clone()))).unwrap());
    let e = resume_refused(&topo, &cpath);
    assert!(matches!(e, TuneError::NotTune { kind: None, .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "cannot resume {}: it is a compare experiment, not a tune",
            cpath.display()
        )
    );
    assert!(read_request(&cpath).is_err());
    // A tune journal given to compare, which takes the request from the
    // journal: its pinned arms would not even plan with compare's common
    // thread count; the kind is refused first.
    let tpath = d.path().join("tune.jsonl");
    let mut pinned = request(&topo, 1);
    pinned.pinned = true;
    drop(open(&topo, pinned, TuneJournal::New(tpath.clone()), SPEC).unwrap());
    let previous = Box::new(Journal::read(&tpath).unwrap());
    let policies: Vec<String> = previous.header.policies.clone();
    assert!(policies.iter().any(|p| p == "cpus:0"), "{policies:?}");
    let policies: Vec<&str> = policies.iter().map(String::as_str).collect();
    let e = Session::open(session::Config {
        request: compare_request(&policies),
        ..cfg(JournalTarget::Resume {
            path: tpath.clone(),
            previous,
        })
    })
    .err()
    .unwrap();
    match &e {
        SessionError::DifferentExperiment { diffs, .. } => {
            assert_eq!(diffs.len(), 1);
            assert_eq!(diffs[0].field, Field::Kind);
        }
        _ => panic!("{e}"),
    }
    assert!(
        e.to_string()
            .ends_with("(experiment: journal has a tune experiment, now a compare experiment)"),
        "{e}"
    );
}

#[test]
fn energy_comes_from_the_power_model_when_there_is_one() {
    let topo = fixture(LAPTOP);
    let d = tempfile::tempdir().unwrap();
    let spec = "model=dynamic,t1=4,f=0.9,sf=1.8,noise=0,seed=2,watts_base=5,watts_p=10,watts_e=3";
    let mut req = request(&topo, 1);
    req.validate = 0;
    let s = open(&topo, req, TuneJournal::New(d.path().join("e.jsonl")), spec).unwrap();
    let f = s.run(&mut Count::default()).unwrap();
    assert!(f.complete);
    assert_eq!(f.energy, Energy::Available);
    assert!(f.validation.is_empty() && f.validation_journal.is_none());
    let truth: SimSpec = spec.parse().unwrap();
    for o in &f.design_runs {
        let t = ModelKind::Dynamic.time(&truth.theta, o.config);
        assert!((o.time_s - t).abs() < 1e-9);
        let w = truth.power.unwrap().watts(o.config);
        assert!((o.energy_j.unwrap() - w * t).abs() < 1e-6);
    }
}

#[test]
fn the_validation_choice_is_the_models_for_two() {
    // choose_validation ranks as tune-model's validation() does.
    let topo = fixture(LAPTOP);
    let d = tempfile::tempdir().unwrap();
    let f = uninterrupted(&topo, d.path(), 1);
    let fit = pinsight_tune_model::fit(
        &f.design_runs,
        pinsight_tune_model::FitOptions {
            bootstrap: 0,
            seed: 42,
        },
    )
    .unwrap();
    assert_eq!(
        f.validation,
        pinsight_tune_model::validation(&fit, &f.layout.machine, &f.design_runs)
    );
    let three = pinsight_tune::choose_validation(&f.design_runs, &f.layout.machine, 3, 42).unwrap();
    assert_eq!(three.len(), 3);
    assert_eq!(three[..2], f.validation[..]);
}

/// A simulated tune with a run-to-run spread of 2–5% (what a busy VM
/// shows): the fit recovers sf within 10%, and the recommendation is what
/// measuring every configuration finds best (or within the noise of it).
#[test]
fn a_noisy_simulated_tune_recovers_sf_and_the_exhaustive_best() {
    use pinsight_tune::sim::SimExecutor;
    use pinsight_tune_model::{analyse, FitOptions, Goal};
    let topo = fixture(LAPTOP);
    for (i, (truth, noise)) in [
        ("model=static,t1=10,f=0.95,sf=2,smt_gain=0.3", 0.02),
        ("model=dynamic,t1=10,f=0.98,sf=2.5,smt_gain=0.2", 0.035),
        ("model=static,t1=5,f=0.9,sf=3,smt_gain=0.1", 0.05),
        ("model=dynamic,t1=8,f=0.6,sf=2.5,smt_gain=0.25", 0.05),
    ]
    .into_iter()
    .enumerate()
    {
        let text = format!("{truth},noise={noise},seed={}", 10 + i);
        let spec: SimSpec = text.parse().unwrap();
        let d = tempfile::tempdir().unwrap();
        let s = open(
            &topo,
            request(&topo, 3),
            TuneJournal::New(d.path().join("t.jsonl")),
            &text,
        )
        .unwrap();
        let f = s.run(&mut Count::default()).unwrap();
        let machine = f.layout.machine;
        let r = analyse(
            &f.design_runs,
            &f.validation_runs,
            &machine,
            Goal::Time,
            FitOptions::default(),
        )
        .unwrap();
        let sf = r.params.sf.value;
        assert!(
            (sf / spec.theta.sf - 1.0).abs() < 0.1,
            "{text}: sf {sf} vs {}",
            spec.theta.sf
        );
        // Exhaustive: every configuration, 3 runs each, median.
        let all = machine.configs();
        let sim = SimExecutor::new(spec, all.clone());
        let (best, _) = all
            .iter()
            .map(|c| {
                let mut t: Vec<f64> = (0..3).map(|k| sim.record(1000 + k, *c).wall_s).collect();
                t.sort_by(f64::total_cmp);
                (*c, t[1])
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        let true_time = |c: Config| spec.model.time(&spec.theta, c);
        let rec = r.recommended.config();
        assert!(
            rec == best || true_time(rec) <= true_time(best) * (1.0 + noise),
            "{text}: recommended {rec} ({:.3} s true), exhaustive best {best} ({:.3} s true)",
            true_time(rec),
            true_time(best)
        );
    }
}
