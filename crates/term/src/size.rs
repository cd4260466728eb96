//! Sizes in binary units (1 KiB = 1024 bytes), one rule for every output:
//! the largest unit that divides the size exactly, so a 1.25 MiB L2 is
//! "1280 KiB", never a rounded "1.2 MiB".

use std::fmt;

/// A binary unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryUnit {
    KiB,
    MiB,
    GiB,
}

/// A size as a whole number of the largest binary unit that divides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinarySize {
    pub value: u64,
    pub unit: BinaryUnit,
}

impl BinarySize {
    /// `kib` in the largest unit that divides it exactly.
    pub fn from_kib(kib: u64) -> Self {
        const MIB: u64 = 1024;
        const GIB: u64 = 1024 * 1024;
        let (value, unit) = if kib >= GIB && kib.is_multiple_of(GIB) {
            (kib / GIB, BinaryUnit::GiB)
        } else if kib >= MIB && kib.is_multiple_of(MIB) {
            (kib / MIB, BinaryUnit::MiB)
        } else {
            (kib, BinaryUnit::KiB)
        };
        BinarySize { value, unit }
    }

    /// lstopo's spelling: no space, `KB`/`MB`/`GB` (binary, as in hwloc).
    pub fn lstopo(self) -> String {
        let unit = match self.unit {
            BinaryUnit::KiB => "KB",
            BinaryUnit::MiB => "MB",
            BinaryUnit::GiB => "GB",
        };
        format!("{}{unit}", self.value)
    }
}

impl fmt::Display for BinarySize {
    /// "24 MiB", "1280 KiB".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.unit {
            BinaryUnit::KiB => "KiB",
            BinaryUnit::MiB => "MiB",
            BinaryUnit::GiB => "GiB",
        };
        write!(f, "{} {unit}", self.value)
    }
}

/// A size given in KiB, as "24 MiB" (see [`BinarySize`]).
pub fn format_size(kib: u64) -> String {
    BinarySize::from_kib(kib).to_string()
}

/// A size given in KiB as lstopo prints it ("24MB", binary units), or
/// "size ?" when unknown — what `pinsight topo` shows.
pub fn format_size_lstopo(kib: Option<u64>) -> String {
    kib.map_or_else(|| "size ?".into(), |k| BinarySize::from_kib(k).lstopo())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_largest_exact_unit() {
        assert_eq!(format_size(48), "48 KiB");
        assert_eq!(format_size(1024), "1 MiB");
        assert_eq!(format_size(1280), "1280 KiB");
        assert_eq!(format_size(24 * 1024), "24 MiB");
        assert_eq!(format_size(1536), "1536 KiB");
        assert_eq!(format_size(2 * 1024 * 1024), "2 GiB");
        assert_eq!(format_size(0), "0 KiB");
    }

    #[test]
    fn lstopo_spelling_uses_the_same_rule() {
        assert_eq!(format_size_lstopo(Some(48)), "48KB");
        assert_eq!(format_size_lstopo(Some(1280)), "1280KB");
        assert_eq!(format_size_lstopo(Some(24 * 1024)), "24MB");
        assert_eq!(format_size_lstopo(Some(1024 * 1024)), "1GB");
        assert_eq!(format_size_lstopo(None), "size ?");
    }
}
