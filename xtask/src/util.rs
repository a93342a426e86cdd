//! Paths, processes, errors and timing shared by the commands.

use std::ffi::OsStr;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub enum Fail {
    Usage(String),
    Error(String),
}

impl Fail {
    pub fn usage(m: impl Into<String>) -> Self {
        Fail::Usage(m.into())
    }
    pub fn msg(m: impl Into<String>) -> Self {
        Fail::Error(m.into())
    }
    pub fn err(e: impl Display) -> Self {
        Fail::Error(e.to_string())
    }
}

pub type Res<T> = Result<T, Fail>;

/// `.ctx("doing what")` on any result whose error prints.
pub trait Ctx<T> {
    fn ctx(self, what: impl Display) -> Res<T>;
}

impl<T, E: Display> Ctx<T> for Result<T, E> {
    fn ctx(self, what: impl Display) -> Res<T> {
        self.map_err(|e| Fail::Error(format!("{what}: {e:#}")))
    }
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the repo")
        .to_path_buf()
}

pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => repo_root().join(d),
        _ => repo_root().join("target"),
    }
}

/// The shared corpus folder: $COMMLENS_SHARED, else <repo>/../shared.
pub fn shared_dir() -> PathBuf {
    let dir = match std::env::var_os("COMMLENS_SHARED") {
        Some(d) if !d.is_empty() => std::env::current_dir()
            .unwrap_or_else(|_| repo_root())
            .join(d),
        _ => repo_root().join("..").join("shared"),
    };
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

pub fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(repo_root());
    c
}

pub fn cmd(program: impl AsRef<OsStr>) -> Command {
    let mut c = Command::new(program);
    c.current_dir(repo_root());
    c
}

/// Runs a command with inherited stdio, echoing it first; fails on a non-zero exit.
pub fn run(c: &mut Command) -> Res<()> {
    let code = run_code(c)?;
    if code == 0 {
        Ok(())
    } else {
        Err(Fail::msg(format!("`{}` failed (exit {code})", show(c))))
    }
}

/// Runs a command with inherited stdio, echoing it first; returns its exit code.
pub fn run_code(c: &mut Command) -> Res<i32> {
    println!("$ {}", show(c));
    let status = c.status().ctx(format!("cannot run `{}`", show(c)))?;
    Ok(status.code().unwrap_or(-1))
}

/// Runs a command quietly and says whether it exited 0.
pub fn succeeds(c: &mut Command) -> bool {
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

pub fn show(c: &Command) -> String {
    let mut s = c.get_program().to_string_lossy().into_owned();
    if let Some(name) = Path::new(&s).file_name() {
        s = name.to_string_lossy().into_owned();
    }
    for a in c.get_args() {
        let a = a.to_string_lossy();
        if a.is_empty() || a.contains(' ') {
            s.push_str(&format!(" '{a}'"));
        } else {
            s.push(' ');
            s.push_str(&a);
        }
    }
    s
}

pub fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

pub fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        format!("{}m{:02}s", (s / 60.0) as u64, (s as u64) % 60)
    }
}

pub fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed())
}

/// The paths in `dir`, sorted.
pub fn sorted_entries(dir: &Path) -> Res<Vec<PathBuf>> {
    let mut paths = std::fs::read_dir(dir)
        .ctx(format!("read {}", dir.display()))?
        .map(|entry| {
            entry
                .map(|e| e.path())
                .ctx(format!("read {}", dir.display()))
        })
        .collect::<Res<Vec<PathBuf>>>()?;
    paths.sort();
    Ok(paths)
}

pub fn copy_dir(from: &Path, to: &Path) -> Res<u64> {
    std::fs::create_dir_all(to).ctx(format!("create {}", to.display()))?;
    let mut n = 0;
    for entry in std::fs::read_dir(from).ctx(format!("read {}", from.display()))? {
        let entry = entry.ctx(format!("read {}", from.display()))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry
            .file_type()
            .ctx(format!("stat {}", src.display()))?
            .is_dir()
        {
            n += copy_dir(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).ctx(format!(
                "copy {} to {}",
                src.display(),
                dst.display()
            ))?;
            n += 1;
        }
    }
    Ok(n)
}

pub fn remove_dir(p: &Path) -> Res<()> {
    match std::fs::remove_dir_all(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Fail::msg(format!("remove {}: {e}", p.display()))),
    }
}

/// A stable content hash (FNV-1a 64) for install stamps.
pub fn fnv(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for part in parts {
        for b in part.iter().chain(b"\0") {
            h ^= *b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
    }
    format!("{h:016x}")
}

pub fn human_bytes(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{:.2} MiB", n as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.1} KiB", n as f64 / 1024.0)
    }
}

/// Moves the folder `staging` to `dest`, replacing what was there, with a window as short as
/// two renames. Several xtask runs share target/ (developers build concurrently), so each one
/// stages into its own folder and the last swap wins instead of one deleting another's files.
pub fn replace_dir(staging: &Path, dest: &Path) -> Res<()> {
    let old = dest.with_extension(format!("old.{}", std::process::id()));
    for attempt in 0.. {
        let _ = std::fs::rename(dest, &old);
        match std::fs::rename(staging, dest) {
            Ok(()) => break,
            Err(e) if attempt >= 5 => {
                return Err(Fail::msg(format!(
                    "move {} to {}: {e}",
                    staging.display(),
                    dest.display()
                )))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    remove_dir(&old)
}

/// A folder name unique to this process, beside `dir`: `<dir>.<tag>.<pid>`.
pub fn private_dir(dir: &Path, tag: &str) -> PathBuf {
    dir.with_extension(format!("{tag}.{}", std::process::id()))
}
