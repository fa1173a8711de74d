//! The subcommands, each thin over the engine and the planner.

pub mod bench;
pub mod devices;
pub mod plan;
pub mod profile;
pub mod train;

use std::process::ExitCode;

/// The error and its causes on one line.
pub fn one_line(error: &anyhow::Error) -> String {
    format!("{error:#}").replace('\n', " ")
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
        eprintln!(
            "error: a subcommand is required: devices, train, bench, profile or plan (see --help)"
        );
        return ExitCode::from(2);
    }
    let rendered = error.render().to_string();
    let first = rendered.lines().next().unwrap_or("invalid arguments");
    eprintln!("{first} (see --help)");
    ExitCode::from(2)
}
