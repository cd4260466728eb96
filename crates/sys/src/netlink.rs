//! Generic netlink multicast subscriptions: the OS edge of dynamic
//! capacity (Intel HFI events arrive on the `thermal` family's `event`
//! group).
//!
//! [`GenlSubscription::subscribe`] opens a `NETLINK_GENERIC` socket,
//! resolves a family and one of its multicast groups by name through the
//! generic netlink controller (`nlctrl`, `CTRL_CMD_GETFAMILY`), joins the
//! group and hands back raw datagrams ([`GenlSubscription::recv`]) with a
//! timeout and an optional wake-up descriptor, so callers can stop at any
//! time. Parsing what a family sends is the caller's business (for HFI:
//! `pinsight_topology::hfi`), so recorded bytes can be replayed without a
//! socket.
//!
//! Crates, not hand-written code: the socket is `netlink-sys`'s, the
//! controller's request and reply (family id, version, multicast groups)
//! are built and parsed by `netlink-packet-generic` on
//! `netlink-packet-core`. Only the wait (`poll(2)` through nix) is ours.
//!
//! Each way this can fail is its own [`NetlinkError`] variant, so callers
//! can say *why* a family is unavailable: sockets unsupported, permission
//! denied, family absent (the kernel was built without it, or its module
//! is not loaded), group absent.

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_REQUEST,
};
use netlink_packet_generic::ctrl::nlas::{GenlCtrlAttrs, McastGrpAttrs};
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_packet_generic::GenlMessage;
use netlink_sys::{protocols::NETLINK_GENERIC, Socket};
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

/// Receive buffer for one datagram. Generic netlink multicast messages are
/// at most `NLMSG_GOODSIZE` (one page, 8 KiB at most); a larger datagram is
/// reported as [`NetlinkError::Truncated`], never cut silently.
const RECV_BUFFER: usize = 64 * 1024;

/// Why a generic netlink subscription could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum NetlinkError {
    /// The kernel (or a sandbox's seccomp filter) refuses netlink sockets.
    #[error("generic netlink sockets are not supported here ({source})")]
    Unsupported {
        #[source]
        source: io::Error,
    },
    /// Opening, asking or joining was refused (EPERM / EACCES).
    #[error("permission denied while {op} ({source})")]
    PermissionDenied {
        op: &'static str,
        #[source]
        source: io::Error,
    },
    /// The controller does not know the family: the kernel was built
    /// without it or its module is not loaded.
    #[error("the kernel has no generic netlink family \"{family}\"")]
    FamilyAbsent { family: String },
    /// The family exists but has no multicast group of that name.
    #[error(
        "generic netlink family \"{family}\" has no multicast group \"{group}\" (it has: {})",
        if available.is_empty() { "none".to_string() } else { available.join(", ") }
    )]
    GroupAbsent {
        family: String,
        group: String,
        available: Vec<String>,
    },
    /// The controller's answer could not be understood.
    #[error("unexpected answer from the generic netlink controller about \"{family}\": {reason}")]
    BadReply { family: String, reason: String },
    /// A datagram larger than the receive buffer.
    #[error("a generic netlink datagram of {len} bytes exceeds the {RECV_BUFFER}-byte buffer")]
    Truncated { len: usize },
    /// Any other OS error, with what was being done.
    #[error("{op}: {source}")]
    Io {
        op: &'static str,
        #[source]
        source: io::Error,
    },
}

impl NetlinkError {
    fn from_io(op: &'static str, source: io::Error) -> NetlinkError {
        match source.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => NetlinkError::PermissionDenied { op, source },
            Some(libc::EAFNOSUPPORT) | Some(libc::EPROTONOSUPPORT) | Some(libc::ENOSYS)
                if op == OP_SOCKET =>
            {
                NetlinkError::Unsupported { source }
            }
            _ => NetlinkError::Io { op, source },
        }
    }
}

const OP_SOCKET: &str = "opening a generic netlink socket";

/// A generic netlink family as the controller describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenlFamily {
    /// The family's name (`thermal`).
    pub name: String,
    /// The message type its messages carry (assigned at boot).
    pub id: u16,
    /// The family's version (`genlmsghdr.version` of its messages).
    pub version: u32,
    /// Multicast groups: name and id.
    pub groups: Vec<(String, u32)>,
}

/// What one wait on a subscription gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Received {
    /// One datagram, as the kernel sent it (one or more netlink messages).
    Datagram(Vec<u8>),
    /// Nothing arrived before the timeout.
    TimedOut,
    /// The wake-up descriptor became readable (e.g. a signal's self-pipe).
    Woken,
    /// The socket's receive buffer overflowed (ENOBUFS): messages were
    /// lost. The subscription stays usable.
    Overrun,
}

/// A socket that has joined one multicast group of one generic netlink
/// family. Dropping it leaves the group (the kernel sees the socket close).
#[derive(Debug)]
pub struct GenlSubscription {
    socket: Socket,
    family: GenlFamily,
    group: u32,
}

impl GenlSubscription {
    /// Resolves `family` and its multicast group `group` through nlctrl and
    /// joins the group.
    pub fn subscribe(family: &str, group: &str) -> Result<GenlSubscription, NetlinkError> {
        // Family names are at most GENL_NAMSIZ - 1 = 15 bytes: nlctrl
        // rejects a longer one as invalid (EINVAL) rather than absent.
        if family.is_empty() || family.len() > 15 {
            return Err(NetlinkError::FamilyAbsent {
                family: family.to_string(),
            });
        }
        let mut socket =
            Socket::new(NETLINK_GENERIC).map_err(|e| NetlinkError::from_io(OP_SOCKET, e))?;
        socket
            .bind_auto()
            .map_err(|e| NetlinkError::from_io("binding a generic netlink socket", e))?;
        let fam = resolve(&socket, family)?;
        let Some(&(_, group_id)) = fam.groups.iter().find(|(n, _)| n == group) else {
            return Err(NetlinkError::GroupAbsent {
                family: family.to_string(),
                group: group.to_string(),
                available: fam.groups.iter().map(|(n, _)| n.clone()).collect(),
            });
        };
        socket
            .add_membership(group_id)
            .map_err(|e| NetlinkError::from_io("joining the multicast group", e))?;
        socket
            .set_non_blocking(true)
            .map_err(|e| NetlinkError::from_io("making the socket non-blocking", e))?;
        Ok(GenlSubscription {
            socket,
            family: fam,
            group: group_id,
        })
    }

    /// The family as the controller described it.
    pub fn family(&self) -> &GenlFamily {
        &self.family
    }

    /// The joined group's id.
    pub fn group_id(&self) -> u32 {
        self.group
    }

    /// Waits up to `timeout` for one datagram. When `wake` is given and
    /// becomes readable first, returns [`Received::Woken`] without reading
    /// it. Interrupted waits (EINTR) are resumed with the time left.
    pub fn recv(
        &mut self,
        timeout: Duration,
        wake: Option<BorrowedFd<'_>>,
    ) -> Result<Received, NetlinkError> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            // poll(2) takes milliseconds: round up so a short timeout
            // still waits, and cap at what PollTimeout holds.
            let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
            let mut fds = vec![PollFd::new(self.socket.as_fd(), PollFlags::POLLIN)];
            if let Some(w) = wake {
                fds.push(PollFd::new(w, PollFlags::POLLIN));
            }
            let n = match poll(
                &mut fds,
                PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
            ) {
                Ok(n) => n,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    return Err(NetlinkError::from_io(
                        "waiting for netlink messages",
                        e.into(),
                    ))
                }
            };
            if n == 0 {
                return Ok(Received::TimedOut);
            }
            let ready = |fd: &PollFd<'_>| {
                fd.revents().is_some_and(|r| {
                    r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR)
                })
            };
            if fds.len() > 1 && ready(&fds[1]) {
                return Ok(Received::Woken);
            }
            if !ready(&fds[0]) {
                continue;
            }
            let mut buf = Vec::with_capacity(RECV_BUFFER);
            match self.socket.recv(&mut buf, libc::MSG_TRUNC) {
                Ok(len) if len > buf.len() => return Err(NetlinkError::Truncated { len }),
                Ok(_) => return Ok(Received::Datagram(buf)),
                Err(e) => match e.raw_os_error() {
                    Some(libc::ENOBUFS) => return Ok(Received::Overrun),
                    Some(libc::EAGAIN) | Some(libc::EINTR) => continue,
                    _ => return Err(NetlinkError::from_io("receiving a netlink message", e)),
                },
            }
        }
    }
}

/// How long to wait for nlctrl's answer (it answers at once; this only
/// guards against a sandbox that swallows netlink traffic).
const CTRL_TIMEOUT: Duration = Duration::from_secs(2);

/// Asks nlctrl for `family` (`CTRL_CMD_GETFAMILY` by name).
fn resolve(socket: &Socket, family: &str) -> Result<GenlFamily, NetlinkError> {
    let bad = |reason: String| NetlinkError::BadReply {
        family: family.to_string(),
        reason,
    };
    let mut genl = GenlMessage::from_payload(GenlCtrl {
        cmd: GenlCtrlCmd::GetFamily,
        nlas: vec![GenlCtrlAttrs::FamilyName(family.to_string())],
    });
    genl.finalize();
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_ACK;
    header.sequence_number = 1;
    let mut msg = NetlinkMessage::new(header, NetlinkPayload::from(genl));
    msg.finalize();
    let mut out = vec![0u8; msg.buffer_len()];
    msg.serialize(&mut out);
    socket
        .send(&out, 0)
        .map_err(|e| NetlinkError::from_io("asking the generic netlink controller", e))?;

    let mut found: Option<GenlFamily> = None;
    let deadline = Instant::now() + CTRL_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(bad(format!("no answer within {CTRL_TIMEOUT:?}")));
        }
        wait_readable(socket, left)?;
        let mut buf = Vec::with_capacity(RECV_BUFFER);
        match socket.recv(&mut buf, 0) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => continue,
            Err(e) => {
                return Err(NetlinkError::from_io(
                    "reading the generic netlink controller's answer",
                    e,
                ))
            }
        }
        let mut at = 0;
        while at < buf.len() {
            let reply = NetlinkMessage::<GenlMessage<GenlCtrl>>::deserialize(&buf[at..])
                .map_err(|e| bad(e.to_string()))?;
            let len = reply.header.length as usize;
            match reply.payload {
                NetlinkPayload::InnerMessage(m) => found = Some(family_of(family, m.payload)?),
                NetlinkPayload::Error(e) => match e.code {
                    None => {
                        // The ACK: the answer (if any) came before it.
                        return found.ok_or_else(|| bad("acknowledged without an answer".into()));
                    }
                    Some(code) if -code.get() == libc::ENOENT => {
                        return Err(NetlinkError::FamilyAbsent {
                            family: family.to_string(),
                        })
                    }
                    Some(code) => {
                        return Err(NetlinkError::from_io(
                            "asking the generic netlink controller",
                            io::Error::from_raw_os_error(-code.get()),
                        ))
                    }
                },
                NetlinkPayload::Done(_) => {
                    return found.ok_or_else(|| bad("finished without an answer".into()))
                }
                _ => {}
            }
            if len == 0 {
                break;
            }
            // Messages in one datagram are 4-byte aligned.
            at += len.div_ceil(4) * 4;
        }
    }
}

fn wait_readable(socket: &Socket, timeout: Duration) -> Result<(), NetlinkError> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    let mut fds = [PollFd::new(socket.as_fd(), PollFlags::POLLIN)];
    match poll(
        &mut fds,
        PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
    ) {
        Ok(_) | Err(nix::errno::Errno::EINTR) => Ok(()),
        Err(e) => Err(NetlinkError::from_io(
            "waiting for the controller",
            e.into(),
        )),
    }
}

fn family_of(name: &str, ctrl: GenlCtrl) -> Result<GenlFamily, NetlinkError> {
    let mut fam = GenlFamily {
        name: name.to_string(),
        id: 0,
        version: 0,
        groups: Vec::new(),
    };
    let mut have_id = false;
    for nla in ctrl.nlas {
        match nla {
            GenlCtrlAttrs::FamilyId(id) => {
                fam.id = id;
                have_id = true;
            }
            GenlCtrlAttrs::Version(v) => fam.version = v,
            GenlCtrlAttrs::FamilyName(n) => fam.name = n,
            GenlCtrlAttrs::McastGroups(groups) => {
                for attrs in groups {
                    let mut gname = None;
                    let mut gid = None;
                    for a in attrs {
                        match a {
                            McastGrpAttrs::Name(n) => gname = Some(n),
                            McastGrpAttrs::Id(i) => gid = Some(i),
                        }
                    }
                    if let (Some(n), Some(i)) = (gname, gid) {
                        fam.groups.push((n, i));
                    }
                }
            }
            _ => {}
        }
    }
    if !have_id {
        return Err(NetlinkError::BadReply {
            family: name.to_string(),
            reason: "no family id in the answer".into(),
        });
    }
    Ok(fam)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Subscribes, or skips when this sandbox has no generic netlink at all.
    fn subscribe_or_skip(
        family: &str,
        group: &str,
    ) -> Option<Result<GenlSubscription, NetlinkError>> {
        match GenlSubscription::subscribe(family, group) {
            Err(e @ NetlinkError::Unsupported { .. })
            | Err(e @ NetlinkError::PermissionDenied { .. }) => {
                pinsight_testkit::skip(format!("generic netlink unusable here: {e}"));
                None
            }
            r => Some(r),
        }
    }

    // nlctrl itself is a generic netlink family with a "notify" group on
    // every kernel that has generic netlink: the resolver can be checked
    // on any machine.
    #[test]
    fn resolves_the_controller_family_and_joins_its_notify_group() {
        let Some(r) = subscribe_or_skip("nlctrl", "notify") else {
            return;
        };
        let mut sub = r.expect("nlctrl/notify must resolve");
        assert_eq!(sub.family().name, "nlctrl");
        assert_eq!(sub.family().id, 0x10, "GENL_ID_CTRL");
        assert!(sub.family().groups.iter().any(|(n, _)| n == "notify"));
        // Nothing is announced meanwhile: the wait times out, no error.
        let got = sub.recv(Duration::from_millis(20), None).unwrap();
        assert!(
            matches!(got, Received::TimedOut | Received::Datagram(_)),
            "{got:?}"
        );
    }

    #[test]
    fn an_unknown_family_is_absent_by_name() {
        let Some(r) = subscribe_or_skip("pinsight-none", "event") else {
            return;
        };
        match r {
            Err(NetlinkError::FamilyAbsent { family }) => assert_eq!(family, "pinsight-none"),
            other => panic!("expected FamilyAbsent, got {other:?}"),
        }
        // Longer than any family name can be: absent, not "invalid".
        assert!(matches!(
            GenlSubscription::subscribe("pinsight-no-such-family", "event"),
            Err(NetlinkError::FamilyAbsent { .. })
        ));
    }

    #[test]
    fn an_unknown_group_is_absent_and_the_real_ones_are_listed() {
        let Some(r) = subscribe_or_skip("nlctrl", "no-such-group") else {
            return;
        };
        match r {
            Err(e @ NetlinkError::GroupAbsent { .. }) => {
                let NetlinkError::GroupAbsent { available, .. } = &e else {
                    unreachable!()
                };
                assert!(available.iter().any(|g| g == "notify"), "{available:?}");
                assert!(
                    e.to_string()
                        .contains("has no multicast group \"no-such-group\" (it has: notify"),
                    "{e}"
                );
            }
            other => panic!("expected GroupAbsent, got {other:?}"),
        }
    }

    #[test]
    fn a_wake_descriptor_ends_the_wait() {
        let Some(r) = subscribe_or_skip("nlctrl", "notify") else {
            return;
        };
        let mut sub = r.unwrap();
        let (rd, wr) = crate::process::pipe().unwrap();
        nix::unistd::write(&wr, b"x").unwrap();
        let got = sub.recv(Duration::from_secs(30), Some(rd.as_fd())).unwrap();
        assert_eq!(got, Received::Woken);
    }
}
