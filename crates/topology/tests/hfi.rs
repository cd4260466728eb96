//! The HFI event parser on datagrams laid out as the kernel writes them
//! (`include/uapi/linux/thermal.h`, `thermal_genl_event_cpu_capability_change`
//! in `drivers/thermal/thermal_netlink.c`): single and multi-CPU messages,
//! several messages per datagram, other thermal events to ignore, and
//! truncated or garbage input. The bytes are built here field by field,
//! independently of `hfi::encode` (which a property test checks against
//! the parser).

use pinsight_topology::hfi::{self, CapabilityChange, HfiParseError};
use proptest::prelude::*;

/// The thermal family's id on the machine the bytes "came from" (ids are
/// assigned at boot; 0x1c is what a 6.x laptop typically shows).
const THERMAL: u16 = 0x1c;
const NLA_F_NESTED: u16 = 0x8000;

fn attr(kind: u16, value: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
    v.extend_from_slice(&kind.to_ne_bytes());
    v.extend_from_slice(value);
    while v.len() % 4 != 0 {
        v.push(0);
    }
    v
}

fn u32_attr(kind: u16, value: u32) -> Vec<u8> {
    attr(kind, &value.to_ne_bytes())
}

/// One netlink message: nlmsghdr, genlmsghdr (cmd, version 1), attributes.
fn message(kind: u16, cmd: u8, attrs: &[Vec<u8>]) -> Vec<u8> {
    let body: Vec<u8> = attrs.concat();
    let len = 16 + 4 + body.len();
    let mut m = Vec::new();
    m.extend_from_slice(&(len as u32).to_ne_bytes());
    m.extend_from_slice(&kind.to_ne_bytes());
    m.extend_from_slice(&0u16.to_ne_bytes());
    m.extend_from_slice(&7u32.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(&[cmd, 1, 0, 0]);
    m.extend_from_slice(&body);
    m
}

/// A CPU_CAPABILITY_CHANGE message for (cpu, perf, eff) triples.
fn capability_message(cpus: &[(u32, u32, u32)]) -> Vec<u8> {
    let nest: Vec<u8> = cpus
        .iter()
        .flat_map(|&(c, p, e)| [u32_attr(21, c), u32_attr(22, p), u32_attr(23, e)].concat())
        .collect();
    message(THERMAL, 14, &[attr(20 | NLA_F_NESTED, &nest)])
}

fn change(cpu: u32, performance: u32, efficiency: u32) -> CapabilityChange {
    CapabilityChange {
        cpu,
        performance,
        efficiency,
    }
}

#[test]
fn one_cpu() {
    let bytes = capability_message(&[(3, 512, 380)]);
    assert_eq!(hfi::parse(&bytes).unwrap(), vec![change(3, 512, 380)]);
}

#[test]
fn sixteen_cpus_in_one_message_and_the_rest_in_the_next() {
    // A 20-CPU package: the kernel sends 16, then 4, in one burst.
    let first: Vec<_> = (0..16).map(|c| (c, 1020 - 4 * c, 400 + c)).collect();
    let second: Vec<_> = (16..20).map(|c| (c, 0, 0)).collect();
    let mut bytes = capability_message(&first);
    bytes.extend(capability_message(&second));
    let got = hfi::parse(&bytes).unwrap();
    assert_eq!(got.len(), 20);
    assert_eq!(got[0], change(0, 1020, 400));
    assert_eq!(got[15], change(15, 960, 415));
    assert!(got[16..].iter().all(|c| !c.schedulable()));
    assert_eq!(
        got.iter().map(|c| c.cpu).collect::<Vec<_>>(),
        (0..20).collect::<Vec<_>>()
    );
}

#[test]
fn the_nest_flag_is_optional() {
    let nest = [u32_attr(21, 1), u32_attr(22, 8), u32_attr(23, 12)].concat();
    let bytes = message(THERMAL, 14, &[attr(20, &nest)]);
    assert_eq!(hfi::parse(&bytes).unwrap(), vec![change(1, 8, 12)]);
}

#[test]
fn other_thermal_events_and_control_messages_are_ignored() {
    // THERMAL_GENL_EVENT_TZ_TRIP_UP (5): tz id, trip id, temperature.
    let trip = message(
        THERMAL,
        5,
        &[u32_attr(2, 1), u32_attr(5, 0), u32_attr(3, 85_000)],
    );
    // THERMAL_GENL_EVENT_CDEV_STATE_UPDATE (12), with attribute 20 unused.
    let cdev = message(THERMAL, 12, &[u32_attr(15, 4), u32_attr(16, 2)]);
    // NLMSG_DONE (type 3): a 4-byte payload.
    let mut done = Vec::new();
    done.extend_from_slice(&20u32.to_ne_bytes());
    done.extend_from_slice(&3u16.to_ne_bytes());
    done.extend_from_slice(&[0; 10]);
    done.extend_from_slice(&0i32.to_ne_bytes());
    let mut bytes = [trip.clone(), cdev, done].concat();
    assert_eq!(hfi::parse(&bytes).unwrap(), vec![]);
    bytes.extend(capability_message(&[(7, 100, 200)]));
    bytes.extend(trip);
    assert_eq!(hfi::parse(&bytes).unwrap(), vec![change(7, 100, 200)]);
}

#[test]
fn unknown_attributes_inside_the_nest_are_skipped() {
    let nest = [
        u32_attr(21, 2),
        u32_attr(99, 1),
        u32_attr(22, 4),
        u32_attr(23, 8),
    ]
    .concat();
    let bytes = message(THERMAL, 14, &[u32_attr(2, 9), attr(20, &nest)]);
    assert_eq!(hfi::parse(&bytes).unwrap(), vec![change(2, 4, 8)]);
}

#[test]
fn only_the_thermal_family_counts_when_its_id_is_known() {
    let ours = capability_message(&[(0, 1020, 1020)]);
    let mut other = ours.clone();
    other[4..6].copy_from_slice(&0x1du16.to_ne_bytes());
    let bytes = [other.clone(), ours].concat();
    assert_eq!(hfi::parse_family(&bytes, THERMAL).unwrap().len(), 1);
    assert_eq!(hfi::parse(&bytes).unwrap().len(), 2);
    assert!(hfi::parse_family(&other, THERMAL).unwrap().is_empty());
}

#[test]
fn every_truncation_is_an_error_or_a_whole_message_prefix() {
    let a = capability_message(&[(0, 1, 2), (1, 3, 4)]);
    let b = capability_message(&[(2, 5, 6)]);
    let bytes = [a.clone(), b].concat();
    let full = hfi::parse(&bytes).unwrap();
    for cut in 0..bytes.len() {
        match hfi::parse(&bytes[..cut]) {
            Ok(got) => {
                assert!(cut == 0 || cut == a.len(), "cut at {cut} parsed as {got:?}");
                assert_eq!(got[..], full[..got.len()]);
            }
            Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
        }
    }
}

#[test]
fn a_length_past_the_end_names_the_message_offset() {
    let mut bytes = capability_message(&[(0, 1, 2)]);
    let second_at = bytes.len();
    let mut second = capability_message(&[(1, 1, 2)]);
    second[0..4].copy_from_slice(&4096u32.to_ne_bytes());
    bytes.extend(second);
    match hfi::parse(&bytes) {
        Err(HfiParseError::Message { offset, .. }) => assert_eq!(offset, second_at),
        other => panic!("expected a message error, got {other:?}"),
    }
}

#[test]
fn malformed_capability_entries_are_named() {
    let nest = [u32_attr(22, 4), u32_attr(21, 2), u32_attr(23, 8)].concat();
    let e = hfi::parse(&message(THERMAL, 14, &[attr(20, &nest)])).unwrap_err();
    assert!(
        matches!(
            e,
            HfiParseError::FieldBeforeId {
                field: "performance",
                offset: 24
            }
        ),
        "{e:?}"
    );

    let nest = [
        u32_attr(21, 2),
        u32_attr(22, 4),
        u32_attr(22, 5),
        u32_attr(23, 8),
    ]
    .concat();
    let e = hfi::parse(&message(THERMAL, 14, &[attr(20, &nest)])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "CPU 2: performance given twice (second at byte 40)"
    );

    let nest = [
        u32_attr(21, 2),
        u32_attr(22, 4),
        u32_attr(21, 3),
        u32_attr(22, 4),
        u32_attr(23, 1),
    ]
    .concat();
    let e = hfi::parse(&message(THERMAL, 14, &[attr(20, &nest)])).unwrap_err();
    assert_eq!(
        e,
        HfiParseError::Missing {
            cpu: 2,
            field: "efficiency"
        }
    );

    let nest = [u32_attr(21, 2), attr(22, &[1, 2]), u32_attr(23, 8)].concat();
    let e = hfi::parse(&message(THERMAL, 14, &[attr(20, &nest)])).unwrap_err();
    assert!(
        matches!(
            e,
            HfiParseError::ValueSize {
                len: 2,
                field: "performance",
                ..
            }
        ),
        "{e:?}"
    );

    // A genl message too short for its own header.
    let mut short = Vec::new();
    short.extend_from_slice(&18u32.to_ne_bytes());
    short.extend_from_slice(&THERMAL.to_ne_bytes());
    short.extend_from_slice(&[0; 10]);
    short.extend_from_slice(&[14, 1]);
    assert_eq!(
        hfi::parse(&short).unwrap_err(),
        HfiParseError::GenlHeader { offset: 0, len: 2 }
    );
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    for bytes in [
        &b"\xff\xff\xff\xff\x1c\x00"[..],
        &[0u8; 15][..],
        &[0u8; 16][..],
        &b"thermal event, not netlink at all"[..],
    ] {
        assert!(hfi::parse(bytes).is_err(), "{bytes:?}");
    }
    assert_eq!(hfi::parse(&[]).unwrap(), vec![]);
}

#[test]
fn the_encoder_writes_what_the_hand_built_bytes_hold() {
    let by_hand = capability_message(&[(3, 512, 380)]);
    let mut encoded = hfi::encode(THERMAL, &[change(3, 512, 380)]);
    // Sequence numbers differ (ours is 7): compare the rest.
    encoded[8..12].copy_from_slice(&7u32.to_ne_bytes());
    assert_eq!(encoded, by_hand);
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = hfi::parse(&bytes);
        let _ = hfi::parse_family(&bytes, THERMAL);
    }

    #[test]
    fn encoded_changes_parse_back(
        changes in proptest::collection::vec((0u32..4096, 0u32..=1020, 0u32..=1020), 0..60)
    ) {
        let changes: Vec<_> = changes.into_iter().map(|(c, p, e)| change(c, p, e)).collect();
        let bytes = hfi::encode(THERMAL, &changes);
        prop_assert_eq!(hfi::parse_family(&bytes, THERMAL).unwrap(), changes);
    }

    #[test]
    fn flipped_bytes_never_panic(
        changes in proptest::collection::vec((0u32..64, 0u32..=1020, 0u32..=1020), 1..20),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let changes: Vec<_> = changes.into_iter().map(|(c, p, e)| change(c, p, e)).collect();
        let mut bytes = hfi::encode(THERMAL, &changes);
        for (at, v) in flips {
            let i = at.index(bytes.len());
            bytes[i] = v;
        }
        let _ = hfi::parse(&bytes);
    }
}
