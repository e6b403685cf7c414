//! The gateway's own scaffolding text, added to tool descriptions by the resolver.
//!
//! Merged tools and frozen fields get template sentences that say the same thing on every tool
//! they touch. Those words carry no information about what a tool does, so the ranker must not
//! score them; the stop-word list is derived from the templates here, so the two cannot drift.
//! Values interpolated into a template (account labels, frozen values) stay scorable: the
//! resolver hands them to the ranker as data (`ToolDoc::notes`), never to be parsed back.

/// Added to a merged tool's description. `{labels}` is replaced by the visible labels.
pub const MERGED_CONNECTION_TEMPLATE: &str = "Set connection to one of: {labels}.";
/// Added to a tool's description once per frozen argument.
pub const FROZEN_FIELD_TEMPLATE: &str = "Frozen: {field} = {value}.";

const TEMPLATES: [&str; 2] = [MERGED_CONNECTION_TEMPLATE, FROZEN_FIELD_TEMPLATE];

/// The note a merged tool's description ends with, e.g. `Set connection to one of: "Sales", "Ops".`
pub fn merged_connection_note(labels: &[&str]) -> String {
    let quoted: Vec<String> = labels.iter().map(|l| format!("\"{l}\"")).collect();
    MERGED_CONNECTION_TEMPLATE.replace("{labels}", &quoted.join(", "))
}

/// The note for one frozen argument, e.g. `Frozen: team_id = "T42".`
pub fn frozen_field_note(field: &str, value: &serde_json::Value) -> String {
    FROZEN_FIELD_TEMPLATE
        .replace("{field}", field)
        .replace("{value}", &value.to_string())
}

/// Separates a tool's own description from the notes the gateway appends.
const NOTES_SEPARATOR: &str = "\n\n";

/// A description with the scaffolding notes appended.
pub fn with_notes(description: &str, notes: &[String]) -> String {
    if notes.is_empty() {
        description.to_owned()
    } else {
        format!(
            "{}{NOTES_SEPARATOR}{}",
            description.trim_end(),
            notes.join(" ")
        )
    }
}

/// Lowercase words of the templates, placeholders excluded: `connection`, `frozen`, `of`, …
pub fn stop_words() -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for template in TEMPLATES {
        let mut in_placeholder = false;
        let mut word = String::new();
        for ch in template.chars() {
            match ch {
                '{' => in_placeholder = true,
                '}' => in_placeholder = false,
                c if !in_placeholder && c.is_alphanumeric() => word.extend(c.to_lowercase()),
                _ => {}
            }
            if (!ch.is_alphanumeric() || in_placeholder) && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
        }
        if !word.is_empty() {
            words.push(word);
        }
    }
    words.sort();
    words.dedup();
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_come_from_the_templates_only() {
        assert_eq!(
            stop_words(),
            ["connection", "frozen", "of", "one", "set", "to"]
        );
    }

    #[test]
    fn notes_keep_interpolated_values() {
        assert_eq!(
            merged_connection_note(&["Sales", "Ops"]),
            "Set connection to one of: \"Sales\", \"Ops\"."
        );
        assert_eq!(
            frozen_field_note("team_id", &serde_json::json!("T42")),
            "Frozen: team_id = \"T42\"."
        );
    }
}
