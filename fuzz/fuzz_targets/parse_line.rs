//! Fuzzes the socket line parser and the tool input's validation (docs/contract.md, "Tool input"): any bytes must give an operation or a
//! structured INVALID_REQUEST error, never a panic. Run with:
//! `cargo +nightly fuzz run parse_line -- -max_total_time=600` (see docs/reliability.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(bad) = askrelay::protocol::parse_line(data, 10) {
        assert_eq!(bad.error.code.as_str(), "INVALID_REQUEST");
    }
});
