//! Time as ckpt records it: unix nanoseconds in an `i64`.

/// The wall clock in unix ns (0 before the epoch; saturates in 2262).
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}
