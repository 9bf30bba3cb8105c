//! Pure, vectorized resampling of telemetry series onto a uniform time grid.
//!
//! This crate will own the kernels behind `/eco_fleet/v1/trackers/{id}/resampling`:
//! `FOLLOWING`, `PREVIOUS`, `AVERAGE`, `MEDIAN_IN_WINDOW` and
//! `AVERAGE_IN_WINDOW`, each a linear pass over sorted timestamps and values,
//! and calibration of raw fuel inputs into litres.
//!
//! It does no I/O and nothing async: callers hand it Arrow arrays.
