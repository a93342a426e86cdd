//! Text from inputs, made safe for where it goes: a terminal (no control characters reach
//! it), a fixed-width table (padding without `format!`'s width limit), an error message (a
//! bounded size however long a name is), an XML document (only characters XML allows).
//! Every shell writes what the core returns, so the core applies these before returning.

use std::borrow::Cow;

/// Whether `c` would act on a terminal rather than print: C0 controls other than newline and
/// tab (ESC, BEL, carriage return, backspace...), DEL, and C1 controls (U+0080..U+009F, which
/// some terminals take as CSI and OSC).
pub fn is_terminal_control(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || c == '\u{7f}'
}

/// `text` with every terminal control character written as a visible escape (`\u{1b}`), so a
/// name holding ESC or BEL prints as text instead of moving the cursor or ringing the bell.
/// Newlines and tabs are kept (the reports are line-based text).
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_terminal_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_terminal_control(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`terminal_safe`] that consumes its argument (the usual end of a `to_text`).
pub fn into_terminal_safe(text: String) -> String {
    match terminal_safe(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(safe) => safe,
    }
}

/// Appends `cell` left-aligned in a column `width` characters wide. `format!("{:<w$}")`
/// panics when `w` is 65,536 or more, which a long node name makes it; this does not.
pub fn push_padded(out: &mut String, cell: &str, width: usize) {
    out.push_str(cell);
    let len = cell.chars().count();
    out.extend(std::iter::repeat_n(' ', width.saturating_sub(len)));
}

/// The most characters of input-derived text (a name, an op, a target) an error message
/// shows; longer text keeps its start and end with the count of characters left out.
pub const MESSAGE_PART_LIMIT: usize = 200;

/// `text` cut to at most `limit` characters (plus the marker) by leaving out its middle:
/// `"abc…[12345 characters]…xyz"`. Short text is returned as it is.
pub fn clip(text: &str, limit: usize) -> Cow<'_, str> {
    // Counting stops early: only the first `limit + 1` characters are looked at.
    if text.len() <= limit || text.chars().nth(limit).is_none() {
        return Cow::Borrowed(text);
    }
    let total = text.chars().count();
    let head = limit * 2 / 3;
    let tail = limit - head;
    let mut out: String = text.chars().take(head).collect();
    out.push_str(&format!("…[{} characters]…", total - head - tail));
    let tail_start = text
        .char_indices()
        .nth(total - tail)
        .map_or(text.len(), |(i, _)| i);
    out.push_str(&text[tail_start..]);
    Cow::Owned(out)
}

/// A message (an error, as the shells print it) bounded in size: each run of text longer
/// than [`MESSAGE_PART_LIMIT`] between spaces (a name, an op, a quoted target) is clipped,
/// and the whole is at most [`MESSAGE_LIMIT`] characters. Control characters are escaped.
pub fn bounded_message(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(MESSAGE_LIMIT + 64));
    for (i, word) in message.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&clip(word, MESSAGE_PART_LIMIT));
        if out.len() > MESSAGE_LIMIT * 4 {
            break;
        }
    }
    let out = clip(&out, MESSAGE_LIMIT).into_owned();
    into_terminal_safe(out)
}

/// The most characters a message from [`bounded_message`] has (plus the clip marker).
pub const MESSAGE_LIMIT: usize = 4000;

/// Whether XML 1.0 allows `c` in a document (`Char` production): tab, newline, carriage
/// return, and everything from U+0020 on but U+FFFE and U+FFFF (surrogates cannot occur in
/// Rust text).
pub fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{fffe}' && c != '\u{ffff}')
}

/// `text` with every character XML does not allow replaced by U+FFFD.
pub fn xml_chars(text: &str) -> Cow<'_, str> {
    if text.chars().all(is_xml_char) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if is_xml_char(c) { c } else { '\u{fffd}' })
            .collect(),
    )
}

/// [`xml_chars`] that consumes its argument.
pub fn into_xml_chars(text: String) -> String {
    match xml_chars(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(clean) => clean,
    }
}

/// Writes to `w` the text `fill` makes, a piece at a time: `fill` writes into a buffer and
/// calls the flush it is given after each item, which hands the buffer to `w` once it holds
/// 64 KiB. A long report is then never held whole. The first write error stops the writing
/// and is returned.
pub fn write_in_pieces(
    w: &mut dyn std::io::Write,
    fill: impl FnOnce(&mut String, &mut dyn FnMut(&mut String)),
) -> std::io::Result<()> {
    let mut failed = None;
    let mut flush = |text: &mut String| {
        if text.len() >= 1 << 16 && failed.is_none() {
            failed = w.write_all(text.as_bytes()).err();
            text.clear();
        }
    };
    let mut out = String::with_capacity(1 << 17);
    fill(&mut out, &mut flush);
    if let Some(e) = failed {
        return Err(e);
    }
    w.write_all(out.as_bytes())?;
    w.flush()
}

/// [`write_in_pieces`] with each piece made [`terminal_safe`] as it is written. The escapes
/// go character by character and every piece is whole text, so what is written is the whole
/// text made safe.
pub fn write_terminal_safe_in_pieces(
    w: &mut dyn std::io::Write,
    fill: impl FnOnce(&mut String, &mut dyn FnMut(&mut String)),
) -> std::io::Result<()> {
    write_in_pieces(&mut TerminalSafeWriter(w), fill)
}

/// Writes what it is given [`terminal_safe`]; [`write_in_pieces`] gives it whole strings.
struct TerminalSafeWriter<'w>(&'w mut dyn std::io::Write);

impl std::io::Write for TerminalSafeWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        // Always text from `write_in_pieces`; anything else is read as text first.
        let text = String::from_utf8_lossy(bytes);
        self.0.write_all(terminal_safe(&text).as_bytes())?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_written_safe_make_the_whole_text_safe() {
        let lines = ["plain\n", "bell \u{7} and \u{1b}[2J\n", "é\u{9b}\t\n"];
        let whole: String = lines.iter().copied().collect::<String>().repeat(5000);
        let mut written = Vec::new();
        write_terminal_safe_in_pieces(&mut written, |out, flush| {
            for _ in 0..5000 {
                for line in lines {
                    out.push_str(line);
                    flush(out);
                }
            }
        })
        .unwrap();
        assert!(whole.len() > 1 << 17, "more than one piece");
        assert_eq!(String::from_utf8(written).unwrap(), terminal_safe(&whole));
    }

    #[test]
    fn controls_are_escaped_newlines_kept() {
        assert_eq!(
            terminal_safe("a\u{1b}[2Jb\u{7}\n\tc"),
            "a\\u{1b}[2Jb\\u{7}\n\tc"
        );
        assert_eq!(terminal_safe("\u{9b}x\u{7f}"), "\\u{9b}x\\u{7f}");
        assert!(matches!(terminal_safe("plain ✓"), Cow::Borrowed(_)));
    }

    #[test]
    fn padding_has_no_width_limit() {
        let mut out = String::new();
        push_padded(&mut out, "ab", 70_000);
        assert_eq!(out.len(), 70_000);
        let mut out = String::new();
        push_padded(&mut out, "abcdef", 3);
        assert_eq!(out, "abcdef");
    }

    #[test]
    fn clip_keeps_both_ends() {
        let long = format!("start{}end", "x".repeat(10_000));
        let clipped = clip(&long, 30);
        assert!(
            clipped.starts_with("start") && clipped.ends_with("end"),
            "{clipped}"
        );
        assert!(clipped.contains("…[9978 characters]…"), "{clipped}");
        assert!(clipped.chars().count() < 60);
        assert_eq!(clip("short", 30), "short");
        let message = bounded_message(&format!("node {:?} is bad", "n".repeat(1_000_000)));
        assert!(
            message.len() < 400 && message.ends_with("is bad"),
            "{message}"
        );
    }

    #[test]
    fn xml_chars_replace_what_xml_forbids() {
        assert_eq!(
            xml_chars("a\u{fffe}b\u{ffff}c\u{1}d\te"),
            "a\u{fffd}b\u{fffd}c\u{fffd}d\te"
        );
        assert!(matches!(xml_chars("ok <>&"), Cow::Borrowed(_)));
    }
}
