//! A growable set of CPU numbers, and the text formats Linux and hwloc use
//! for it.
//!
//! Why not `libc::cpu_set_t`? It stops at 1024 CPUs, and recorded machines
//! (and the kernel's `NR_CPUS`-sized masks) go well beyond that. [`CpuSet`]
//! is a plain bit vector of 64-bit words that grows on demand.
//!
//! Formats:
//! - **cpulist** (`/sys/devices/system/cpu/online`, `taskset -c`):
//!   `0-3,8-11`, strides `0-15:2` (util-linux) and groups `0-15:2/4`
//!   (kernel `bitmap_parselist`: use 2 of every 4).
//! - **kernel hex mask** (`thread_siblings`, `/proc/PID/status`): 32-bit
//!   words, most significant first, comma separated: `ff,00000000`.
//! - **hwloc bitmap** (`lstopo` XML): words prefixed with `0x`, empty words
//!   meaning zero and a leading `0xf...f` meaning "all the rest" — see
//!   [`CpuSet::parse_hwloc`].
#![forbid(unsafe_code)]

use std::fmt;

/// The largest CPU number accepted from text. Far beyond any real machine,
/// small enough that hostile input cannot make us allocate gigabytes.
pub const MAX_CPU: usize = (1 << 20) - 1;

/// A set of CPU numbers (logical CPU ids as the kernel numbers them).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuSet {
    /// Bit `i % 64` of word `i / 64` is CPU `i`. Never has trailing zero
    /// words, so derived equality is set equality.
    words: Vec<u64>,
}

/// Why a text could not be read as a CPU set. Names the whole input and
/// the offending token so a user can find it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The whole text that was being parsed (trimmed).
    pub input: String,
    /// The token that failed.
    pub token: String,
    /// What was wrong with it.
    pub reason: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid CPU set '{}': '{}' {}",
            self.input, self.token, self.reason
        )
    }
}

impl std::error::Error for ParseError {}

impl CpuSet {
    /// The empty set.
    pub fn new() -> CpuSet {
        CpuSet { words: Vec::new() }
    }

    /// CPUs `0..n`.
    pub fn first_n(n: usize) -> CpuSet {
        let mut s = CpuSet::new();
        s.insert_range(0, n);
        s
    }

    /// A set holding only `cpu`.
    pub fn single(cpu: usize) -> CpuSet {
        let mut s = CpuSet::new();
        s.insert(cpu);
        s
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    /// Adds `cpu`; returns whether it was absent.
    pub fn insert(&mut self, cpu: usize) -> bool {
        let (w, b) = (cpu / 64, cpu % 64);
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        let had = self.words[w] & (1 << b) != 0;
        self.words[w] |= 1 << b;
        !had
    }

    /// Adds CPUs `start..end`.
    pub fn insert_range(&mut self, start: usize, end: usize) {
        for cpu in start..end {
            self.insert(cpu);
        }
    }

    /// Removes `cpu`; returns whether it was present.
    pub fn remove(&mut self, cpu: usize) -> bool {
        let (w, b) = (cpu / 64, cpu % 64);
        if w >= self.words.len() {
            return false;
        }
        let had = self.words[w] & (1 << b) != 0;
        self.words[w] &= !(1 << b);
        self.trim();
        had
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.words
            .get(cpu / 64)
            .is_some_and(|w| w & (1 << (cpu % 64)) != 0)
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Lowest CPU, if any.
    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// Highest CPU, if any.
    pub fn last(&self) -> Option<usize> {
        let w = self.words.len().checked_sub(1)?;
        Some(w * 64 + 63 - self.words[w].leading_zeros() as usize)
    }

    /// CPUs in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            words: &self.words,
            word: 0,
            bits: self.words.first().copied().unwrap_or(0),
        }
    }

    /// CPUs in either set.
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        let n = self.words.len().max(other.words.len());
        let words = (0..n)
            .map(|i| self.words.get(i).unwrap_or(&0) | other.words.get(i).unwrap_or(&0))
            .collect();
        CpuSet { words }
    }

    /// CPUs in both sets.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        let words = self
            .words
            .iter()
            .zip(&other.words)
            .map(|(a, b)| a & b)
            .collect();
        let mut s = CpuSet { words };
        s.trim();
        s
    }

    /// CPUs in `self` but not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        let words = self
            .words
            .iter()
            .enumerate()
            .map(|(i, a)| a & !other.words.get(i).unwrap_or(&0))
            .collect();
        let mut s = CpuSet { words };
        s.trim();
        s
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, a)| a & !other.words.get(i).unwrap_or(&0) == 0)
    }

    /// Whether the two sets share a CPU.
    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    /// Adds every CPU of `other` to `self`.
    pub fn union_with(&mut self, other: &CpuSet) {
        if other.words.len() > self.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    /// The raw 64-bit words, least significant first (bit i of word w = CPU 64w+i).
    pub fn as_words(&self) -> &[u64] {
        &self.words
    }

    /// Builds a set from 64-bit words, least significant first.
    pub fn from_words(words: Vec<u64>) -> CpuSet {
        let mut s = CpuSet { words };
        s.trim();
        s
    }

    /// Parses a Linux cpulist: `0-3,8-11`, `0-15:2` (every 2nd), `0-15:2/4`
    /// (2 of every 4, the kernel's group syntax). Empty text is the empty
    /// set. Surrounding whitespace and trailing NULs (seen in sysfs dumps)
    /// are ignored.
    pub fn parse_list(text: &str) -> Result<CpuSet, ParseError> {
        let input = clean(text);
        let mut set = CpuSet::new();
        if input.is_empty() {
            return Ok(set);
        }
        let err = |token: &str, reason: &str| ParseError {
            input: input.to_string(),
            token: token.to_string(),
            reason: reason.to_string(),
        };
        for token in input.split(',') {
            let token = token.trim();
            if token.is_empty() {
                return Err(err(token, "is empty (stray comma?)"));
            }
            let (range, step) = match token.split_once(':') {
                Some((r, s)) => (r, Some(s)),
                None => (token, None),
            };
            let (lo, hi) = match range.split_once('-') {
                Some((a, b)) => (parse_num(a, token, &input)?, parse_num(b, token, &input)?),
                None => {
                    if step.is_some() {
                        return Err(err(token, "has a stride but no range (use A-B:S)"));
                    }
                    let c = parse_num(range, token, &input)?;
                    (c, c)
                }
            };
            if lo > hi {
                return Err(err(token, "is a decreasing range"));
            }
            let (used, group) = match step {
                None => (1, 1),
                Some(s) => match s.split_once('/') {
                    Some((u, g)) => (parse_num(u, token, &input)?, parse_num(g, token, &input)?),
                    None => (1, parse_num(s, token, &input)?),
                },
            };
            if group == 0 || used == 0 || used > group {
                return Err(err(
                    token,
                    "has a stride that must be S >= 1 (or U/G with 1 <= U <= G)",
                ));
            }
            let mut c = lo;
            while c <= hi {
                for k in c..(c + used).min(hi + 1) {
                    set.insert(k);
                }
                c += group;
            }
        }
        Ok(set)
    }

    /// Parses a kernel hex mask: 32-bit hex words, most significant first,
    /// comma separated (`ff,00000000`). An optional `0x` prefix per word is
    /// accepted, as are masks sized to the kernel's NR_CPUS.
    pub fn parse_mask(text: &str) -> Result<CpuSet, ParseError> {
        let input = clean(text);
        if input.is_empty() {
            return Err(ParseError {
                input: String::new(),
                token: String::new(),
                reason: "is empty; expected hex words like 'ff,00000000'".into(),
            });
        }
        let parts: Vec<&str> = input.split(',').collect();
        let mut words32 = Vec::with_capacity(parts.len());
        for part in parts.iter().rev() {
            let p = part.trim();
            let hex = p
                .strip_prefix("0x")
                .or_else(|| p.strip_prefix("0X"))
                .unwrap_or(p);
            if hex.is_empty() || hex.len() > 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(ParseError {
                    input: input.to_string(),
                    token: p.to_string(),
                    reason: "is not a 32-bit hex word (1 to 8 hex digits)".into(),
                });
            }
            words32.push(u32::from_str_radix(hex, 16).expect("validated hex"));
        }
        Self::from_words32(&words32, &input)
    }

    fn from_words32(words32: &[u32], input: &str) -> Result<CpuSet, ParseError> {
        // Only reject a *set bit* beyond MAX_CPU; long all-zero prefixes are fine.
        let mut set = CpuSet::new();
        for (i, w) in words32.iter().enumerate() {
            if *w == 0 {
                continue;
            }
            if i * 32 > MAX_CPU {
                return Err(ParseError {
                    input: input.to_string(),
                    token: format!("{w:x}"),
                    reason: format!("sets a CPU above the limit of {MAX_CPU}"),
                });
            }
            let idx = i / 2;
            if idx >= set.words.len() {
                set.words.resize(idx + 1, 0);
            }
            set.words[idx] |= (*w as u64) << (32 * (i % 2));
        }
        set.trim();
        Ok(set)
    }

    /// Parses an hwloc bitmap string as found in lstopo XML: `0x000000ff`,
    /// `0x00000003,,0x0000f000` (an empty word is zero) and
    /// `0xf...f,0x00000003` (the leading `0xf...f` means every higher CPU is
    /// set — an infinite set). Infinite sets are cut at `infinite_limit`
    /// (exclusive): pass the number of CPUs the machine can have.
    pub fn parse_hwloc(text: &str, infinite_limit: usize) -> Result<CpuSet, ParseError> {
        let input = clean(text);
        let mut parts: Vec<&str> = input.split(',').collect();
        let infinite = parts.first().is_some_and(|p| p.trim() == "0xf...f");
        if infinite {
            parts.remove(0);
        }
        let mut words32 = Vec::with_capacity(parts.len());
        for part in parts.iter().rev() {
            let p = part.trim();
            if p.is_empty() {
                words32.push(0);
                continue;
            }
            let hex = p.strip_prefix("0x").unwrap_or(p);
            if hex.is_empty() || hex.len() > 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(ParseError {
                    input: input.to_string(),
                    token: p.to_string(),
                    reason: "is not an hwloc bitmap word (0x followed by up to 8 hex digits)"
                        .into(),
                });
            }
            words32.push(u32::from_str_radix(hex, 16).expect("validated hex"));
        }
        let mut set = Self::from_words32(&words32, &input)?;
        if infinite {
            let start = words32.len() * 32;
            set.insert_range(start, infinite_limit.min(MAX_CPU + 1).max(start));
        }
        Ok(set)
    }

    /// Formats as a kernel hex mask (`ff,00000000`); the empty set is `0`.
    pub fn to_mask_string(&self) -> String {
        let mut words32: Vec<u32> = Vec::new();
        for w in &self.words {
            words32.push(*w as u32);
            words32.push((*w >> 32) as u32);
        }
        while words32.len() > 1 && words32.last() == Some(&0) {
            words32.pop();
        }
        if words32.is_empty() {
            return "0".into();
        }
        let mut out = String::new();
        for (i, w) in words32.iter().rev().enumerate() {
            if i == 0 {
                out.push_str(&format!("{w:x}"));
            } else {
                out.push_str(&format!(",{w:08x}"));
            }
        }
        out
    }

    /// Formats as a compact cpulist (`0-3,8-11`); the empty set is `""`.
    pub fn to_list_string(&self) -> String {
        let mut out = String::new();
        for (lo, hi) in self.ranges() {
            if !out.is_empty() {
                out.push(',');
            }
            if lo == hi {
                out.push_str(&lo.to_string());
            } else {
                out.push_str(&format!("{lo}-{hi}"));
            }
        }
        out
    }

    /// Maximal runs of consecutive CPUs as inclusive `(first, last)` pairs.
    pub fn ranges(&self) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = Vec::new();
        for c in self.iter() {
            match out.last_mut() {
                Some((_, hi)) if *hi + 1 == c => *hi = c,
                _ => out.push((c, c)),
            }
        }
        out
    }
}

/// Strips whitespace and the trailing `\0` some sysfs dumps contain.
fn clean(text: &str) -> String {
    text.trim_matches(|c: char| c.is_whitespace() || c == '\0')
        .to_string()
}

fn parse_num(s: &str, token: &str, input: &str) -> Result<usize, ParseError> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ParseError {
            input: input.to_string(),
            token: token.to_string(),
            reason: format!("has '{s}', which is not a decimal number"),
        });
    }
    s.parse::<usize>()
        .ok()
        .filter(|n| *n <= MAX_CPU)
        .ok_or_else(|| ParseError {
            input: input.to_string(),
            token: token.to_string(),
            reason: format!("has a number above the limit of {MAX_CPU}"),
        })
}

/// Iterator over the CPUs of a [`CpuSet`], ascending.
pub struct Iter<'a> {
    words: &'a [u64],
    word: usize,
    bits: u64,
}

impl Iterator for Iter<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        loop {
            if self.bits != 0 {
                let b = self.bits.trailing_zeros() as usize;
                self.bits &= self.bits - 1;
                return Some(self.word * 64 + b);
            }
            self.word += 1;
            self.bits = *self.words.get(self.word)?;
        }
    }
}

impl<'a> IntoIterator for &'a CpuSet {
    type Item = usize;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> CpuSet {
        let mut s = CpuSet::new();
        for c in iter {
            s.insert(c);
        }
        s
    }
}

impl fmt::Display for CpuSet {
    /// The cpulist form, as `taskset -c` and sysfs print it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_list_string())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({})", self.to_list_string())
    }
}

impl std::str::FromStr for CpuSet {
    type Err = ParseError;
    /// Parses the cpulist form.
    fn from_str(s: &str) -> Result<CpuSet, ParseError> {
        CpuSet::parse_list(s)
    }
}

impl serde::Serialize for CpuSet {
    /// Serialized as a cpulist string, the form users read and paste.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_list_string())
    }
}

impl<'de> serde::Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CpuSet, D::Error> {
        let s = String::deserialize(d)?;
        CpuSet::parse_list(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    #[test]
    fn list_forms() {
        assert_eq!(l("0-3,8-11").to_list_string(), "0-3,8-11");
        assert_eq!(l("0-15:2").to_list_string(), "0,2,4,6,8,10,12,14");
        assert_eq!(l("0-15:2/4").to_list_string(), "0-1,4-5,8-9,12-13");
        assert_eq!(l("5").to_list_string(), "5");
        assert_eq!(l("").len(), 0);
        assert_eq!(l("0-3\n\0").len(), 4);
        assert_eq!(l("3,1,2").to_list_string(), "1-3");
        assert_eq!(l("0-2047").len(), 2048);
    }

    #[test]
    fn list_errors_name_the_token() {
        let e = CpuSet::parse_list("0-3,x,5").unwrap_err();
        assert_eq!(e.token, "x");
        assert!(e.to_string().contains("'x'"));
        assert_eq!(CpuSet::parse_list("4-2").unwrap_err().token, "4-2");
        for bad in ["0-3,,4", "0-8:0", "0-8:3/2", "99999999", "-1"] {
            assert!(CpuSet::parse_list(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn mask_forms() {
        assert_eq!(
            CpuSet::parse_mask("ff,00000000").unwrap().to_list_string(),
            "32-39"
        );
        assert_eq!(
            CpuSet::parse_mask("00000000,00000000,00000003\n\0")
                .unwrap()
                .to_list_string(),
            "0-1"
        );
        assert_eq!(l("32-39").to_mask_string(), "ff,00000000");
        assert_eq!(l("0-1").to_mask_string(), "3");
        assert_eq!(CpuSet::new().to_mask_string(), "0");
        for bad in ["zz", "", "123456789"] {
            assert!(CpuSet::parse_mask(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn hwloc_forms() {
        assert_eq!(
            CpuSet::parse_hwloc("0x000000ff", 64)
                .unwrap()
                .to_list_string(),
            "0-7"
        );
        assert_eq!(
            CpuSet::parse_hwloc("0x00000003,,0x0000f000", 128)
                .unwrap()
                .to_list_string(),
            "12-15,64-65"
        );
        assert_eq!(
            CpuSet::parse_hwloc("0xf...f,0x00000003", 40)
                .unwrap()
                .to_list_string(),
            "0-1,32-39"
        );
        assert_eq!(CpuSet::parse_hwloc("0x0", 8).unwrap().len(), 0);
    }

    #[test]
    fn set_algebra() {
        let a = l("0-7");
        let b = l("4-11");
        assert_eq!(a.union(&b), l("0-11"));
        assert_eq!(a.intersection(&b), l("4-7"));
        assert_eq!(a.difference(&b), l("0-3"));
        assert!(l("4-5").is_subset(&a));
        assert!(!b.is_subset(&a));
        assert!(a.intersects(&b));
        assert!(!l("0-3").intersects(&l("64-70")));
        assert_eq!(l("0-3").intersection(&l("64-70")), CpuSet::new());
        assert_eq!(l("100,3").first(), Some(3));
        assert_eq!(l("100,3").last(), Some(100));
        let mut s = l("64");
        s.remove(64);
        assert_eq!(s, CpuSet::new());
    }

    #[test]
    fn serde_roundtrip() {
        let s = l("0-3,9");
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(j, "\"0-3,9\"");
        let back: CpuSet = serde_json::from_str(&j).unwrap();
        assert_eq!(back, s);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn any_set() -> impl Strategy<Value = CpuSet> {
            proptest::collection::vec(0usize..3000, 0..200).prop_map(|v| v.into_iter().collect())
        }

        proptest! {
            #[test]
            fn list_roundtrip(s in any_set()) {
                prop_assert_eq!(CpuSet::parse_list(&s.to_list_string()).unwrap(), s);
            }

            #[test]
            fn mask_roundtrip(s in any_set()) {
                prop_assert_eq!(CpuSet::parse_mask(&s.to_mask_string()).unwrap(), s);
            }

            #[test]
            fn iter_sorted_and_counted(s in any_set()) {
                let v: Vec<usize> = s.iter().collect();
                prop_assert_eq!(v.len(), s.len());
                prop_assert!(v.windows(2).all(|w| w[0] < w[1]));
                for c in &v { prop_assert!(s.contains(*c)); }
            }

            #[test]
            fn algebra_laws(a in any_set(), b in any_set()) {
                let u = a.union(&b);
                let i = a.intersection(&b);
                prop_assert_eq!(u.len() + i.len(), a.len() + b.len());
                prop_assert!(i.is_subset(&a) && i.is_subset(&b));
                prop_assert_eq!(a.difference(&b).union(&i), a.clone());
            }

            #[test]
            fn parse_never_panics(s in "[0-9a-fx,:/ \\-]{0,40}") {
                let _ = CpuSet::parse_list(&s);
                let _ = CpuSet::parse_mask(&s);
                let _ = CpuSet::parse_hwloc(&s, 256);
            }

            #[test]
            fn stride_matches_filter(lo in 0usize..100, len in 0usize..100, step in 1usize..9) {
                let s = CpuSet::parse_list(&format!("{}-{}:{}", lo, lo + len, step)).unwrap();
                let want: CpuSet = (lo..=lo + len).step_by(step).collect();
                prop_assert_eq!(s, want);
            }
        }
    }
}
