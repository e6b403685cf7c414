//! The per-tenant policy document: roles → restrictions, with optional per-member overrides.
//!
//! A policy only means something next to the catalog it restricts, so it is validated against
//! that catalog: an id or exact tool name the catalog does not have is an error with its path,
//! a frozen value must fit the argument it freezes, a path prefix must stay inside its
//! connector's base path. The resolver then asks [`Access`] yes/no questions and never reads
//! the document itself.
//!
//! Combining rules: within one restriction set, an item is allowed when it matches `allow`
//! (or `allow` is absent and the default applies) and matches no `deny` — deny wins. A member
//! override is a second set that can only narrow: an item must pass both the role and the
//! override. Frozen values of the override take precedence over the role's.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::catalog::{
    check_schema_version, expect_array, expect_strings, is_valid_base_path, is_valid_id, kind_of,
    parse_json, path_has_prefix, quote, read_id, Catalog, Connector, DocumentErrors, Fields,
    JsonPath, Problems, ID_RULE,
};
use crate::names::{ControlOpKind, CONNECTION_ARGUMENT};
use crate::schema::check_value;

/// An exact name or a glob where `*` matches any run of characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern(String);

impl Pattern {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_glob(&self) -> bool {
        self.0.contains('*')
    }

    pub fn matches(&self, name: &str) -> bool {
        glob_matches(self.0.as_bytes(), name.as_bytes())
    }
}

/// Iterative glob matching with backtracking to the last `*`: linear in practice, no recursion.
fn glob_matches(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

/// Allow and deny lists over one kind of name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// `None`: the default of the layer applies (see [`Access`]).
    pub allow: Option<Vec<Pattern>>,
    pub deny: Vec<Pattern>,
}

impl Filter {
    fn decides(&self, name: &str, allowed_by_default: bool) -> bool {
        let allowed = match &self.allow {
            None => allowed_by_default,
            Some(patterns) => patterns.iter().any(|p| p.matches(name)),
        };
        allowed && !self.deny.iter().any(|p| p.matches(name))
    }
}

/// A fixed value for one argument of the tools a pattern matches.
#[derive(Debug, Clone, PartialEq)]
pub struct FrozenRule {
    pub tool: Pattern,
    /// Only for calls through this connection; `None` for every connection.
    pub connection: Option<String>,
    pub field: String,
    pub value: Value,
}

/// Outbound paths of one connector must start with one of `prefixes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRule {
    pub connector: String,
    pub prefixes: Vec<String>,
}

/// What a role (or a member override) may see and do.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Restrictions {
    pub connectors: Filter,
    pub connections: Filter,
    pub tools: Filter,
    pub connect: Filter,
    pub control: Filter,
    pub frozen: Vec<FrozenRule>,
    pub paths: Vec<PathRule>,
}

/// A validated policy.
#[derive(Debug, Clone)]
pub struct Policy {
    pub tenant: String,
    roles: BTreeMap<String, Restrictions>,
    members: BTreeMap<String, Restrictions>,
    document: Value,
}

/// A member's role is not one the policy defines. The shell decides how to answer (the member
/// gets a clear error; nothing is visible to them meanwhile).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRole {
    pub role: String,
}

impl fmt::Display for UnknownRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "role {} is not defined in this tenant's policy; ask an administrator to add it or change the member's role",
            quote(&self.role)
        )
    }
}

impl std::error::Error for UnknownRole {}

impl Policy {
    /// The role names this policy defines.
    pub fn roles(&self) -> impl Iterator<Item = &str> {
        self.roles.keys().map(String::as_str)
    }

    /// Parses a policy and validates it against the tenant's catalog.
    pub fn parse(text: &str, catalog: &Catalog) -> Result<Policy, DocumentErrors> {
        Self::from_value(&parse_json(text, "policy")?, catalog)
    }

    pub fn from_value(value: &Value, catalog: &Catalog) -> Result<Policy, DocumentErrors> {
        let mut problems = Problems::default();
        let root = JsonPath::root();
        let Some(fields) = Fields::of(
            value,
            &root,
            &["schema", "tenant", "roles", "members"],
            &mut problems,
        ) else {
            return Err(problems.into_errors("policy"));
        };
        check_schema_version(&fields, &mut problems);
        let tenant = read_id(&fields, "tenant", &mut problems);
        if let Some(tenant) = tenant {
            if tenant != catalog.tenant {
                problems.push(
                    &fields.path("tenant"),
                    format!(
                        "policy is for tenant {} but the catalog is for tenant {}",
                        quote(tenant),
                        quote(&catalog.tenant)
                    ),
                );
            }
        }
        let mut roles = BTreeMap::new();
        if let Some(value) = fields.required("roles", &mut problems) {
            let path = fields.path("roles");
            match value {
                Value::Object(map) => {
                    for (name, body) in map {
                        let at = path.field(name);
                        if !is_valid_id(name) {
                            problems
                                .push(&at, format!("invalid role name {}: {ID_RULE}", quote(name)));
                            continue;
                        }
                        if let Some(r) = parse_restrictions(body, &at, catalog, &mut problems) {
                            roles.insert(name.clone(), r);
                        }
                    }
                }
                other => {
                    problems.push(&path, format!("expected an object, got {}", kind_of(other)))
                }
            }
        }
        let mut members = BTreeMap::new();
        if let Some(value) = fields.optional("members") {
            let path = fields.path("members");
            match value {
                Value::Object(map) => {
                    for (id, body) in map {
                        let at = path.field(id);
                        if id.is_empty() || id.len() > 128 || id.chars().any(char::is_control) {
                            problems.push(
                                &at,
                                "invalid member id: use 1-128 characters with no control characters",
                            );
                            continue;
                        }
                        if let Some(r) = parse_restrictions(body, &at, catalog, &mut problems) {
                            members.insert(id.clone(), r);
                        }
                    }
                }
                other => {
                    problems.push(&path, format!("expected an object, got {}", kind_of(other)))
                }
            }
        }
        let policy = Policy {
            tenant: tenant.unwrap_or_default().to_owned(),
            roles,
            members,
            document: value.clone(),
        };
        problems.into_result("policy", policy)
    }

    pub fn role_names(&self) -> impl Iterator<Item = &str> {
        self.roles.keys().map(String::as_str)
    }

    pub fn role(&self, name: &str) -> Result<&Restrictions, UnknownRole> {
        self.roles.get(name).ok_or_else(|| UnknownRole {
            role: name.to_owned(),
        })
    }

    pub fn member_override(&self, member: &str) -> Option<&Restrictions> {
        self.members.get(member)
    }

    /// The effective restrictions of one member.
    pub fn access(&self, member: &str, role: &str) -> Result<Access, UnknownRole> {
        Ok(Access {
            role: self.role(role)?.clone(),
            member: self.member_override(member).cloned(),
        })
    }

    /// The document as it was written (for `view_policy`).
    pub fn document(&self) -> &Value {
        &self.document
    }
}

/// The restrictions in force for one member: their role, narrowed by their override.
///
/// Defaults when a role says nothing: no connector is visible, every connection and tool of a
/// visible connector is, no connector may be connected, and every non-admin control operation
/// is visible (admin operations must be allowed by name or glob).
#[derive(Debug, Clone, PartialEq)]
pub struct Access {
    role: Restrictions,
    member: Option<Restrictions>,
}

impl Access {
    fn layers(&self) -> impl Iterator<Item = (&Restrictions, bool)> {
        std::iter::once((&self.role, true)).chain(self.member.iter().map(|m| (m, false)))
    }

    fn check(&self, pick: fn(&Restrictions) -> &Filter, name: &str, role_default: bool) -> bool {
        self.layers().all(|(layer, is_role)| {
            pick(layer).decides(name, if is_role { role_default } else { true })
        })
    }

    pub fn allows_connector(&self, id: &str) -> bool {
        self.check(|r| &r.connectors, id, false)
    }

    pub fn allows_connection(&self, id: &str) -> bool {
        self.check(|r| &r.connections, id, true)
    }

    pub fn allows_tool(&self, name: &str) -> bool {
        self.check(|r| &r.tools, name, true)
    }

    pub fn allows_connect(&self, connector: &str) -> bool {
        self.check(|r| &r.connect, connector, false)
    }

    pub fn allows_control(&self, op: ControlOpKind) -> bool {
        let name = op.name();
        self.layers().all(|(layer, is_role)| {
            let filter = &layer.control;
            let allowed = match &filter.allow {
                None => !is_role || !op.is_admin(),
                Some(patterns) => patterns.iter().any(|p| p.matches(name)),
            };
            allowed && !filter.deny.iter().any(|p| p.matches(name))
        })
    }

    /// Whether no rule of the member's or the role's freezes any argument: then every
    /// [`Access::frozen_for`] is empty, and a view need not ask per tool and connection.
    pub fn freezes_nothing(&self) -> bool {
        self.layers().all(|(layer, _)| layer.frozen.is_empty())
    }

    /// The frozen arguments of a tool when called through `connection`, by precedence: the
    /// member's rules over the role's, a connection-specific rule over a general one, an exact
    /// tool name over a glob, then the first in document order.
    pub fn frozen_for(&self, tool: &str, connection: &str) -> BTreeMap<String, Value> {
        let mut best: BTreeMap<String, ((u8, u8, u8), &Value)> = BTreeMap::new();
        for (layer, is_role) in self.layers() {
            for rule in &layer.frozen {
                if !rule.tool.matches(tool)
                    || rule.connection.as_deref().is_some_and(|c| c != connection)
                {
                    continue;
                }
                let rank = (
                    u8::from(!is_role),
                    u8::from(rule.connection.is_some()),
                    u8::from(!rule.tool.is_glob()),
                );
                match best.get(&rule.field) {
                    Some((existing, _)) if *existing >= rank => {}
                    _ => {
                        best.insert(rule.field.clone(), (rank, &rule.value));
                    }
                }
            }
        }
        best.into_iter()
            .map(|(field, (_, value))| (field, value.clone()))
            .collect()
    }

    /// Prefix sets an outbound path of `connector` must satisfy: one of each set.
    pub fn path_prefixes(&self, connector: &str) -> Vec<&[String]> {
        self.layers()
            .flat_map(|(layer, _)| layer.paths.iter())
            .filter(|rule| rule.connector == connector)
            .map(|rule| rule.prefixes.as_slice())
            .collect()
    }
}

/// What kind of name a filter holds, for validating its entries.
#[derive(Clone, Copy)]
enum NameKind {
    Connector,
    Connection,
    Tool,
    Control,
}

fn parse_restrictions(
    value: &Value,
    path: &JsonPath,
    catalog: &Catalog,
    problems: &mut Problems,
) -> Option<Restrictions> {
    const FIELDS: &[&str] = &[
        "connectors",
        "connections",
        "tools",
        "connect",
        "control",
        "frozen",
        "paths",
    ];
    let fields = Fields::of(value, path, FIELDS, problems)?;
    let filter = |key: &str, kind: NameKind, problems: &mut Problems| match fields.optional(key) {
        None => Filter::default(),
        Some(v) => parse_filter(v, &fields.path(key), kind, catalog, problems),
    };
    let mut restrictions = Restrictions {
        connectors: filter("connectors", NameKind::Connector, problems),
        connections: filter("connections", NameKind::Connection, problems),
        tools: filter("tools", NameKind::Tool, problems),
        connect: filter("connect", NameKind::Connector, problems),
        control: filter("control", NameKind::Control, problems),
        ..Restrictions::default()
    };
    if let Some(v) = fields.optional("frozen") {
        let list_path = fields.path("frozen");
        for (i, item) in expect_array(v, &list_path, problems)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            if let Some(rule) = parse_frozen(item, &list_path.index(i), catalog, problems) {
                restrictions.frozen.push(rule);
            }
        }
    }
    if let Some(v) = fields.optional("paths") {
        let list_path = fields.path("paths");
        for (i, item) in expect_array(v, &list_path, problems)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            if let Some(rule) = parse_path_rule(item, &list_path.index(i), catalog, problems) {
                restrictions.paths.push(rule);
            }
        }
    }
    Some(restrictions)
}

fn parse_filter(
    value: &Value,
    path: &JsonPath,
    kind: NameKind,
    catalog: &Catalog,
    problems: &mut Problems,
) -> Filter {
    let Some(fields) = Fields::of(value, path, &["allow", "deny"], problems) else {
        return Filter::default();
    };
    let mut read = |key: &str| -> Option<Vec<Pattern>> {
        let entries = fields.optional_strings(key, problems)?;
        Some(
            entries
                .into_iter()
                .filter_map(|(at, text)| parse_pattern(text, &at, kind, catalog, problems))
                .collect(),
        )
    };
    Filter {
        allow: read("allow"),
        deny: read("deny").unwrap_or_default(),
    }
}

fn parse_pattern(
    text: &str,
    path: &JsonPath,
    kind: NameKind,
    catalog: &Catalog,
    problems: &mut Problems,
) -> Option<Pattern> {
    let allowed_byte = |b: u8| match kind {
        NameKind::Tool => b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'*',
        _ => b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-' || b == b'*',
    };
    if text.is_empty() || text.len() > 128 || !text.bytes().all(allowed_byte) {
        let chars = match kind {
            NameKind::Tool => "A-Z, a-z, 0-9, \"_\", \"-\"",
            _ => "a-z, 0-9, \"_\", \"-\"",
        };
        problems.push(
            path,
            format!(
                "invalid pattern {}: use an exact name or a glob of {chars} and \"*\"",
                quote(text)
            ),
        );
        return None;
    }
    let pattern = Pattern(text.to_owned());
    if !pattern.is_glob() {
        let known = match kind {
            NameKind::Connector => catalog.connector(text).is_some(),
            NameKind::Connection => catalog.connection(text).is_some(),
            NameKind::Tool => catalog.has_tool(text),
            NameKind::Control => ControlOpKind::from_name(text).is_some(),
        };
        if !known {
            let message = match kind {
                NameKind::Connector => format!("unknown connector {}", quote(text)),
                NameKind::Connection => format!("unknown connection {}", quote(text)),
                NameKind::Tool => format!("unknown tool {}", quote(text)),
                NameKind::Control => {
                    let names: Vec<&str> = ControlOpKind::ALL.iter().map(|k| k.name()).collect();
                    format!(
                        "unknown control operation {} (expected one of: {})",
                        quote(text),
                        names.join(", ")
                    )
                }
            };
            problems.push(path, message);
            return None;
        }
    }
    Some(pattern)
}

fn parse_frozen(
    value: &Value,
    path: &JsonPath,
    catalog: &Catalog,
    problems: &mut Problems,
) -> Option<FrozenRule> {
    let fields = Fields::of(
        value,
        path,
        &["tool", "connection", "field", "value"],
        problems,
    )?;
    let tool = fields
        .required_str("tool", problems)
        .and_then(|t| parse_pattern(t, &fields.path("tool"), NameKind::Tool, catalog, problems));
    let connection = fields.optional_str("connection", problems).and_then(|id| {
        let found = catalog.connection(id);
        if found.is_none() {
            problems.push(
                &fields.path("connection"),
                format!("unknown connection {}", quote(id)),
            );
        }
        found
    });
    let field = fields.required_str("field", problems).and_then(|f| {
        if f.is_empty() {
            problems.push(&fields.path("field"), "must not be empty");
            None
        } else if f == CONNECTION_ARGUMENT {
            problems.push(
                &fields.path("field"),
                "\"connection\" is chosen by the caller among visible accounts and cannot be frozen; restrict connections instead",
            );
            None
        } else {
            Some(f)
        }
    });
    let value = fields.required("value", problems);
    let (tool, field, value) = (tool?, field?, value?);

    // The rule must freeze a real argument of at least one tool, and fit each one it freezes.
    let mut matched = 0;
    let before = problems.len();
    for (connector, def) in catalog.tools() {
        if !tool.matches(&def.name) {
            continue;
        }
        if let Some(connection) = connection {
            if connection.connector != connector.id {
                if !tool.is_glob() {
                    problems.push(
                        &fields.path("connection"),
                        format!(
                            "connection {} is an account of connector {}, not of {} (the tool's connector)",
                            quote(&connection.id),
                            quote(&connection.connector),
                            quote(&connector.id)
                        ),
                    );
                }
                continue;
            }
        }
        let property = def
            .input_schema
            .get("properties")
            .and_then(|p| p.get(field));
        let Some(property) = property else {
            if !tool.is_glob() {
                problems.push(
                    &fields.path("field"),
                    format!("tool {} has no argument {}", quote(&def.name), quote(field)),
                );
            }
            continue;
        };
        matched += 1;
        if let Err(error) = check_value(
            &def.input_schema,
            property,
            value,
            &JsonPath::root().field(field),
        ) {
            problems.push(
                &fields.path("value"),
                format!(
                    "does not fit argument {} of tool {}: {}",
                    quote(field),
                    quote(&def.name),
                    error.message
                ),
            );
        }
    }
    if matched == 0 && problems.len() == before {
        problems.push(
            path,
            format!(
                "no tool matching {} has an argument {}",
                quote(tool.as_str()),
                quote(field)
            ),
        );
    }
    (problems.len() == before).then(|| FrozenRule {
        tool,
        connection: connection.map(|c| c.id.clone()),
        field: field.to_owned(),
        value: value.clone(),
    })
}

fn parse_path_rule(
    value: &Value,
    path: &JsonPath,
    catalog: &Catalog,
    problems: &mut Problems,
) -> Option<PathRule> {
    let fields = Fields::of(value, path, &["connector", "prefixes"], problems)?;
    let connector: Option<&Connector> = fields.required_str("connector", problems).and_then(|id| {
        let found = catalog.connector(id).map(|c| c.as_ref());
        if found.is_none() {
            problems.push(
                &fields.path("connector"),
                format!("unknown connector {}", quote(id)),
            );
        }
        found
    });
    let prefixes_path = fields.path("prefixes");
    let prefixes = fields
        .required("prefixes", problems)
        .map(|v| expect_strings(v, &prefixes_path, problems));
    let (connector, prefixes) = (connector?, prefixes?);
    if prefixes.is_empty() {
        problems.push(
            &prefixes_path,
            "must list at least one prefix (deny the connector to block it entirely)",
        );
        return None;
    }
    let before = problems.len();
    for (at, prefix) in &prefixes {
        if !is_valid_base_path(prefix) || prefix.is_empty() {
            problems.push(
                at,
                format!(
                    "invalid path prefix {}: use \"/segment/...\" with no trailing \"/\", no \".\" or \"..\" segments, no query or %",
                    quote(prefix)
                ),
            );
        } else if !path_has_prefix(prefix, &connector.base_path) {
            problems.push(
                at,
                format!(
                    "prefix {} is outside the base path {} of connector {}",
                    quote(prefix),
                    quote(&connector.base_path),
                    quote(&connector.id)
                ),
            );
        }
    }
    (problems.len() == before).then(|| PathRule {
        connector: connector.id.clone(),
        prefixes: prefixes.into_iter().map(|(_, p)| p.to_owned()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        let p = |s: &str| Pattern(s.to_owned());
        assert!(p("*").matches("anything"));
        assert!(p("linear_*").matches("linear_get_issues"));
        assert!(!p("linear_*").matches("notion_get"));
        assert!(p("*delete*").matches("cal_delete_a_schedule"));
        assert!(p("a*b*c").matches("aXbYc"));
        assert!(!p("a*b*c").matches("aXbY"));
        assert!(p("exact").matches("exact"));
        assert!(!p("exact").matches("exact2"));
    }

    #[test]
    fn prefixes_are_segment_aware() {
        assert!(path_has_prefix("/v1/repos/acme/x", "/v1/repos/acme"));
        assert!(path_has_prefix("/v1/repos/acme", "/v1/repos/acme"));
        assert!(!path_has_prefix("/v1/repos/acme-evil/x", "/v1/repos/acme"));
        assert!(path_has_prefix("/anything", ""));
    }
}
