//! The views of scheduling: `pinsight simulate`'s tables and verdict
//! ([`simulate`], whose program table and verdict `mix` shows too) and
//! `pinsight sf`'s report of per-thread speedup factors ([`sf`]).

pub mod sf;
pub mod simulate;
