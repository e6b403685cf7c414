//! `floorgate validate DIR`: the admin API's document checks, offline.
//!
//! Reads `directory.json`, `catalog.json` and `policy.json` from DIR (each optional, as in KV)
//! and validates them together exactly as a write through the admin API would.

use std::path::Path;

use crate::args::Args;

const HELP: &str = "usage: floorgate validate DIR [--tenant ID] [--directory FILE]

Validates DIR/directory.json, DIR/catalog.json and DIR/policy.json together, as the admin
API does before storing them. Prints a summary, or every problem with its JSON path.

  --tenant ID        the tenant the documents are for (default: the catalog's \"tenant\")
  --directory FILE   the connector directory to validate against (default: DIR/directory.json)
  --allow-loopback   accept loopback origins, as a deployment with ALLOW_LOOPBACK_HTTP=true does";

fn read_optional(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

pub fn run(mut args: Args) -> Result<(), String> {
    if args.help() {
        println!("{HELP}");
        return Ok(());
    }
    let tenant = args.value("--tenant")?;
    let directory_file = args.value("--directory")?;
    let rules = floorgate::catalog::OriginRules {
        allow_loopback: args.switch("--allow-loopback"),
    };
    let positionals = args.positionals()?;
    let [dir] = positionals.as_slice() else {
        return Err(format!("expected one directory argument\n\n{HELP}"));
    };
    let dir = Path::new(dir);
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    let directory = match directory_file {
        Some(file) => {
            Some(std::fs::read_to_string(&file).map_err(|e| format!("cannot read {file}: {e}"))?)
        }
        None => read_optional(&dir.join("directory.json"))?,
    };
    let catalog = read_optional(&dir.join("catalog.json"))?;
    let policy = read_optional(&dir.join("policy.json"))?;
    let tenant = match tenant {
        Some(t) => t,
        None => catalog
            .as_deref()
            .and_then(|c| serde_json::from_str::<serde_json::Value>(c).ok())
            .and_then(|v| v.get("tenant").and_then(|t| t.as_str()).map(str::to_owned))
            .ok_or("no --tenant given and catalog.json names none")?,
    };
    if let Some(text) = directory.as_deref() {
        floorgate::catalog::Directory::parse_with(text, rules).map_err(|e| e.to_string())?;
    }
    match floorgate::tenant::check_documents(
        &tenant,
        directory.as_deref(),
        catalog.as_deref(),
        policy.as_deref(),
        rules,
    ) {
        Ok(summary) => {
            println!(
                "{}",
                serde_json::to_string(&summary).map_err(|e| e.to_string())?
            );
            Ok(())
        }
        Err(errors) => Err(errors.to_string()),
    }
}
