//! `floorgate`: the host CLI. Offline tools around the pure core (SPEC §1).
//!
//! Each subcommand lives in its own module beside this file and gets the arguments after its
//! name; adding one is a module plus a line in [`COMMANDS`].

mod args;
mod eval;
mod search;
mod tools_file;
mod validate;

use std::process::ExitCode;

/// A subcommand: name, one-line summary, entry point.
type Command = (
    &'static str,
    &'static str,
    fn(args::Args) -> Result<(), String>,
);

const COMMANDS: &[Command] = &[
    (
        "search",
        "rank a tools file for a query (or a JSONL file of queries)",
        search::run,
    ),
    (
        "eval",
        "measure the ranker on the public evaluation sets",
        eval::run,
    ),
    (
        "validate",
        "check a directory, catalog and policy together, as the admin API does",
        validate::run,
    ),
];

fn usage() -> String {
    let mut s = String::from("usage: floorgate <command> [options]\n\ncommands:\n");
    for (name, about, _) in COMMANDS {
        s.push_str(&format!("  {name:<10} {about}\n"));
    }
    s.push_str("\nRun `floorgate <command> --help` for a command's options.\n");
    s
}

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    let Some(cmd) = argv.next() else {
        eprint!("{}", usage());
        return ExitCode::from(2);
    };
    if cmd == "--help" || cmd == "-h" || cmd == "help" {
        print!("{}", usage());
        return ExitCode::SUCCESS;
    }
    let Some((_, _, run)) = COMMANDS.iter().find(|(name, _, _)| *name == cmd) else {
        eprintln!("floorgate: unknown command `{cmd}`\n\n{}", usage());
        return ExitCode::from(2);
    };
    match run(args::Args::new(argv.collect())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("floorgate {cmd}: {msg}");
            ExitCode::FAILURE
        }
    }
}
