//! The integration tests of pinsight-load, one binary.
mod parsers;
