//! `cargo xtask cli`: the release CLI built with profile-guided optimisation.
//!
//! The CLI's cost on a large dump is its reader, which waits on branches and memory rather
//! than on arithmetic; told which branches are taken and which functions are hot, the compiler
//! lays the reader out for the common case. The profile is made here, from the source being
//! built, so it cannot go stale: an instrumented CLI reads synthetic dumps of every layout the
//! reader has a path for (`examples/synth_dump.rs`: gzipped, plain, one line, stack traces, no
//! `repr`s) and the bundled examples (a dump traced by torch, a TORCH_TRACE log) through every
//! command, then the CLI is built again with what it recorded. At 500k and 1M nodes this took 8-12% off `plan`,
//! `render` and `roles --json` (docs/performance.md, twenty-ninth session).
//!
//! Needs rustup's `llvm-tools` component (installed here when missing) for `llvm-profdata`;
//! without it the CLI is built as `cargo build --release` builds it, and the run says so.

use crate::util::{self, Fail, Res};
use std::path::{Path, PathBuf};

/// Nodes in each training dump: large enough that reading dominates, as on the dumps the
/// optimisation is for, small enough that the instrumented runs take seconds.
const TRAINING_NODES: &str = "100000";

/// The layouts the training dumps are written in (`synth_dump`'s shape argument, and the
/// file's name): each takes a different path through the reader.
const TRAINING_SHAPES: [(&str, &str); 5] = [
    ("synthetic.json.gz", ""),
    ("lean.json", "lean"),
    ("lean-one-line.json", "lean-one-line"),
    ("traced.json", "traced"),
    ("lean-no-repr.json", "lean-no-repr"),
];

/// Builds the release CLI with profile-guided optimisation (or, when the profile tools are
/// missing, without it) and returns the binary's path: `<target>/cli/commlens`.
pub fn build(target: &Path) -> Res<PathBuf> {
    let dir = target.join("pgo");
    let out_dir = target.join("cli");
    std::fs::create_dir_all(&out_dir).map_err(Fail::err)?;
    let out = out_dir.join(exe("commlens"));
    let built = match profile_tools() {
        Ok(tools) => build_guided(&dir, &tools)?,
        Err(why) => {
            println!("cli: built without profile guidance: {why}");
            util::run(util::cargo().args(["build", "--release", "-p", "commlens-cli"]))?;
            target.join("release").join(exe("commlens"))
        }
    };
    // Copied beside it, then renamed over it: a CLI still running keeps its old file, where
    // writing into the file it runs from fails ("text file busy").
    let staged = out_dir.join(format!(".{}.new", exe("commlens")));
    std::fs::copy(&built, &staged)
        .and_then(|_| std::fs::rename(&staged, &out))
        .map_err(|e| Fail::msg(format!("{}: {e}", out.display())))?;
    println!("cli: {}", out.display());
    Ok(out)
}

/// What a profile-guided build needs from the toolchain.
struct ProfileTools {
    /// The host's target triple: building for it by name keeps the profile flags off build
    /// scripts and proc macros, which would otherwise write profiles of the compiler's work.
    host: String,
    profdata: PathBuf,
}

fn profile_tools() -> Result<ProfileTools, String> {
    let version = rustc_output(&["-vV"])?;
    let host = version
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .ok_or("`rustc -vV` names no host")?
        .trim()
        .to_string();
    let sysroot = rustc_output(&["--print", "sysroot"])?;
    let profdata = Path::new(sysroot.trim())
        .join("lib/rustlib")
        .join(&host)
        .join("bin")
        .join(exe("llvm-profdata"));
    if !profdata.is_file() {
        let added = util::succeeds(util::cmd("rustup").args(["component", "add", "llvm-tools"]));
        if !added || !profdata.is_file() {
            return Err(format!(
                "no {} (`rustup component add llvm-tools` installs it)",
                profdata.display()
            ));
        }
    }
    Ok(ProfileTools { host, profdata })
}

fn rustc_output(args: &[&str]) -> Result<String, String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = util::cmd(&rustc)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run rustc: {e}"))?;
    if !output.status.success() {
        return Err(format!("`rustc {}` failed", args.join(" ")));
    }
    String::from_utf8(output.stdout).map_err(|_| "rustc printed non-UTF-8".into())
}

/// Instrumented build, training runs, merged profile, optimised build; returns the binary.
fn build_guided(dir: &Path, tools: &ProfileTools) -> Res<PathBuf> {
    let raw = dir.join("raw");
    if raw.exists() {
        util::remove_dir(&raw)?;
    }
    std::fs::create_dir_all(&raw).map_err(Fail::err)?;
    let instrumented = cargo_build(
        dir,
        "instrumented",
        tools,
        &format!("-Cprofile-generate={}", raw.display()),
    )?;
    train(dir, &instrumented)?;
    let profile = dir.join("commlens.profdata");
    util::run(
        util::cmd(&tools.profdata)
            .args(["merge", "-o"])
            .arg(&profile)
            .arg(&raw),
    )?;
    cargo_build(
        dir,
        "optimised",
        tools,
        &format!("-Cprofile-use={}", profile.display()),
    )
}

/// `cargo build --release -p commlens-cli` for the host by name, into `dir/<name>`, with
/// `flags`; returns the binary.
fn cargo_build(dir: &Path, name: &str, tools: &ProfileTools, flags: &str) -> Res<PathBuf> {
    let target_dir = dir.join(name);
    util::run(
        util::cargo()
            .args([
                "build",
                "--release",
                "-p",
                "commlens-cli",
                "--target",
                &tools.host,
            ])
            .arg("--target-dir")
            .arg(&target_dir)
            // One flag, which may hold a space (the folder's path): the encoded form, which
            // cargo does not split on whitespace, and which takes precedence over RUSTFLAGS.
            .env("CARGO_ENCODED_RUSTFLAGS", flags),
    )?;
    Ok(target_dir
        .join(&tools.host)
        .join("release")
        .join(exe("commlens")))
}

/// Runs the instrumented CLI over the training dumps (made once, kept in `dir/train`) and the
/// bundled examples, through every command that reads a dump.
fn train(dir: &Path, cli: &Path) -> Res<()> {
    let data = dir.join("train");
    std::fs::create_dir_all(&data).map_err(Fail::err)?;
    let mut dumps = Vec::new();
    for (file, shape) in TRAINING_SHAPES {
        let path = data.join(file);
        if !path.is_file() {
            let mut synth = util::cargo();
            synth
                .args([
                    "run",
                    "--release",
                    "--example",
                    "synth_dump",
                    "--",
                    TRAINING_NODES,
                ])
                .arg(&path);
            if !shape.is_empty() {
                synth.arg(shape);
            }
            util::run(&mut synth)?;
        }
        dumps.push(path);
    }
    let examples = util::repo_root().join("examples");
    dumps.push(examples.join("llama_fsdp.json.gz"));
    dumps.push(examples.join("mlp_fsdp.json"));
    let trace_log = examples.join("simple_fsdp_trace.log.gz");
    let sink = data.join("out");
    // Each run: a command, its input, then its options.
    let mut runs: Vec<(&str, Vec<&std::ffi::OsStr>)> = Vec::new();
    for dump in &dumps {
        let dump = dump.as_os_str();
        for (command, options) in [
            ("plan", &[][..]),
            ("plan", &["--format", "text"]),
            ("plan", &["--tags", "roles"]),
            ("roles", &["--json"]),
            ("roles", &[]),
            ("render", &[]),
            ("cost", &[]),
            ("cost", &["--json"]),
        ] {
            let mut args = vec![dump];
            args.extend(options.iter().map(std::ffi::OsStr::new));
            runs.push((command, args));
        }
        runs.push(("diff", vec![dump, dump]));
        runs.push(("audit", vec![dump, dump]));
    }
    let log = trace_log.as_os_str();
    runs.push(("graphs", vec![log]));
    for command in ["plan", "roles", "render"] {
        runs.push((command, vec![log, "--graph".as_ref(), "0".as_ref()]));
    }
    for (command, args) in runs {
        let output = std::fs::File::create(&sink).map_err(Fail::err)?;
        // Its notes (the examples' missing group ranks and tags) are the examples', not news.
        let run = util::cmd(cli)
            .arg(command)
            .args(&args)
            .stdout(output)
            .output()
            .map_err(|e| Fail::msg(format!("cannot run {}: {e}", cli.display())))?;
        if !run.status.success() {
            return Err(Fail::msg(format!(
                "training run `commlens {command} {}` failed ({}): {}",
                args.iter()
                    .map(|a| a.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(" "),
                run.status,
                String::from_utf8_lossy(&run.stderr).trim()
            )));
        }
    }
    std::fs::remove_file(&sink).map_err(Fail::err)
}

fn exe(name: &str) -> String {
    format!("{name}{}", std::env::consts::EXE_SUFFIX)
}
