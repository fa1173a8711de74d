//! The subcommands, each thin over the engine and the planner.

pub mod bench;
pub mod devices;
pub mod evaluate;
pub mod plan;
pub mod predict;
pub mod profile;
pub mod train;
mod trained;

use std::process::ExitCode;

/// The error of an `mpirun` process whose job was refused before it started, once the refusal
/// has been printed (by process 0, while MPI was still up): it ends the process with a failure
/// and prints nothing more.
#[cfg(feature = "mpi")]
#[derive(Debug, Clone, Copy)]
pub struct RefusalSaid;

#[cfg(feature = "mpi")]
impl std::fmt::Display for RefusalSaid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the job was refused (process 0 says why)")
    }
}

#[cfg(feature = "mpi")]
impl std::error::Error for RefusalSaid {}

/// The error and its causes on one line, each cause once: many errors' messages already
/// embed their source's message (`cannot read x: {source}`), so a cause whose text is part of
/// the line so far is left out instead of repeated.
pub fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string().replace('\n', " ");
        let text = text.trim();
        if text.is_empty() || line.contains(text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(text);
    }
    line
}

/// Prints a command-line parsing error as one line (help and version go through untouched).
pub fn report_usage_error(error: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        let _ = error.print();
        return ExitCode::SUCCESS;
    }
    if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        crate::error_line::say_error(
            "a subcommand is required: devices, train, predict, evaluate, bench, profile or plan (see --help)",
        );
        return ExitCode::from(2);
    }
    let rendered = error.render().to_string();
    let first = rendered.lines().next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    crate::error_line::say_error(format_args!("{first} (see --help)"));
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::one_line;

    /// An error whose message embeds its source's, as `thiserror`'s `{source}` does.
    #[derive(Debug)]
    struct Embeds(std::io::Error);

    impl std::fmt::Display for Embeds {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cluster: {}", self.0)
        }
    }

    impl std::error::Error for Embeds {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn each_cause_appears_once() {
        let io = std::io::Error::other("expected value at line 1");
        let error = anyhow::Error::new(Embeds(io)).context("c.json");
        assert_eq!(
            one_line(&error),
            "c.json: cluster: expected value at line 1"
        );
        let plain = anyhow::anyhow!("first\nsecond").context("outer");
        assert_eq!(one_line(&plain), "outer: first second");
    }
}
