//! Text from the cluster on its way to a terminal: kubectl escapes ESC as `^[` and CR as `\r`
//! in every human-readable printer (cli-runtime pkg/printers/terminal.go `EscapeTerminal`,
//! used by tableprinter.go, get/customcolumn.go and describe; kubernetes issue #101695), so
//! an Event or condition message cannot clear the screen, set the clipboard (OSC 52) or plant
//! hyperlinks (OSC 8). This escapes those two as kubectl does and, beyond it, every other C0
//! control (caret notation, `^G`), DEL (`^?`) and the C1 controls U+0080–U+009F (`\u009b`: a
//! lone U+009B is CSI to some terminals); newline and tab stay, as text layout.

use std::borrow::Cow;

/// `s` with its terminal control characters made visible (see the module doc).
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            '\u{7f}' => out.push_str("^?"),
            c if (c as u32) < 0x20 && needs_escape(c) => {
                out.push('^');
                out.push(char::from(b'@' + c as u8));
            }
            c if needs_escape(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || c == '\u{7f}'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_kubectl_and_every_other_control() {
        assert_eq!(escape("a\x1b[2Jb"), "a^[[2Jb");
        assert_eq!(escape("x\ry"), "x\\ry");
        assert_eq!(escape("\x1b]52;c;SGVsbG8=\x07"), "^[]52;c;SGVsbG8=^G");
        assert_eq!(escape("\u{9b}31m\x7f\x00"), "\\u009b31m^?^@");
        assert_eq!(escape("two\nlines\tand tab é"), "two\nlines\tand tab é");
        assert!(matches!(escape("plain"), Cow::Borrowed(_)));
    }
}
