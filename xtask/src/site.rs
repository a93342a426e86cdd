//! `build` and `dist`: the static site in target/site/.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use wasm_bindgen_cli_support::Bindgen;

use crate::util::{self, Ctx, Fail, Res};

pub const WASM_TARGET: &str = "wasm32-unknown-unknown";
/// The JS the page loads; must match index.html's `import init from './commlens_www.js'`.
pub const APP_JS: &str = "commlens_www.js";

/// Every wasm32 build (the app, the wasm crate, the core alone) is this one command: one
/// selection means one feature unification, so `xtask build` and each step of `xtask test`
/// reuse the same artifacts instead of compiling the dependencies once per selection.
pub fn cargo_build_wasm() -> Res<()> {
    util::run(
        util::cargo()
            .args(["build", "--profile", "wasm", "--target", WASM_TARGET])
            .args(WASM_PACKAGES),
    )
}

/// The packages every wasm32 build and the wasm32 clippy run select (`-p` each).
pub const WASM_PACKAGES: [&str; 6] = [
    "-p",
    "commlens",
    "-p",
    "commlens-wasm",
    "-p",
    "commlens-www",
];

pub fn wasm_release_dir() -> PathBuf {
    util::target_dir().join(WASM_TARGET).join("wasm")
}

/// How a wasm module is bound.
pub enum BindTarget {
    /// ES module for browsers: `init()` fetches `<name>_bg.wasm` relative to the JS.
    Web,
    /// CommonJS for Node: loads `<name>_bg.wasm` synchronously next to the JS.
    NodeJs,
}

/// Runs wasm-bindgen (the library, same version as the workspace's `wasm-bindgen`).
pub fn bindgen(wasm: &Path, out_dir: &Path, out_name: &str, target: BindTarget) -> Res<()> {
    let mut b = Bindgen::new();
    // The library's defaults differ from the CLI's: keep the default module path, so the web
    // target's `init()` fetches `<name>_bg.wasm` relative to `import.meta.url` by itself.
    b.input_path(wasm)
        .out_name(out_name)
        .typescript(false)
        .omit_default_module_path(false);
    match target {
        // The site ships without the function-name and producers sections: they are for
        // debuggers, and cost the page some 60 KiB of download.
        BindTarget::Web => b
            .remove_name_section(std::env::var_os("COMMLENS_WASM_NAMES").is_none())
            .remove_producers_section(true)
            .web(true),
        BindTarget::NodeJs => b.nodejs(true),
    }
    .ctx("wasm-bindgen")?;
    std::fs::create_dir_all(out_dir).ctx(format!("create {}", out_dir.display()))?;
    b.generate(out_dir)
        .ctx(format!("wasm-bindgen {}", wasm.display()))?;
    Ok(())
}

/// `cargo xtask build`: returns target/site.
pub fn build(opt: bool) -> Res<PathBuf> {
    let started = Instant::now();
    let root = util::repo_root();
    let target = util::target_dir();
    let index = root.join("index.html");
    let index_html = std::fs::read_to_string(&index).ctx(format!(
        "{} (the app's page, written by the web app) cannot be read",
        index.display()
    ))?;
    check_relative_urls(&index_html)?;

    cargo_build_wasm()?;
    let wasm = wasm_release_dir().join("commlens-www.wasm");

    // Build into a staging folder, then swap, so a running server never sees half a site.
    let site = target.join("site");
    let staging = util::private_dir(&site, "new");
    util::remove_dir(&staging)?;
    bindgen(&wasm, &staging, "commlens_www", BindTarget::Web)?;
    let bg = staging.join("commlens_www_bg.wasm");
    if opt {
        wasm_opt(&bg);
    }
    std::fs::write(staging.join("index.html"), &index_html).ctx("write index.html")?;
    let mut copied = Vec::new();
    let static_dir = root.join("www").join("static");
    if static_dir.is_dir() {
        copied.push(format!(
            "{} static file(s)",
            util::copy_dir(&static_dir, &staging)?
        ));
    }
    // The guides the first screen links to: the exporter's and the app's READMEs.
    let docs = staging.join("docs");
    std::fs::create_dir_all(&docs).ctx("create the site's docs/")?;
    for (from, to) in [
        ("python/README.md", "exporter.md"),
        ("www/README.md", "app.md"),
    ] {
        std::fs::copy(root.join(from), docs.join(to)).ctx(format!("copy {from}"))?;
    }
    copied.push("2 guide(s)".into());
    let examples = root.join("examples");
    if examples.is_dir() {
        copied.push(format!(
            "{} example(s)",
            util::copy_dir(&examples, &staging.join("examples"))?
        ));
    }
    let wasm_bytes =
        std::fs::read(staging.join("commlens_www_bg.wasm")).ctx("read the bound wasm")?;
    let js_len = std::fs::metadata(staging.join(APP_JS))
        .map(|m| m.len())
        .unwrap_or(0);
    util::replace_dir(&staging, &site)?;
    println!(
        "site: {} (index.html, commlens_www.js, commlens_www_bg.wasm{}) in {}\n  wasm {} raw, {} gzipped; js {}",
        site.display(),
        copied.iter().map(|c| format!(", {c}")).collect::<String>(),
        util::fmt_duration(started.elapsed()),
        util::human_bytes(wasm_bytes.len() as u64),
        util::human_bytes(gzip_len(&wasm_bytes)),
        util::human_bytes(js_len),
    );
    Ok(site)
}

fn gzip_len(bytes: &[u8]) -> u64 {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(bytes).expect("in-memory write");
    enc.finish().expect("in-memory write").len() as u64
}

/// Optimizes in place with wasm-opt when it is on PATH; never fails the build.
fn wasm_opt(wasm: &Path) {
    let Some(tool) = util::on_path("wasm-opt") else {
        println!("(wasm-opt not on PATH: the wasm is not size-optimized; `apt-get install binaryen` adds it)");
        return;
    };
    let out = wasm.with_extension("opt.wasm");
    let mut c = util::cmd(tool);
    c.arg("-Oz")
        .args([
            "--enable-bulk-memory",
            "--enable-nontrapping-float-to-int",
            "--enable-sign-ext",
            "--enable-mutable-globals",
            "--enable-reference-types",
            "--enable-multivalue",
        ])
        .arg(wasm)
        .arg("-o")
        .arg(&out);
    match util::run(&mut c) {
        Ok(()) => {
            if let Err(e) = std::fs::rename(&out, wasm) {
                println!("(wasm-opt output not used: {e})");
            }
        }
        Err(Fail::Error(m) | Fail::Usage(m)) => {
            let _ = std::fs::remove_file(&out);
            println!("(wasm-opt failed, keeping the unoptimized wasm: {m})");
        }
    }
}

/// The page must work from any sub-path of a static host, offline: no root-absolute or
/// off-site URLs in `src`/`href` attributes or module imports.
pub fn check_relative_urls(html: &str) -> Res<()> {
    let mut bad = Vec::new();
    for (i, line) in html.lines().enumerate() {
        let l = line.to_ascii_lowercase();
        for attr in ["src=", "href=", "from ", "import("] {
            let mut rest = l.as_str();
            while let Some(p) = rest.find(attr) {
                let v = rest[p + attr.len()..].trim_start_matches([' ', '"', '\'', '(']);
                if v.starts_with('/') || v.starts_with("http:") || v.starts_with("https:") {
                    bad.push(format!("  line {}: {}", i + 1, line.trim()));
                }
                rest = &rest[p + attr.len()..];
            }
        }
    }
    if !html.contains(APP_JS) {
        bad.push(format!("  it never loads ./{APP_JS}"));
    }
    if bad.is_empty() {
        Ok(())
    } else {
        bad.dedup();
        Err(Fail::msg(format!(
            "index.html must load ./{APP_JS} and use relative URLs only (the site is served from sub-paths, offline):\n{}",
            bad.join("\n")
        )))
    }
}

/// `cargo xtask dist`: copies the site to `out`.
pub fn dist(site: &Path, out: &Path) -> Res<()> {
    if out.exists() {
        let empty = std::fs::read_dir(out)
            .map(|mut d| d.next().is_none())
            .unwrap_or(false);
        if !empty && !out.join(APP_JS).is_file() {
            return Err(Fail::msg(format!(
                "{} exists and is not a previous dist (no {APP_JS}); not replacing it",
                out.display()
            )));
        }
        util::remove_dir(out)?;
    }
    let n = util::copy_dir(site, out)?;
    println!("dist: {n} files in {}", out.display());
    println!("  upload the folder as-is; it works from a host's root or any sub-path (relative URLs only)");
    Ok(())
}
