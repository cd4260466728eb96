//! What the targets that read several files from one input share
//! (`pci_files`, `proc_schedstat`, `proc_task_stat`): the input as UTF-8,
//! split at NUL bytes into one text per file.

/// The first `N` NUL-separated texts of `data`, an empty text for each
/// one missing; `None` when `data` is not UTF-8.
pub fn texts<const N: usize>(data: &[u8]) -> Option<[&str; N]> {
    let text = std::str::from_utf8(data).ok()?;
    let mut parts = text.split('\0');
    Some(std::array::from_fn(|_| parts.next().unwrap_or("")))
}
