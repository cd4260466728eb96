//! The skip list: which created threads are left unpinned (runtime helper
//! threads such as Intel OpenMP's monitor), likwid-pin's `-s` in both of
//! its spellings.
//!
//! Index 0 is the first thread the program *creates* (the main thread is
//! never skipped: it always holds place 0). Skipped threads take no place
//! and run on the plan's process-wide mask.

/// A skip list that cannot be read: the text as given, what is wrong
/// with it, and what a skip list looks like (a caller says first where
/// the text came from).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{text}': {problem} ({EXPECTED})")]
pub struct SkipError {
    /// The text as given.
    pub text: String,
    pub problem: SkipProblem,
}

/// What the two spellings of a skip list look like (for messages).
pub const EXPECTED: &str =
    "expected a hex mask of created-thread indices like 0x1, or a list like 0,2-3";

/// What is wrong with a skip list.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SkipProblem {
    /// `0x` alone.
    #[error("empty hex mask")]
    EmptyHex,
    /// A character of the hex mask that is not a hex digit.
    #[error("'{0}' is not a hex digit")]
    NotHexDigit(char),
    /// An index the shim cannot hold.
    #[error("index above 65535")]
    TooLarge,
    /// Not a list of indices.
    #[error("{}", .0.reason)]
    List(pinsight_cpuset::ParseError),
}

/// Parses `0x5` (hex mask: bit i = created thread i) or `0,2` / `1-3`
/// (list). Returns the indices ascending, deduplicated.
pub fn parse_skip(text: &str) -> Result<Vec<usize>, SkipError> {
    let t = text.trim();
    let bad = |problem: SkipProblem| SkipError {
        text: text.to_string(),
        problem,
    };
    if t.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        if hex.is_empty() {
            return Err(bad(SkipProblem::EmptyHex));
        }
        let mut out = Vec::new();
        for (pos, c) in hex.chars().rev().enumerate() {
            let v = c
                .to_digit(16)
                .ok_or_else(|| bad(SkipProblem::NotHexDigit(c)))? as usize;
            for b in 0..4 {
                if v & (1 << b) != 0 {
                    out.push(pos * 4 + b);
                }
            }
        }
        if out.last().is_some_and(|&m| m > 65535) {
            return Err(bad(SkipProblem::TooLarge));
        }
        return Ok(out);
    }
    let set = pinsight_cpuset::CpuSet::parse_list(t).map_err(|e| bad(SkipProblem::List(e)))?;
    if set.last().is_some_and(|m| m > 65535) {
        return Err(bad(SkipProblem::TooLarge));
    }
    Ok(set.iter().collect())
}

/// The place of created thread `index` (0 = first created), or `None` when
/// it is skipped: the main thread holds place 0, each non-skipped created
/// thread takes the next place, wrapping around. Must match `place_of` in
/// the C shim.
pub fn place_of(index: usize, skip: &[usize], nplaces: usize) -> Option<usize> {
    if nplaces == 0 || skip.contains(&index) {
        return None;
    }
    let skipped_before = skip.iter().filter(|&&s| s < index).count();
    Some((index - skipped_before + 1) % nplaces)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_list_spellings() {
        assert_eq!(parse_skip("0x1").unwrap(), vec![0]);
        assert_eq!(parse_skip("0x5").unwrap(), vec![0, 2]);
        assert_eq!(parse_skip("0x10").unwrap(), vec![4]);
        assert_eq!(parse_skip("1,3").unwrap(), vec![1, 3]);
        assert_eq!(parse_skip("0-2").unwrap(), vec![0, 1, 2]);
        assert_eq!(parse_skip("").unwrap(), Vec::<usize>::new());
    }

    #[test]
    fn bad_skip_names_input() {
        let e = parse_skip("0xg").unwrap_err();
        assert_eq!(e.problem, SkipProblem::NotHexDigit('g'));
        assert!(e.to_string().contains("'0xg'"), "{e}");
        let e = parse_skip("a,b").unwrap_err();
        assert!(matches!(e.problem, SkipProblem::List(_)), "{e:?}");
        assert_eq!(e.text, "a,b");
        assert_eq!(parse_skip("0x").unwrap_err().problem, SkipProblem::EmptyHex);
        assert_eq!(
            parse_skip("70000").unwrap_err().problem,
            SkipProblem::TooLarge
        );
    }

    #[test]
    fn places_follow_creation_order_and_skip() {
        // 3 places: main = 0, created 0 -> 1, created 1 -> 2, created 2 -> wraps to 0.
        assert_eq!(
            (0..3).map(|i| place_of(i, &[], 3)).collect::<Vec<_>>(),
            vec![Some(1), Some(2), Some(0)]
        );
        // skipping created thread 0 (a helper) shifts the rest.
        assert_eq!(
            (0..3).map(|i| place_of(i, &[0], 3)).collect::<Vec<_>>(),
            vec![None, Some(1), Some(2)]
        );
        assert_eq!(place_of(0, &[], 0), None);
    }
}
