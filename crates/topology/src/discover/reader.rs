//! Reads through [`FsRoot`] that never fail loudly: a missing file is
//! `None`, a garbled one is `None` plus a warning naming the file and what
//! discovery did about it. Keeping this in one place keeps the wording of
//! warnings uniform and the discovery modules free of error plumbing.

use super::partition::Vote;
use pinsight_cpuset::CpuSet;
use pinsight_sys::FsRoot;
use std::fmt::Display;

/// A file reader that collects warnings.
pub(super) struct Reader<'a> {
    pub fs: &'a FsRoot,
    warnings: Vec<String>,
}

impl<'a> Reader<'a> {
    pub fn new(fs: &'a FsRoot) -> Reader<'a> {
        Reader {
            fs,
            warnings: Vec::new(),
        }
    }

    /// Records "`path`: `what`; `action`".
    pub fn warn(&mut self, path: &str, what: impl Display, action: &str) {
        self.warnings.push(format!("{path}: {what}; {action}"));
    }

    /// Records a free-form warning (the caller names the file).
    pub fn warn_msg(&mut self, msg: String) {
        self.warnings.push(msg);
    }

    pub fn into_warnings(self) -> Vec<String> {
        self.warnings
    }

    /// The file's text (trailing whitespace and NULs removed), `None` if absent.
    pub fn text(&self, path: &str) -> Option<String> {
        self.fs.read_opt(path)
    }

    /// Names in a directory, sorted; empty if absent.
    pub fn list(&self, path: &str) -> Vec<String> {
        self.fs.list_dir(path)
    }

    /// An unsigned decimal number; garbage → warning naming `action`.
    pub fn number(&mut self, path: &str, action: &str) -> Option<u64> {
        let text = self.text(path)?;
        match parse_number(&text) {
            Some(n) => Some(n),
            None => {
                self.warn(
                    path,
                    format_args!("'{}' is not a number", shorten(&text)),
                    action,
                );
                None
            }
        }
    }

    /// An OS id: a decimal that may legitimately be negative (`-1` means
    /// "unknown" in `physical_package_id` on some platforms) → `None`
    /// without a warning. Garbage → warning.
    pub fn os_id(&mut self, path: &str) -> Option<u32> {
        let text = self.text(path)?;
        let t = text.trim();
        if let Ok(v) = t.parse::<i64>() {
            return u32::try_from(v).ok();
        }
        self.warn(
            path,
            format_args!("'{}' is not an id", shorten(&text)),
            "ignored the id",
        );
        None
    }

    /// A CPU set from a kernel hex mask file (`mask_path`) or, if that is
    /// absent or garbled, a cpulist file (`list_path`). Garbage in either
    /// → warning; `None` when neither gives a set.
    pub fn cpuset(&mut self, mask_path: &str, list_path: &str, action: &str) -> Option<CpuSet> {
        if let Some(text) = self.text(mask_path) {
            match CpuSet::parse_mask(&text) {
                Ok(s) => return Some(s),
                Err(e) => self.warn(mask_path, e, action),
            }
        }
        self.cpulist(list_path, action)
    }

    /// The vote of a mask (`is_mask`) or cpulist `file` for `cpu`, within
    /// `online`; a garbled file is warned about and has no vote.
    pub fn vote(
        &mut self,
        cpu: usize,
        file: String,
        is_mask: bool,
        online: &CpuSet,
    ) -> Option<Vote> {
        let text = self.text(&file)?;
        let parsed = if is_mask {
            CpuSet::parse_mask(&text)
        } else {
            CpuSet::parse_list(&text)
        };
        match parsed {
            Ok(set) => Some(Vote {
                cpu,
                file,
                set: set.intersection(online),
            }),
            Err(e) => {
                self.warn(&file, e, "left it out of the majority vote");
                None
            }
        }
    }

    /// A CPU set from a cpulist file; garbage → warning.
    pub fn cpulist(&mut self, path: &str, action: &str) -> Option<CpuSet> {
        let text = self.text(path)?;
        match CpuSet::parse_list(&text) {
            Ok(s) => Some(s),
            Err(e) => {
                self.warn(path, e, action);
                None
            }
        }
    }
}

/// Parses a decimal `u64`, tolerating surrounding whitespace.
pub(super) fn parse_number(text: &str) -> Option<u64> {
    let t = text.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// At most 40 characters of `text`, for warnings about garbage, its
/// control characters escaped (`pinsight_sys::text::shown`).
pub(super) fn shorten(text: &str) -> String {
    let clean = pinsight_sys::text::shown(text);
    if clean.chars().count() > 40 {
        format!("{}...", clean.chars().take(40).collect::<String>())
    } else {
        clean.into_owned()
    }
}
