//! Benchmarks and load generators.
//!
//! Criterion benches of the kernels (batching, CSV encoding, resampling) and
//! load-generator binaries for the end-to-end paths live here, each compared
//! side by side with a named peer in the same run; results and the commands
//! to reproduce them are recorded in `BENCHMARKS.md`.
