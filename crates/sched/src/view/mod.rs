//! The views of scheduling: `pinsight simulate`'s tables and verdict
//! ([`simulate`], whose program table and verdict `mix` shows too),
//! `pinsight sf`'s report of per-thread speedup factors ([`sf`]), and the
//! live scheduler's and `mix`'s reports and exports ([`mix`]).

pub mod mix;
pub mod sf;
pub mod simulate;
