//! A tiny std-only static HTTP/1.1 server for target/site (GET and HEAD, one thread per
//! connection, `Connection: close`, `Cache-Control: no-store`). For local use only: it binds
//! 127.0.0.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::util::{Ctx, Res};

pub struct Server {
    listener: TcpListener,
    root: Arc<PathBuf>,
    base: Arc<String>,
}

impl Server {
    /// Binds 127.0.0.1:`port` (0: a free port). `base` is the URL prefix the site lives under.
    pub fn bind(root: &Path, port: u16, base: &str) -> Res<Server> {
        let listener =
            TcpListener::bind(("127.0.0.1", port)).ctx(format!("bind 127.0.0.1:{port}"))?;
        let mut base = base.trim_matches('/').to_string();
        base = if base.is_empty() {
            "/".into()
        } else {
            format!("/{base}/")
        };
        Ok(Server {
            listener,
            root: Arc::new(root.to_path_buf()),
            base: Arc::new(base),
        })
    }

    pub fn url(&self) -> String {
        let port = self.listener.local_addr().map(|a| a.port()).unwrap_or(0);
        format!("http://127.0.0.1:{port}{}", self.base)
    }

    pub fn run_forever(self) {
        for stream in self.listener.incoming().flatten() {
            let (root, base) = (self.root.clone(), self.base.clone());
            std::thread::spawn(move || {
                let _ = handle(stream, &root, &base);
            });
        }
    }

    /// Serves on a background thread for the life of the process; returns the URL.
    pub fn spawn(self) -> String {
        let url = self.url();
        std::thread::spawn(move || self.run_forever());
        url
    }
}

fn handle(mut stream: TcpStream, root: &Path, base: &str) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.by_ref().take(8192).read_line(&mut request_line)?;
    // Drain the headers (bounded); the body of GET/HEAD is ignored.
    let mut header_bytes = 0;
    loop {
        let mut line = String::new();
        let n = reader.by_ref().take(8192).read_line(&mut line)?;
        header_bytes += n;
        if n == 0 || line == "\r\n" || line == "\n" || header_bytes > 65536 {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let head = method == "HEAD";
    if method != "GET" && !head {
        return respond(
            &mut stream,
            "405 Method Not Allowed",
            "text/plain",
            b"method not allowed\n",
            head,
            &[],
        );
    }
    let path = target.split(['?', '#']).next().unwrap_or("");
    let Some(decoded) = percent_decode(path) else {
        return respond(
            &mut stream,
            "400 Bad Request",
            "text/plain",
            b"bad path\n",
            head,
            &[],
        );
    };
    if decoded == base.trim_end_matches('/') && base != "/" {
        return respond(
            &mut stream,
            "301 Moved Permanently",
            "text/plain",
            b"",
            head,
            &[("Location", base)],
        );
    }
    let Some(rel) = decoded.strip_prefix(base) else {
        return not_found(&mut stream, head);
    };
    let mut file = root.to_path_buf();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(p) => file.push(p),
            Component::CurDir => {}
            _ => return not_found(&mut stream, head),
        }
    }
    if file.is_dir() {
        if !decoded.ends_with('/') {
            // Relative URLs in the page resolve against the directory only with the slash.
            let location = format!("{decoded}/");
            return respond(
                &mut stream,
                "301 Moved Permanently",
                "text/plain",
                b"",
                head,
                &[("Location", &location)],
            );
        }
        file.push("index.html");
    }
    match std::fs::read(&file) {
        Ok(body) => respond(&mut stream, "200 OK", content_type(&file), &body, head, &[]),
        Err(_) => not_found(&mut stream, head),
    }
}

fn not_found(stream: &mut TcpStream, head: bool) -> std::io::Result<()> {
    respond(
        stream,
        "404 Not Found",
        "text/plain; charset=utf-8",
        b"not found\n",
        head,
        &[],
    )
}

fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
    head: bool,
    extra: &[(&str, &str)],
) -> std::io::Result<()> {
    let mut h = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in extra {
        h.push_str(&format!("{k}: {v}\r\n"));
    }
    h.push_str("\r\n");
    stream.write_all(h.as_bytes())?;
    if !head {
        stream.write_all(body)?;
    }
    stream.flush()
}

/// By extension. `.gz` files are served as opaque bytes (no Content-Encoding): the app
/// decompresses the gzip dumps itself.
pub fn content_type(path: &Path) -> &'static str {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .as_deref()
    {
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("css") => "text/css; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        Some("woff") => "font/woff",
        Some("txt" | "md") => "text/plain; charset=utf-8",
        Some("gz") => "application/gzip",
        _ => "application/octet-stream",
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(url_path: &str, server_url: &str) -> (String, Vec<u8>) {
        let addr = server_url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
            .to_string();
        let mut s = TcpStream::connect(addr).unwrap();
        write!(s, "GET {url_path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).unwrap();
        let split = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        (
            String::from_utf8_lossy(&buf[..split]).into_owned(),
            buf[split + 4..].to_vec(),
        )
    }

    #[test]
    fn serves_files_under_a_base_path() {
        let dir = std::env::temp_dir().join(format!("xtask-serve-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("examples")).unwrap();
        std::fs::write(dir.join("index.html"), "<html>hi</html>").unwrap();
        std::fs::write(dir.join("app_bg.wasm"), b"\0asm").unwrap();
        std::fs::write(dir.join("examples/a b.json.gz"), b"\x1f\x8b").unwrap();
        let server = Server::bind(&dir, 0, "/some/path").unwrap();
        let url = server.spawn();
        assert!(url.ends_with("/some/path/"));

        let (h, body) = get("/some/path/", &url);
        assert!(h.starts_with("HTTP/1.1 200"), "{h}");
        assert!(h.contains("text/html") && h.contains("Cache-Control: no-store"));
        assert_eq!(body, b"<html>hi</html>");
        let (h, _) = get("/some/path/app_bg.wasm?v=1", &url);
        assert!(h.contains("Content-Type: application/wasm"), "{h}");
        let (h, body) = get("/some/path/examples/a%20b.json.gz", &url);
        assert!(
            h.contains("application/gzip") && !h.contains("Content-Encoding"),
            "{h}"
        );
        assert_eq!(body, b"\x1f\x8b");
        let (h, _) = get("/some/path", &url);
        assert!(
            h.starts_with("HTTP/1.1 301") && h.contains("Location: /some/path/"),
            "{h}"
        );
        let (h, _) = get("/some/path/examples", &url);
        assert!(h.contains("Location: /some/path/examples/"), "{h}");
        assert!(get("/index.html", &url).0.starts_with("HTTP/1.1 404"));
        assert!(get("/some/path/../path/index.html", &url)
            .0
            .starts_with("HTTP/1.1 404"));
        assert!(get("/some/path/%2e%2e/x", &url)
            .0
            .starts_with("HTTP/1.1 404"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn relative_url_check() {
        use crate::site::check_relative_urls;
        let ok = r#"<script type="module">import init from './commlens_www.js'; init();</script>
            <link rel="stylesheet" href="style.css">"#;
        assert!(check_relative_urls(ok).is_ok());
        assert!(check_relative_urls(&ok.replace("./commlens_www.js", "/commlens_www.js")).is_err());
        assert!(
            check_relative_urls(&ok.replace("style.css", "https://cdn.example/x.css")).is_err()
        );
        assert!(check_relative_urls("<p>nothing</p>").is_err());
    }
}
