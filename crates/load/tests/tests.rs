//! The integration tests of pinsight-load, one binary.
mod irq;
mod load_view;
mod parsers;
