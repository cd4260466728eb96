//! The one progress interface, [`Progress`] (with [`Silent`]), under the
//! name the measuring crates use: defined in `pinsight_sys::progress` so
//! that the layers below this one (topology's `snapshot`, the workloads)
//! report through the same trait.

pub use pinsight_sys::progress::{Progress, Silent};
