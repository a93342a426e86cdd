//! `cargo xtask`: build, serve, package and test commlens. Run `cargo xtask --help`.
//!
//! Dependency-light on purpose: std, `wasm-bindgen-cli-support` (the bindgen step, pinned to
//! the workspace's `wasm-bindgen` version) and `flate2` (to report the gzipped wasm size).

mod cli;
mod fuzz;
mod serve;
mod site;
mod test;
mod util;

use std::process::ExitCode;

use util::{Fail, Res};

const USAGE: &str = "\
cargo xtask: build, serve, package and test commlens

usage: cargo xtask <command> [options]

commands:
  build    build the web app (wasm32, `wasm` profile: release, size-optimised) into target/site/
  serve    build, then serve target/site on http://127.0.0.1:PORT/
  dist     build, then copy the self-contained static site to a folder
  cli      build the release CLI with profile-guided optimisation into target/cli/commlens
  test     the full test suite (the README's test command; installs what it needs)
  fuzz     coverage-guided fuzzing of the core (cargo-fuzz, nightly): `fuzz [TARGET] [--time S]`
  help     this text; `cargo xtask <command> --help` for a command's options";

const BUILD_HELP: &str = "\
cargo xtask build [--no-opt]

Builds the `commlens-www` app for wasm32-unknown-unknown with the `wasm` profile (together with the core and
commlens-wasm: the same cargo selection as `cargo xtask test`, so the two share artifacts), runs
wasm-bindgen (target `web`) and writes target/site/:
  index.html           from the repo's index.html (must load ./commlens_www.js relatively)
  commlens_www.js      the bindings; commlens_www_bg.wasm, the app
  <www/static/*>       static assets, copied as-is when www/static/ exists
  examples/*           the built-in examples from examples/, copied as-is
  docs/exporter.md     python/README.md; docs/app.md, www/README.md (the first screen links them)
Runs `wasm-opt -Oz` when wasm-opt is on PATH (skip with --no-opt) and reports the gzipped
wasm size. Fails when index.html uses absolute or off-site URLs (the site must work from any
sub-path of a static host).";

const SERVE_HELP: &str = "\
cargo xtask serve [--port PORT] [--base /PATH/] [--no-build]

Builds the site (like `cargo xtask build`), then serves target/site on 127.0.0.1 and prints the
URL. Default port 8080 (0 picks a free one). --base serves the site under a sub-path (e.g.
--base /some/path/) to check that it works from a sub-path like on a static host.
Every response has `Cache-Control: no-store`; .wasm is served as application/wasm. Ctrl-C stops.";

const DIST_HELP: &str = "\
cargo xtask dist [--out DIR] [--no-opt]

Builds the site and copies it to DIR (default: dist/ in the repo): a self-contained static folder
with relative URLs only (no CDN), to upload to any static host, at its root or under a sub-path.
An existing DIR is replaced only when it is empty or holds a previous dist.";

const CLI_HELP: &str = "\
cargo xtask cli

Builds the release CLI (commlens-cli) with profile-guided optimisation and copies it to
target/cli/commlens: an instrumented build reads synthetic 100k-node dumps of each layout the
reader has a path for (gzipped, plain, one line, stack traces; made once under target/pgo/train/)
and the bundled examples through every command, then the CLI is built again with the profile
it recorded (8-12% faster on large dumps). Installs rustup's llvm-tools component when
missing; without it, builds as `cargo build --release -p commlens-cli` does and says so.";

const TEST_HELP: &str = "\
cargo xtask test [--skip-lint] [--skip-native] [--skip-wasm] [--skip-python] [--skip-browser]
                 [--skip-fuzz] [--keep-going]

The project's test command. On a fresh machine it installs what it needs (idempotent, fast when
already installed). Steps, each with a header and its duration; the run stops at the first
failing step (unless --keep-going) and exits non-zero:
  1 lint        cargo fmt --all --check; cargo clippy --workspace --all-targets -- -D warnings
  2 toolchain   rustup target add wasm32-unknown-unknown
  3 native      cargo test --workspace (includes tests/fuzz_regressions.rs: every kept fuzz input)
  4 wasm-core   cargo clippy --target wasm32-unknown-unknown (the same three packages, -D warnings:
                the wasm-only code), then cargo build --profile wasm --target
                wasm32-unknown-unknown -p commlens -p commlens-wasm -p commlens-www  (the core
                must build for wasm32; one selection shared with wasm-conf, browser and
                `xtask build`, so it compiles once)
  5 wasm-conf   builds commlens-wasm for wasm32, binds it for Node into target/wasm-node/, runs
                node tests/wasm/conformance.mjs: every case of $COMMLENS_SHARED/conformance/cases
                through the wasm build and the native CLI (byte-identical) and against plan.json;
                then node tests/wasm/diff.mjs: plan diffs byte-identical to `commlens diff`, and
                the diff of two 100k-node plans timed in wasm (budget 200 ms)
  6 scale       builds the release CLI profile-guided (`cargo xtask cli`) and checks that it
                writes what the debug CLI writes (plan, roles --json, render of every
                conformance case), makes a synthetic 1M-node dump once (target/scale/), runs
                plan, roles --json and render of that CLI on it, each under a 4 GiB
                address-space limit (ulimit -v): each must succeed (issues 13 and 14)
  7 python      creates/reuses the venv ($COMMLENS_VENV, default ~/.cache/commlens/venv),
                installs python/requirements-test.txt and python/ (editable), runs
                pytest python/tests with COMMLENS_BIN and COMMLENS_SHARED
  8 browser     installs chromium (apt) when /usr/bin/chromium is missing, npm ci in tests/e2e,
                builds the site, serves it under a sub-path on a free 127.0.0.1 port and runs
                node --test tests/e2e/ with COMMLENS_URL; screenshots go to target/artifacts/
  9 fuzz        every fuzz target for 9 s (90 s in all) after one `cargo fuzz build`;
                installs cargo-fuzz when missing, skipped with a message without nightly
The shared corpus is $COMMLENS_SHARED, else <repo>/../shared.
The --skip-* flags are for developers; the default (and CI) runs everything.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, rest) = match args.split_first() {
        Some((c, r)) => (c.as_str(), r),
        None => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let help = rest.iter().any(|a| a == "-h" || a == "--help");
    let result = match command {
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            Ok(())
        }
        "build" if help => print(BUILD_HELP),
        "serve" if help => print(SERVE_HELP),
        "dist" if help => print(DIST_HELP),
        "test" if help => print(TEST_HELP),
        "cli" if help => print(CLI_HELP),
        "fuzz" if help => print(fuzz::HELP),
        "build" => cmd_build(rest),
        "serve" => cmd_serve(rest),
        "dist" => cmd_dist(rest),
        "test" => test::run(rest),
        "cli" => Opts::new(rest)
            .finish()
            .and_then(|()| cli::build(&util::target_dir()))
            .map(|_| ()),
        "fuzz" => fuzz::cmd(rest),
        other => Err(Fail::usage(format!("unknown command {other:?}"))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail::Usage(message)) => {
            eprintln!("xtask: {message}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Fail::Error(message)) => {
            eprintln!("xtask: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn print(text: &str) -> Res<()> {
    println!("{text}");
    Ok(())
}

/// A tiny option parser: `--flag` and `--key VALUE` / `--key=VALUE`.
pub struct Opts {
    args: Vec<String>,
}

impl Opts {
    pub fn new(args: &[String]) -> Self {
        Opts {
            args: args.to_vec(),
        }
    }

    pub fn flag(&mut self, name: &str) -> bool {
        let before = self.args.len();
        self.args.retain(|a| a != name);
        self.args.len() != before
    }

    pub fn value(&mut self, name: &str) -> Res<Option<String>> {
        let prefix = format!("{name}=");
        if let Some(i) = self.args.iter().position(|a| a.starts_with(&prefix)) {
            let a = self.args.remove(i);
            return Ok(Some(a[prefix.len()..].to_string()));
        }
        if let Some(i) = self.args.iter().position(|a| a == name) {
            if i + 1 >= self.args.len() {
                return Err(Fail::usage(format!("{name} needs a value")));
            }
            let v = self.args.remove(i + 1);
            self.args.remove(i);
            return Ok(Some(v));
        }
        Ok(None)
    }

    /// The arguments left, which must not be options.
    pub fn positional(self) -> Res<Vec<String>> {
        match self.args.iter().find(|a| a.starts_with('-')) {
            Some(a) => Err(Fail::usage(format!("unexpected option {a:?}"))),
            None => Ok(self.args),
        }
    }

    pub fn finish(self) -> Res<()> {
        match self.args.first() {
            Some(a) => Err(Fail::usage(format!("unexpected argument {a:?}"))),
            None => Ok(()),
        }
    }
}

fn cmd_build(args: &[String]) -> Res<()> {
    let mut o = Opts::new(args);
    let opt = !o.flag("--no-opt");
    o.finish()?;
    site::build(opt).map(|_| ())
}

fn cmd_serve(args: &[String]) -> Res<()> {
    let mut o = Opts::new(args);
    let port: u16 = match o.value("--port")? {
        Some(p) => p
            .parse()
            .map_err(|_| Fail::usage(format!("bad port {p:?}")))?,
        None => 8080,
    };
    let base = o.value("--base")?.unwrap_or_else(|| "/".to_string());
    let no_build = o.flag("--no-build");
    o.finish()?;
    let site_dir = if no_build {
        util::target_dir().join("site")
    } else {
        site::build(true)?
    };
    let server = serve::Server::bind(&site_dir, port, &base)?;
    println!("serving {} at {}", site_dir.display(), server.url());
    println!("(Ctrl-C to stop)");
    server.run_forever();
    Ok(())
}

fn cmd_dist(args: &[String]) -> Res<()> {
    let mut o = Opts::new(args);
    let out = o.value("--out")?;
    let opt = !o.flag("--no-opt");
    o.finish()?;
    let out = match out {
        Some(p) => std::env::current_dir().map_err(Fail::err)?.join(p),
        None => util::repo_root().join("dist"),
    };
    let site_dir = site::build(opt)?;
    site::dist(&site_dir, &out)
}
