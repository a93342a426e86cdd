#![no_main]
//! `cost`: see `tests/fuzz/targets.rs`, shared with the native replay of kept inputs.

#[path = "../../tests/fuzz/targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::cost(data));
