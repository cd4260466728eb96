//! The views of placement and of moving running work: `run --report`'s
//! lines and its `--json` document ([`run`], [`run_json`]), `pin`'s table
//! ([`pin`]), the rank reports gathered and a node's slicing ([`gather`]),
//! and `balance`'s selection, moves, watch and restore ([`balance`]).

pub mod balance;
pub mod gather;
pub mod pin;
pub mod run;
pub mod run_json;
