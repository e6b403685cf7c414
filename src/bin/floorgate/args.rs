//! A small argument reader: `--name value`, `--name=value`, switches and positionals.
//!
//! Hand-rolled because each subcommand needs a handful of options and the CLI should not pull a
//! parser into the build.

pub struct Args {
    rest: Vec<String>,
}

impl Args {
    pub fn new(rest: Vec<String>) -> Args {
        Args { rest }
    }

    /// Whether `--help` / `-h` was given.
    pub fn help(&mut self) -> bool {
        self.switch("--help") || self.switch("-h")
    }

    /// Removes a switch; true if it was present.
    pub fn switch(&mut self, name: &str) -> bool {
        let before = self.rest.len();
        self.rest.retain(|a| a != name);
        self.rest.len() != before
    }

    /// Removes `--name value` or `--name=value`; the last one wins.
    pub fn value(&mut self, name: &str) -> Result<Option<String>, String> {
        let mut found = None;
        let mut i = 0;
        while i < self.rest.len() {
            if self.rest[i] == name {
                if i + 1 >= self.rest.len() {
                    return Err(format!("{name} needs a value"));
                }
                found = Some(self.rest.remove(i + 1));
                self.rest.remove(i);
            } else if let Some(v) = self.rest[i]
                .strip_prefix(name)
                .and_then(|r| r.strip_prefix('='))
            {
                found = Some(v.to_owned());
                self.rest.remove(i);
            } else {
                i += 1;
            }
        }
        Ok(found)
    }

    /// Like [`Args::value`], parsed.
    pub fn parsed<T: std::str::FromStr>(&mut self, name: &str) -> Result<Option<T>, String> {
        match self.value(name)? {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| format!("{name}: `{v}` is not a valid value")),
        }
    }

    /// What is left: positionals. An unknown `--option` is an error.
    pub fn positionals(self) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        let mut literal = false;
        for a in self.rest {
            if a == "--" && !literal {
                literal = true;
            } else if !literal && a.starts_with("--") {
                return Err(format!("unknown option `{a}`"));
            } else {
                out.push(a);
            }
        }
        Ok(out)
    }
}
