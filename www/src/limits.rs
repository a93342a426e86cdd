//! The input-size limit in the browser: a dump larger than this is refused before it is
//! read, with a message that says how to raise it (`?limit_mb=N`, or the field on the first
//! screen). The default reads a 2M-node dump (about 900 MB of JSON).
//!
//! This check is the app's first line, on the bytes as stored; the core then applies the same
//! limit to what gzip data decompresses to ([`core`]). The default is the core's, so the CLI's
//! `--max-input-mb` and the app agree.

/// The default limit, in MiB (the CLI's `--max-input-mb` default).
pub const DEFAULT_LIMIT_MB: u64 = commlens::input::DEFAULT_MAX_INPUT_MB;

/// The core's limits for a setting in MiB (the default when unset).
pub fn core(limit_mb: Option<u64>) -> commlens::input::Limits {
    commlens::input::Limits::from_mb(limit_mb.unwrap_or(DEFAULT_LIMIT_MB))
}

/// The limit in bytes for a setting in MiB (the default when unset).
pub fn bytes(limit_mb: Option<u64>) -> u64 {
    limit_mb.unwrap_or(DEFAULT_LIMIT_MB).saturating_mul(1 << 20)
}

/// Refuses an input of `size` bytes over `limit` bytes, naming it and the way out.
pub fn check(name: &str, size: u64, limit: u64) -> Result<(), String> {
    if size <= limit {
        return Ok(());
    }
    Err(format!(
        "{name} is {} — more than the {} this page reads (the input-size limit). To read it \
         anyway, raise the limit: add ?limit_mb={} to the address, or set it on the first \
         screen; a page can hold about 3 GB in all.",
        human(size),
        human(limit),
        size.div_ceil(1 << 20)
    ))
}

fn human(n: u64) -> String {
    commlens::timeline::scene::human_bytes(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_the_limit_is_refused_with_the_way_out() {
        assert!(check("a.json", 10, 10).is_ok());
        let e = check("big.json.gz", 3 << 30, bytes(None)).unwrap_err();
        assert!(
            e.contains("big.json.gz") && e.contains("3.0 GiB") && e.contains("1.0 GiB"),
            "{e}"
        );
        assert!(e.contains("limit_mb=3072"), "{e}");
        assert_eq!(bytes(Some(2)), 2 << 20);
    }
}
