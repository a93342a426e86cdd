//! Hostile inputs through the CLI (issue 13): every subcommand ends a bad input with a clear
//! message and exit 1 (2 for usage) in bounded time and memory; none panics (101) or aborts
//! (134).

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_commlens"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run commlens")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn fixture() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/identity/fsdp_tp_annotated.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A scratch directory for one test, removed when the test ends (passing or not).
fn scratch(test: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("commlens-hostile-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_string_lossy().into_owned()
}

/// The fixture with its first all-gather renamed (references included).
fn renamed(new: &str) -> Vec<u8> {
    let text = serde_json::to_string(&fixture()).unwrap();
    let quoted = serde_json::to_string(new).unwrap();
    text.replace("\"all_gather_into_tensor\"", &quoted)
        .into_bytes()
}

fn assert_failed_cleanly(out: &Output, what: &str) -> String {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{what}: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    err
}

#[test]
fn roles_text_with_a_65536_character_name_exits_0() {
    let dir = scratch("roles");
    let dump = write(&dir, "long.json", &renamed(&"n".repeat(65_536)));
    let out = run(&["roles", &dump]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn dev_zero_and_dev_urandom_stop_at_the_input_limit() {
    for device in ["/dev/zero", "/dev/urandom"] {
        if !Path::new(device).exists() {
            continue;
        }
        for command in ["plan", "roles", "render", "cost", "graphs"] {
            let start = Instant::now();
            let out = run(&[command, device, "--max-input-mb", "4"]);
            let err = assert_failed_cleanly(&out, &format!("{command} {device}"));
            assert!(
                err.contains("more than the input-size limit of 4.0 MiB"),
                "{command} {device}: {err}"
            );
            assert!(start.elapsed() < Duration::from_secs(20));
        }
    }
}

#[test]
fn max_input_mb_is_on_every_command_and_checked() {
    let dir = scratch("flag");
    let dump = write(&dir, "dump.json", &serde_json::to_vec(&fixture()).unwrap());
    let big = serde_json::to_vec_pretty(&json!({"pad": "x".repeat(2 << 20)})).unwrap();
    let big = write(&dir, "big.json", &big);
    for args in [
        vec!["plan", big.as_str()],
        vec!["roles", big.as_str()],
        vec!["audit", dump.as_str(), big.as_str()],
        vec!["diff", dump.as_str(), big.as_str()],
        vec!["render", big.as_str()],
        vec!["graphs", big.as_str()],
        vec!["cost", big.as_str()],
        vec!["validate", "--group", "fsdp", "--rank", &format!("0={big}")],
    ] {
        let mut with_flag = args.clone();
        with_flag.extend(["--max-input-mb", "1"]);
        let out = run(&with_flag);
        let err = assert_failed_cleanly(&out, &args.join(" "));
        assert!(
            err.contains("(2.0 MiB)") || err.contains("is 2.0 MiB"),
            "{}: {err}",
            args.join(" ")
        );
        assert!(err.contains("input-size limit of 1.0 MiB"), "{err}");
    }
    let out = run(&["plan", &dump, "--max-input-mb", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let help = text(&run(&["plan", "--help"]).stdout);
    assert!(help.contains("--max-input-mb <MB>"), "{help}");
}

#[test]
fn gzip_bomb_stops_at_the_limit() {
    use std::io::Write;
    let dir = scratch("bomb");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    for _ in 0..64 {
        e.write_all(&vec![b' '; 1 << 20]).unwrap();
    }
    let bomb = write(&dir, "bomb.json.gz", &e.finish().unwrap());
    let out = run(&["plan", &bomb, "--max-input-mb", "16"]);
    let err = assert_failed_cleanly(&out, "bomb");
    assert!(
        err.contains("decompresses to more than the input-size limit of 16.0 MiB"),
        "{err}"
    );
}

#[test]
fn text_outputs_escape_terminal_controls() {
    let dir = scratch("esc");
    let dump = write(&dir, "esc.json", &renamed("ag\u{1b}[2J\u{7}"));
    for args in [
        vec!["roles", dump.as_str()],
        vec!["plan", dump.as_str(), "--format", "text", "--tags", "roles"],
        vec!["audit", dump.as_str(), dump.as_str()],
        vec!["diff", dump.as_str(), dump.as_str(), "--tags", "roles"],
        vec!["cost", dump.as_str(), "--tags", "roles"],
        vec!["graphs", dump.as_str()],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let all = [out.stdout, out.stderr].concat();
        assert!(
            !all.contains(&0x1b) && !all.contains(&0x07),
            "{}: {}",
            args.join(" "),
            text(&all)
        );
    }
}

#[test]
fn huge_names_are_clipped_in_messages() {
    let dir = scratch("clip");
    let mut dump = fixture();
    dump["nodes"][4]["op"] = json!("o".repeat(1 << 20));
    let path = write(&dir, "op.json", &serde_json::to_vec(&dump).unwrap());
    let out = run(&["plan", &path]);
    let err = assert_failed_cleanly(&out, "op");
    assert!(
        err.len() < 2_000 && err.contains("characters]"),
        "{} bytes",
        err.len()
    );
}

#[test]
fn render_options_are_checked() {
    let dir = scratch("render");
    let dump = write(&dir, "dump.json", &serde_json::to_vec(&fixture()).unwrap());
    let out = run(&["render", &dump, "--from", "30", "--to", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    for width in ["0", "18446744073709551616"] {
        let out = run(&["render", &dump, "--width", width]);
        assert_eq!(out.status.code(), Some(2), "--width {width}");
    }
    let help = text(&run(&["render", "--help"]).stdout);
    for option in ["--width", "--from", "--to", "--trace", "-o, --out"] {
        assert!(help.contains(option), "{option} missing from\n{help}");
    }
}

// Finding 3: running out of memory aborted (SIGABRT, exit 134). Under an address-space cap
// smaller than a (valid) input needs, the command now exits 1 with a message.
#[cfg(target_os = "linux")]
#[test]
fn out_of_memory_is_exit_1_with_a_message_not_an_abort() {
    use std::os::unix::process::CommandExt;
    let dir = scratch("oom");
    let dump = write(&dir, "dump.json", &serde_json::to_vec(&fixture()).unwrap());
    let ranks: Vec<u64> = (0..3_000_000).collect();
    let args = json!({"group_ranks": {"fsdp": [0, 1], "unused": ranks}});
    let args = write(&dir, "args.json", &serde_json::to_vec(&args).unwrap());
    let mut command = bin();
    command.args(["plan", &dump, "--args", &args]);
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        command.pre_exec(|| {
            let cap = libc::rlimit {
                rlim_cur: 300 << 20,
                rlim_max: 300 << 20,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &cap) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = command.output().expect("run commlens");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("out of memory"), "{err}");
}

#[test]
fn reader_notes_are_escaped_and_counted() {
    let dir = scratch("notes");
    let mut dump = fixture();
    for i in 0..30 {
        dump["nodes"][4]["meta"][format!("ref{i}")] = json!({"node": format!("gone\u{1b}{i}")});
    }
    let path = write(&dir, "notes.json", &serde_json::to_vec(&dump).unwrap());
    let out = run(&["roles", &path]);
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(!err.contains('\u{1b}'), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.contains("refers to node")).count(),
        20,
        "{err}"
    );
    assert!(err.contains("and 10 more notes"), "{err}");
}
