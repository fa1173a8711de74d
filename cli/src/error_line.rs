//! Error lines written to standard error whole, in one write each.
//!
//! `eprintln!` writes its pieces one by one (standard error is unbuffered), so a launcher that
//! merges several processes' output with its own, as `mpirun` does, can split `error: ` from
//! the message that follows it. One write of one short line reaches the pipe in one piece.

use std::fmt::Display;
use std::io::Write;

/// Writes `error: {message}` and a newline to standard error in a single write.
pub fn say_error(message: impl Display) {
    // Nowhere is left to report a failed write to standard error.
    let _ = write_error(&mut std::io::stderr().lock(), message);
}

/// Writes `error: {message}` and a newline to `out` in a single write.
fn write_error(out: &mut impl Write, message: impl Display) -> std::io::Result<()> {
    out.write_all(format!("error: {message}\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that records how many writes it was given.
    #[derive(Default)]
    struct CountingWriter {
        writes: usize,
        bytes: Vec<u8>,
    }

    impl Write for CountingWriter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.writes += 1;
            self.bytes.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn an_error_line_is_one_write_where_formatting_makes_several() {
        let message = "invalid training options: epochs must be at least 1";
        let mut formatted = CountingWriter::default();
        writeln!(formatted, "error: {message}").unwrap();
        assert!(formatted.writes > 1, "{} writes", formatted.writes);
        let mut whole = CountingWriter::default();
        write_error(&mut whole, message).unwrap();
        assert_eq!(whole.writes, 1);
        assert_eq!(whole.bytes, formatted.bytes);
    }
}
