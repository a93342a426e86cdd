//! The Python-compatible serializer against strings produced by Python itself
//! (`tests/fixtures/pyjson/cases.json`, made by `make_cases.py` there): `json.dumps` with
//! `sort_keys=True` compact and with `indent=1`, and `repr(float)` for hundreds of floats.

mod common;

use commlens::pyjson::{dumps, dumps_indented, float_repr};
use commlens::PyValue;
use std::path::PathBuf;

#[test]
fn serializer_writes_what_python_writes() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pyjson/cases.json");
    let cases = common::json(&path);
    let cases = cases.as_array().expect("a list of cases");
    assert!(cases.len() > 500);
    let mut failures = Vec::new();
    for case in cases {
        let value = PyValue::from_plain_json(&case["value"]);
        let compact = dumps(&value);
        if compact != case["dumps"].as_str().unwrap() {
            failures.push(format!("dumps: {compact} != {}", case["dumps"]));
        }
        let indented = dumps_indented(&value);
        if indented != case["dumps_indent1"].as_str().unwrap() {
            failures.push(format!("indent=1: {indented} != {}", case["dumps_indent1"]));
        }
        if let (PyValue::Float(f), Some(repr)) = (&value, case["repr"].as_str()) {
            if float_repr(*f) != repr {
                failures.push(format!("repr: {} != {repr}", float_repr(*f)));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
