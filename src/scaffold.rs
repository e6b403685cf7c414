//! The gateway's own scaffolding text, added to tool descriptions by the resolver.
//!
//! Merged tools and frozen fields get template sentences that say the same thing on every tool
//! they touch. Those words carry no information about what a tool does, so the ranker must not
//! score them; the stop-word list is derived from the templates here, so the two cannot drift.
//! Values interpolated into a template (account labels, frozen values) stay scorable.

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

/// The text of `template` before `placeholder`, and after it up to the next placeholder.
fn around<'t>(template: &'t str, placeholder: &str) -> (&'t str, &'t str) {
    let (before, after) = template.split_once(placeholder).unwrap_or((template, ""));
    (before, after.split('{').next().unwrap_or(""))
}

/// The values interpolated into the notes [`with_notes`] appended (account labels, frozen
/// values): the tenant's own words for its set-up, which a search may name as it would a
/// connector label. Empty when the description does not end in well-formed notes. The merged
/// connection note, when present, is the last one and runs to the end.
pub fn note_values(description: &str) -> Vec<&str> {
    let Some((_, mut rest)) = description.rsplit_once(NOTES_SEPARATOR) else {
        return Vec::new();
    };
    let (frozen, field_end) = around(FROZEN_FIELD_TEMPLATE, "{field}");
    let (merged, _) = around(MERGED_CONNECTION_TEMPLATE, "{labels}");
    let mut values = Vec::new();
    loop {
        if let Some(labels) = rest.strip_prefix(merged) {
            return match labels.strip_suffix('.') {
                Some(labels) => {
                    values.push(labels);
                    values
                }
                None => Vec::new(),
            };
        }
        let Some(note) = rest.strip_prefix(frozen) else {
            return Vec::new();
        };
        let Some((_, value)) = note.split_once(field_end) else {
            return Vec::new();
        };
        // The value runs to the next note, or to the final full stop.
        let next = [frozen, merged]
            .iter()
            .filter_map(|p| value.find(&format!(". {p}")))
            .min();
        match next {
            Some(end) => {
                values.push(&value[..end]);
                rest = &value[end + 2..];
            }
            None => match value.strip_suffix('.') {
                Some(value) => {
                    values.push(value);
                    return values;
                }
                None => return Vec::new(),
            },
        }
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
    fn note_values_read_back_what_the_notes_interpolated() {
        let notes = [
            frozen_field_note("owner", &serde_json::json!("acme. Frozen")),
            frozen_field_note("page_size", &serde_json::json!(10)),
            merged_connection_note(&["Sales", "Ops"]),
        ];
        let described = with_notes("Lists issues.\n\nPaged.  ", &notes);
        assert_eq!(
            note_values(&described),
            ["\"acme. Frozen\"", "10", "\"Sales\", \"Ops\""]
        );
        let merged_only = with_notes("Queries a database.", &notes[2..]);
        assert_eq!(note_values(&merged_only), ["\"Sales\", \"Ops\""]);
    }

    #[test]
    fn a_description_without_notes_has_no_note_values() {
        assert!(note_values("Lists issues.").is_empty());
        assert!(note_values("Lists issues.\n\nSee the docs.").is_empty());
        assert!(note_values("Lists issues.\n\nFrozen: owner").is_empty());
        assert!(note_values("Lists issues.\n\nFrozen: owner = \"acme\"").is_empty());
        assert!(note_values("Lists issues.\n\nSet connection to one of: \"A\"").is_empty());
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
