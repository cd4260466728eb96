//! hwloc XML import on arbitrary UTF-8: never panic, and whatever is
//! accepted is a consistent model (the invariants planners rely on).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_model::Topology;
use pinsight_topology::hwloc_xml;

fn check(t: &Topology) {
    let online = t.online();
    assert!(
        t.cpus.windows(2).all(|w| w[0].id < w[1].id),
        "cpus sorted and unique"
    );
    for groups in [&t.cores, &t.packages, &t.dies, &t.clusters] {
        for (i, g) in groups.iter().enumerate() {
            assert_eq!(g.id, i, "dense logical ids");
            assert!(
                !g.cpus.is_empty() && g.cpus.is_subset(&online),
                "groups hold online CPUs"
            );
        }
    }
    for c in &t.cpus {
        if let Some(i) = c.core {
            assert!(t.cores[i].cpus.contains(c.id));
        }
        if let Some(i) = c.package {
            assert!(t.packages[i].cpus.contains(c.id));
        }
        if let Some(i) = c.die {
            assert!(t.dies[i].cpus.contains(c.id));
        }
        if let Some(i) = c.cluster {
            assert!(t.clusters[i].cpus.contains(c.id));
        }
        if let Some(k) = c.kind {
            assert!(t.kinds[k].cpus.contains(c.id));
        }
        assert_eq!(
            c.online,
            c.core.is_some(),
            "online CPUs, and only they, have a core"
        );
    }
    // And back: every group's and kind's CPUs point at it (the sets
    // partition the online CPUs).
    let of = |id: usize| t.cpu(id).expect("group CPUs are listed CPUs");
    for g in &t.cores {
        assert!(g.cpus.iter().all(|c| of(c).core == Some(g.id)));
    }
    for g in &t.packages {
        assert!(g.cpus.iter().all(|c| of(c).package == Some(g.id)));
    }
    for g in &t.dies {
        assert!(g.cpus.iter().all(|c| of(c).die == Some(g.id)));
    }
    for g in &t.clusters {
        assert!(g.cpus.iter().all(|c| of(c).cluster == Some(g.id)));
    }
    for (rank, k) in t.kinds.iter().enumerate() {
        assert_eq!(k.rank, rank);
        assert!(k.cpus.iter().all(|c| of(c).kind == Some(rank)));
        // Named by discovery's rule: every kind has a name and a mark.
        assert!(
            !k.name.is_empty() && !k.mark.is_empty(),
            "kind {rank} named"
        );
    }
    for c in &t.caches {
        assert!(!c.cpus.is_empty() && c.cpus.is_subset(&online));
    }
    if let Some(d) = &t.numa_distances {
        assert_eq!(d.len(), t.numa_nodes.len());
        assert!(d.iter().all(|row| row.len() == t.numa_nodes.len()));
    }
    // The model is what `--json` prints: it must serialise.
    serde_json::to_string(t).expect("model serialises");
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match hwloc_xml::parse(text, "fuzz.xml") {
        Ok(t) => check(&t),
        Err(e) => {
            let e = e.to_string();
            assert!(
                !e.contains('\n') && e.starts_with("hwloc XML 'fuzz.xml'"),
                "{e}"
            )
        }
    }
});
