//! Text in the timeline: how wide a label is, and where labels go so that none overlaps
//! another.
//!
//! Widths are those of Helvetica, whose metrics Arial and Liberation Sans share; the SVG asks
//! for these fonts by name ([`FONT_FAMILY`]), so the estimates hold wherever one of them is
//! installed, and other fonts of the `sans-serif` fallback run a little wider or narrower.
//! [`SLACK`] keeps a margin for those.

/// The font list every text element of the timeline asks for.
pub const FONT_FAMILY: &str = "Helvetica, Arial, Liberation Sans, sans-serif";

/// Extra room per label (pixels) for fonts whose metrics differ from Helvetica's.
pub const SLACK: f64 = 4.0;

/// Helvetica advance widths of ASCII 32..=126, in thousandths of an em.
const ASCII: [u16; 95] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556,
    556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667,
    611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667,
    667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500,
    222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
];

/// The width in pixels of `text` set at `size` pixels. Non-ASCII characters count as wide
/// (an em for anything past Latin, three fifths of one for the rest).
pub fn width(text: &str, size: f64) -> f64 {
    let ems: u32 = text
        .chars()
        .map(|c| match c as u32 {
            32..=126 => ASCII[c as usize - 32] as u32,
            0..=0x2ff => 600,
            0x2000..=0x206f => 600,
            _ => 1000,
        })
        .sum();
    ems as f64 / 1000.0 * size
}

/// `text` cut to fit `max` pixels at `size`, with an ellipsis; `None` if not even one
/// character and the ellipsis fit.
pub fn fit(text: &str, size: f64, max: f64) -> Option<String> {
    if width(text, size) <= max {
        return Some(text.to_string());
    }
    let ellipsis = width("…", size);
    let mut used = ellipsis;
    let mut out = String::new();
    for c in text.chars() {
        let w = width(c.encode_utf8(&mut [0; 4]), size);
        if used + w > max {
            break;
        }
        used += w;
        out.push(c);
    }
    if out.is_empty() {
        None
    } else {
        out.push('…');
        Some(out)
    }
}

/// `text` broken at spaces into at most `lines` lines of `max` pixels at `size` (the last
/// cut with an ellipsis when it does not fit).
pub fn wrap(text: &str, size: f64, max: f64, lines: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut words = text.split(' ').peekable();
    while let Some(word) = words.next() {
        let candidate = if current.is_empty() {
            word.to_string()
        } else {
            format!("{current} {word}")
        };
        if width(&candidate, size) <= max || current.is_empty() {
            current = candidate;
            continue;
        }
        if out.len() + 1 == lines {
            let rest: Vec<&str> = std::iter::once(word).chain(words.by_ref()).collect();
            current = format!("{current} {}", rest.join(" "));
            break;
        }
        out.push(std::mem::take(&mut current));
        current = word.to_string();
    }
    if !current.is_empty() {
        out.push(current);
    }
    out.into_iter().filter_map(|l| fit(&l, size, max)).collect()
}

/// Horizontal bands of text lines; labels are placed in the first line where they overlap
/// nothing already placed.
#[derive(Clone, Debug)]
pub struct Bands {
    /// Per line, the occupied spans (kept sorted by start).
    lines: Vec<Vec<(f64, f64)>>,
}

impl Bands {
    pub fn new(lines: usize) -> Bands {
        Bands {
            lines: vec![Vec::new(); lines],
        }
    }

    /// Marks `[x0, x1)` of `line` as taken (for text drawn there regardless).
    pub fn take(&mut self, line: usize, x0: f64, x1: f64) {
        if let Some(spans) = self.lines.get_mut(line) {
            let at = spans.partition_point(|s| s.0 < x0);
            spans.insert(at, (x0, x1));
        }
    }

    /// Whether `[x0, x1)` is free on `line`.
    pub fn free(&self, line: usize, x0: f64, x1: f64) -> bool {
        self.lines
            .get(line)
            .is_some_and(|spans| spans.iter().all(|&(a, b)| x1 <= a || x0 >= b))
    }

    /// The first line where `[x0, x1)` is free; takes it.
    pub fn place(&mut self, x0: f64, x1: f64) -> Option<usize> {
        let line = (0..self.lines.len()).find(|&l| self.free(l, x0, x1))?;
        self.take(line, x0, x1);
        Some(line)
    }

    /// How many lines hold something.
    pub fn used(&self) -> usize {
        self.lines
            .iter()
            .rposition(|l| !l.is_empty())
            .map_or(0, |l| l + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_follow_helvetica() {
        // "intervening_collective" at 11 px: 22 characters, Helvetica widths.
        let w = width("intervening_collective", 11.0);
        assert!((w - 11.0 * 9.559).abs() < 0.01, "{w}");
        assert_eq!(width("", 12.0), 0.0);
        assert!(width("漢", 10.0) >= 10.0);
    }

    #[test]
    fn fit_cuts_with_an_ellipsis() {
        assert_eq!(fit("capacity", 10.0, 100.0).as_deref(), Some("capacity"));
        let cut = fit("effect_or_storage_release", 10.0, 50.0).unwrap();
        assert!(cut.ends_with('…') && width(&cut, 10.0) <= 50.0, "{cut}");
        assert_eq!(fit("capacity", 10.0, 5.0), None);
    }

    #[test]
    fn wrap_breaks_at_spaces_and_cuts_the_last_line() {
        let text = "2528 launched in view, largest 769.0 KiB";
        let lines = wrap(text, 11.0, 150.0, 3);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines.join(" "), text);
        assert!(lines.iter().all(|l| width(l, 11.0) <= 150.0));
        let cut = wrap("a b c d e f g h", 11.0, 14.0, 2);
        assert_eq!(cut.len(), 2);
        assert!(cut[1].ends_with('…'));
        assert!(cut.iter().all(|l| width(l, 11.0) <= 14.0));
    }

    #[test]
    fn bands_never_overlap() {
        let mut b = Bands::new(2);
        assert_eq!(b.place(0.0, 50.0), Some(0));
        assert_eq!(b.place(40.0, 80.0), Some(1));
        assert_eq!(b.place(45.0, 60.0), None);
        assert_eq!(b.place(50.0, 60.0), Some(0));
        assert_eq!(b.used(), 2);
    }
}
