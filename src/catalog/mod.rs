//! The connector directory and a tenant's catalog, parsed once into validated types.
//!
//! Both documents come from KV as raw JSON written by an operator. They are checked here in
//! full (every problem is reported with its path, nothing is half-applied) and turned into types
//! the resolver can trust without re-checking: ids are well-formed, tool names are unique within
//! the tenant, every connection names a connector the tenant has, every origin is exact.
//!
//! The directory is deployment-wide public knowledge; a catalog references its connectors by id
//! and shares them (`Arc`) instead of copying them per tenant.

mod compiled;
mod connector;
mod doc;
pub mod host;
pub mod oauth_client;
mod origin;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;

pub use crate::accounts::AccountKind;

pub use compiled::CompiledCatalogError;
pub use connector::{
    destroys, is_valid_tool_name, ArgPlace, AuthScheme, Connector, ConnectorSource, Operation,
    ToolDef, ToolOperation,
};
pub use doc::{kind_of, DocumentError, DocumentErrors, JsonPath};
pub use origin::{path_has_prefix, Method, Origin, OriginRules, PathPart, Scheme};

pub(crate) use doc::{
    check_schema_version, expect_array, expect_str, is_valid_id, parse_json, parse_json_as, quote,
    read_id, Fields, Problems, ID_RULE,
};
// Shared with the policy document: string lists and the base-path rule for path prefixes.
pub(crate) use doc::expect_strings;
pub(crate) use origin::{is_loopback_host, is_valid_base_path, parse_port, split_host_port};

/// The deployment's connector directory: every connector this gateway offers.
#[derive(Debug, Clone, Default)]
pub struct Directory {
    connectors: Vec<Arc<Connector>>,
    by_id: BTreeMap<String, usize>,
    /// The length of the text it was parsed from (what its prepared copy's memory is weighed by).
    text_bytes: usize,
}

/// The directory's list of connectors.
const DIRECTORY_CONNECTORS: &str = "connectors";

impl Directory {
    /// Parses and validates a directory document.
    pub fn parse(text: &str) -> Result<Directory, DocumentErrors> {
        Self::parse_with(text, OriginRules::STORED)
    }

    /// Parses a directory being written, under the deployment's origin rules. Its connectors
    /// are parsed one at a time from their text, as a catalog's private connectors are.
    pub fn parse_with(text: &str, rules: OriginRules) -> Result<Directory, DocumentErrors> {
        let (root, list) = split_list_field(text, DIRECTORY_CONNECTORS, "directory")?;
        let mut directory = Self::build(root, list, rules)?;
        directory.text_bytes = text.len();
        Ok(directory)
    }

    pub fn from_value(value: &Value) -> Result<Directory, DocumentErrors> {
        Self::from_value_with(value, OriginRules::STORED)
    }

    pub fn from_value_with(value: &Value, rules: OriginRules) -> Result<Directory, DocumentErrors> {
        let mut root = value.clone();
        let list = root
            .as_object_mut()
            .and_then(|fields| fields.remove(DIRECTORY_CONNECTORS))
            .map(RawList::Parsed);
        let mut directory = Self::build(root, list, rules)?;
        directory.text_bytes = value.to_string().len();
        Ok(directory)
    }

    /// The length of the directory's text (compact JSON for one built from a value).
    pub fn text_bytes(&self) -> usize {
        self.text_bytes
    }

    /// The checks of a directory: its root fields in `document`, its connectors (taken out of
    /// it) in `list`.
    fn build(
        mut document: Value,
        list: Option<RawList<'_>>,
        rules: OriginRules,
    ) -> Result<Directory, DocumentErrors> {
        // The list is required: an empty one stands in its place for the checks of the root.
        if list.is_some() {
            if let Some(fields) = document.as_object_mut() {
                fields.insert(DIRECTORY_CONNECTORS.into(), Value::Array(Vec::new()));
            }
        }
        let mut problems = Problems::default();
        let root = JsonPath::root();
        let known = &["schema", DIRECTORY_CONNECTORS];
        let Some(fields) = Fields::of(&document, &root, known, &mut problems) else {
            return Err(problems.into_errors("directory"));
        };
        check_schema_version(&fields, &mut problems);
        let mut directory = Directory::default();
        let list_path = fields.path(DIRECTORY_CONNECTORS);
        fields.required(DIRECTORY_CONNECTORS, &mut problems);
        let items = list.map(|l| l.items(&list_path, &mut problems));
        for (i, item) in items.into_iter().flatten().enumerate() {
            let at = list_path.index(i);
            let item = match item {
                Ok(item) => item,
                Err(error) => {
                    problems.push(&at, format!("not valid JSON: {error}"));
                    continue;
                }
            };
            let Some(connector) = connector::parse_connector(
                &item,
                &at,
                ConnectorSource::Directory,
                rules,
                &mut problems,
            ) else {
                continue;
            };
            if let Some(&first) = directory.by_id.get(&connector.id) {
                problems.push(
                    &at.field("id"),
                    format!(
                        "duplicate connector id {} (first defined at {})",
                        quote(&connector.id),
                        list_path.index(first)
                    ),
                );
                continue;
            }
            directory.by_id.insert(connector.id.clone(), i);
            directory.connectors.push(Arc::new(connector));
        }
        // `by_id` must index into `connectors`, which skips invalid entries.
        directory.by_id = directory
            .connectors
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id.clone(), i))
            .collect();
        problems.into_result("directory", directory)
    }

    pub fn connectors(&self) -> &[Arc<Connector>] {
        &self.connectors
    }

    pub fn connector(&self, id: &str) -> Option<&Arc<Connector>> {
        self.by_id.get(id).map(|&i| &self.connectors[i])
    }
}

/// Whether a connection may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionStatus {
    Active,
    /// Kept in the catalog (and visible when browsing) but never advertised or executed.
    Disabled,
}

impl ConnectionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionStatus::Active => "active",
            ConnectionStatus::Disabled => "disabled",
        }
    }
}

/// A connected account of one connector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub id: String,
    /// The id of a connector of the same catalog.
    pub connector: String,
    /// Shown to members and used as the `connection` value of merged tools.
    pub label: String,
    /// The name of the Worker secret holding the credential; `None` for `auth: none`, for a
    /// personal connection (each member's own account is in the tenant's roster, sealed) and
    /// for a shared one whose account only a tenant admin sets (sealed in the roster too).
    pub credential: Option<String>,
    pub status: ConnectionStatus,
    /// Whose account a call uses: the connection's one (shared) or the caller's (personal).
    pub account: AccountKind,
}

/// Where a tool lives in a catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolRef {
    pub connector: usize,
    pub tool: usize,
}

/// A tenant's catalog: its connectors (directory or private) and its connections.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub tenant: String,
    connectors: Vec<Arc<Connector>>,
    connections: Vec<Connection>,
    tools: ToolsByName,
}

/// Every tool of a catalog by its tenant-unique name: places sorted by the name they hold,
/// which is read from the connectors, so a copy read back from a snapshot copies no key.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolsByName(Vec<ToolRef>);

impl ToolsByName {
    /// Places in an order already made (a compiled catalog's): checked, not sorted, in one
    /// pass — each in bounds, every tool once, each name after the one before.
    pub(crate) fn from_sorted(
        connectors: &[Arc<Connector>],
        places: Vec<ToolRef>,
    ) -> Option<ToolsByName> {
        let name = |r: &ToolRef| {
            connectors
                .get(r.connector)
                .and_then(|c| c.tools.get(r.tool))
                .map(|t| &*t.name)
        };
        let total: usize = connectors.iter().map(|c| c.tools.len()).sum();
        let mut last: Option<&str> = None;
        for r in &places {
            let n = name(r)?;
            if last.is_some_and(|l| l >= n) {
                return None;
            }
            last = Some(n);
        }
        // Strictly increasing names in bounds are distinct places; as many as there are tools,
        // they are every tool.
        (places.len() == total).then_some(ToolsByName(places))
    }

    /// The places in name order.
    pub(crate) fn places(&self) -> &[ToolRef] {
        &self.0
    }

    fn find(&self, connectors: &[Arc<Connector>], name: &str) -> Option<ToolRef> {
        self.0
            .binary_search_by(|r| (*connectors[r.connector].tools[r.tool].name).cmp(name))
            .ok()
            .map(|i| self.0[i])
    }
}

/// Worker secret names: like environment variables.
pub fn is_valid_secret_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && (bytes[0].is_ascii_alphabetic() || bytes[0] == b'_')
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The start of every credential name tenant `tenant` may use: `T_<TENANT>__`, where `<TENANT>`
/// is the tenant id in capitals with `-` written `_H` and `_` written `_U` (`acme` → `T_ACME__`,
/// `big-co` → `T_BIG_HCO__`). Every `_` of `<TENANT>` is followed by `H` or `U`, so `__` first
/// occurs where `<TENANT>` ends: a name belongs to exactly one tenant, and no tenant's names
/// start another's (`acme` cannot name `T_ACME_HX__TOKEN`, which is `acme-x`'s).
pub fn credential_prefix(tenant: &str) -> String {
    let mut prefix = String::with_capacity(tenant.len() * 2 + 4);
    prefix.push_str("T_");
    for c in tenant.chars() {
        match c {
            '-' => prefix.push_str("_H"),
            '_' => prefix.push_str("_U"),
            c => prefix.push(c.to_ascii_uppercase()),
        }
    }
    prefix.push_str("__");
    prefix
}

/// Why `name` cannot be a credential of `tenant`, or `None` when it can: a well-formed secret
/// name, not one of the gateway's own bindings, and inside the tenant's prefix with something
/// after it. Checked when a catalog is written and again before a secret is read for a call.
pub fn credential_problem(tenant: &str, name: &str) -> Option<String> {
    let prefix = credential_prefix(tenant);
    if !is_valid_secret_name(name) {
        Some(invalid_secret_name(name, &prefix))
    } else if crate::binding::is_reserved(name) {
        Some(format!(
            "secret {} is one of the gateway's own bindings and can never be a credential",
            quote(name)
        ))
    } else if name.strip_prefix(&prefix).is_none_or(str::is_empty) {
        Some(format!(
            "secret {} is not tenant {}'s: its credentials are named {prefix}<NAME> (like {prefix}NOTION_TOKEN)",
            quote(name),
            quote(tenant)
        ))
    } else {
        None
    }
}

fn invalid_secret_name(name: &str, prefix: &str) -> String {
    format!(
        "invalid secret name {}: use letters, digits and \"_\", not starting with a digit (like {prefix}NOTION_TOKEN)",
        quote(name)
    )
}

fn label_problem(label: &str) -> Option<&'static str> {
    if label.trim().is_empty() {
        Some("must not be empty")
    } else if label.chars().count() > 64 {
        Some("must be at most 64 characters")
    } else if label.trim() != label {
        Some("must not start or end with whitespace")
    } else if label
        .chars()
        .any(|c| c.is_control() || c == '"' || c == '\\')
    {
        Some("must not contain control characters, '\"' or '\\'")
    } else {
        None
    }
}

impl Catalog {
    /// Parses and validates a tenant's catalog against the deployment's directory.
    pub fn parse(text: &str, directory: &Directory) -> Result<Catalog, DocumentErrors> {
        Self::from_text(text, directory, None, OriginRules::STORED)
    }

    /// Parses a catalog stored (or being stored) for `tenant` under `rules`: its `tenant` field
    /// must say so, and its credentials are judged as that tenant's whatever the field says.
    pub fn parse_stored(
        text: &str,
        directory: &Directory,
        tenant: &str,
        rules: OriginRules,
    ) -> Result<Catalog, DocumentErrors> {
        Self::from_text(text, directory, Some(tenant), rules)
    }

    pub fn from_value(value: &Value, directory: &Directory) -> Result<Catalog, DocumentErrors> {
        Self::from_owned(value.clone(), directory, None, OriginRules::STORED)
    }

    /// Private connectors hold nearly all of a large catalog's bytes, so they are left as text
    /// when the document is read and each is parsed only when its turn comes: a 10,000-tool
    /// catalog is never one parsed tree (~7 times its text), only one connector at a time.
    fn from_text(
        text: &str,
        directory: &Directory,
        stored_for: Option<&str>,
        rules: OriginRules,
    ) -> Result<Catalog, DocumentErrors> {
        let (root, private) = split_list_field(text, "private_connectors", "catalog")?;
        Self::build(&root, private, directory, stored_for, rules)
    }

    fn from_owned(
        mut value: Value,
        directory: &Directory,
        stored_for: Option<&str>,
        rules: OriginRules,
    ) -> Result<Catalog, DocumentErrors> {
        let private = value
            .as_object_mut()
            .and_then(|root| root.remove("private_connectors"))
            .map(RawList::Parsed);
        Self::build(&value, private, directory, stored_for, rules)
    }

    fn build(
        value: &Value,
        private: Option<RawList<'_>>,
        directory: &Directory,
        stored_for: Option<&str>,
        rules: OriginRules,
    ) -> Result<Catalog, DocumentErrors> {
        const FIELDS: &[&str] = &[
            "schema",
            "tenant",
            "connectors",
            "private_connectors",
            "connections",
        ];
        let mut problems = Problems::default();
        let root = JsonPath::root();
        let Some(fields) = Fields::of(value, &root, FIELDS, &mut problems) else {
            return Err(problems.into_errors("catalog"));
        };
        check_schema_version(&fields, &mut problems);
        let tenant = read_id(&fields, "tenant", &mut problems);
        if let (Some(found), Some(expected)) = (tenant, stored_for) {
            if found != expected {
                problems.push(
                    &fields.path("tenant"),
                    format!(
                        "is {} but the document is stored for tenant {}",
                        quote(found),
                        quote(expected)
                    ),
                );
            }
        }
        // Credentials belong to the tenant the document is stored for.
        let owner = stored_for.or(tenant);

        // (connector, where it was named) for collision messages.
        let mut connectors: Vec<(Arc<Connector>, JsonPath)> = Vec::new();
        if let Some(refs) = fields.optional("connectors") {
            let list_path = fields.path("connectors");
            for (i, item) in expect_array(refs, &list_path, &mut problems)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                let at = list_path.index(i);
                let Some(id) = expect_str(item, &at, &mut problems) else {
                    continue;
                };
                match directory.connector(id) {
                    None => {
                        problems.push(&at, format!("unknown directory connector {}", quote(id)))
                    }
                    Some(_) if connectors.iter().any(|(c, _)| c.id == id) => {
                        problems.push(&at, format!("connector {} is listed twice", quote(id)))
                    }
                    Some(connector) => connectors.push((Arc::clone(connector), at)),
                }
            }
        }
        // What is left of each private connector after parsing (names kept, for error paths).
        let mut private_skeletons: Vec<Value> = Vec::new();
        // Ids of private connectors that failed to parse: their own problems are reported, so
        // connections naming them are not also called "unknown".
        let mut broken_ids: Vec<String> = Vec::new();
        if let Some(private) = private {
            let list_path = fields.path("private_connectors");
            for (i, item) in private.items(&list_path, &mut problems).enumerate() {
                let at = list_path.index(i);
                let mut item = match item {
                    Ok(item) => item,
                    Err(error) => {
                        problems.push(&at, format!("not valid JSON: {error}"));
                        private_skeletons.push(Value::Null);
                        continue;
                    }
                };
                let parsed = connector::parse_connector(
                    &item,
                    &at,
                    ConnectorSource::Private,
                    rules,
                    &mut problems,
                );
                drop_all_but_tool_names(&mut item);
                if parsed.is_none() {
                    if let Some(id) = item.get("id").and_then(Value::as_str) {
                        broken_ids.push(id.to_owned());
                    }
                }
                private_skeletons.push(item);
                let Some(connector) = parsed else {
                    continue;
                };
                if directory.connector(&connector.id).is_some() {
                    problems.push(
                        &at.field("id"),
                        format!(
                            "connector id {} is already a directory connector (reference it in connectors instead)",
                            quote(&connector.id)
                        ),
                    );
                } else if let Some((_, first)) =
                    connectors.iter().find(|(c, _)| c.id == connector.id)
                {
                    problems.push(
                        &at.field("id"),
                        format!(
                            "duplicate connector id {} (first defined at {first})",
                            quote(&connector.id)
                        ),
                    );
                } else {
                    connectors.push((Arc::new(connector), at));
                }
            }
        }

        let mut tools: BTreeMap<String, ToolRef> = BTreeMap::new();
        for (ci, (connector, at)) in connectors.iter().enumerate() {
            for (ti, tool) in connector.tools.iter().enumerate() {
                if let Some(existing) = tools.get(&*tool.name) {
                    let owner = &connectors[existing.connector].0.id;
                    let message = format!(
                        "tool {} of connector {} is also defined by connector {} (tool names must be unique within a tenant)",
                        quote(&tool.name),
                        quote(&connector.id),
                        quote(owner)
                    );
                    let path = match connector.source {
                        ConnectorSource::Directory => at.clone(),
                        ConnectorSource::Private => {
                            raw_tool_index(&private_skeletons, at, &tool.name)
                                .unwrap_or_else(|| at.clone())
                        }
                    };
                    problems.push(&path, message);
                    continue;
                }
                tools.insert(
                    tool.name.to_string(),
                    ToolRef {
                        connector: ci,
                        tool: ti,
                    },
                );
            }
        }

        let mut connections: Vec<Connection> = Vec::new();
        if let Some(list) = fields.optional("connections") {
            let list_path = fields.path("connections");
            let mut first_id: BTreeMap<String, usize> = BTreeMap::new();
            let mut first_label: BTreeMap<(String, String), usize> = BTreeMap::new();
            for (i, item) in expect_array(list, &list_path, &mut problems)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                let at = list_path.index(i);
                let Some(connection) =
                    parse_connection(item, &at, owner, &connectors, &broken_ids, &mut problems)
                else {
                    continue;
                };
                if let Some(first) = first_id.get(&connection.id) {
                    problems.push(
                        &at.field("id"),
                        format!(
                            "duplicate connection id {} (first defined at {})",
                            quote(&connection.id),
                            list_path.index(*first)
                        ),
                    );
                    continue;
                }
                let label_key = (connection.connector.clone(), connection.label.clone());
                if let Some(first) = first_label.get(&label_key) {
                    problems.push(
                        &at.field("label"),
                        format!(
                            "duplicate label {} for connector {} (first used at {}); labels name the account in merged tools",
                            quote(&connection.label),
                            quote(&connection.connector),
                            list_path.index(*first)
                        ),
                    );
                    continue;
                }
                first_id.insert(connection.id.clone(), i);
                first_label.insert(label_key, i);
                connections.push(connection);
            }
        }

        let connectors: Vec<Arc<Connector>> = connectors.into_iter().map(|(c, _)| c).collect();
        // `tools` (a map) is sorted by name: its places are the lookup table as they are.
        let catalog = Catalog {
            tenant: tenant.unwrap_or_default().to_owned(),
            connectors,
            connections,
            tools: ToolsByName(tools.into_values().collect()),
        };
        problems.into_result("catalog", catalog)
    }

    /// The tenant's connectors: directory ones first (in the order listed), then private ones.
    pub fn connectors(&self) -> &[Arc<Connector>] {
        &self.connectors
    }

    pub fn connector(&self, id: &str) -> Option<&Arc<Connector>> {
        self.connectors.iter().find(|c| c.id == id)
    }

    pub fn connections(&self) -> &[Connection] {
        &self.connections
    }

    pub fn connection(&self, id: &str) -> Option<&Connection> {
        self.connections.iter().find(|c| c.id == id)
    }

    /// The connections of one connector, in document order.
    pub fn connections_of<'a>(
        &'a self,
        connector: &'a str,
    ) -> impl Iterator<Item = &'a Connection> {
        self.connections
            .iter()
            .filter(move |c| c.connector == connector)
    }

    /// A tool by its tenant-unique name, with the connector that defines it.
    pub fn tool(&self, name: &str) -> Option<(&Arc<Connector>, &ToolDef)> {
        let at = self.tools.find(&self.connectors, name)?;
        let connector = self.connectors.get(at.connector)?;
        Some((connector, connector.tools.get(at.tool)?))
    }

    /// Every tool of every connector, by connector in catalog order.
    pub fn tools(&self) -> impl Iterator<Item = (&Arc<Connector>, &ToolDef)> {
        self.connectors
            .iter()
            .flat_map(|c| c.tools.iter().map(move |t| (c, t)))
    }

    /// Whether any tool of the tenant has this exact name.
    pub fn has_tool(&self, name: &str) -> bool {
        self.tools.find(&self.connectors, name).is_some()
    }
}

/// A document's list of connectors (a directory's, a catalog's private ones): each one's text,
/// or (a document given as a value, or a field that is not a list) as parsed.
enum RawList<'a> {
    Text(Vec<&'a RawValue>),
    Parsed(Value),
}

impl<'a> RawList<'a> {
    /// The items, each parsed in its turn (a text item was checked as JSON with its document;
    /// one the parser still refuses, past its depth limit, is an error for its place). A list
    /// that is not one is a problem at `path`, and no items.
    fn items(
        self,
        path: &JsonPath,
        problems: &mut Problems,
    ) -> Box<dyn Iterator<Item = Result<Value, String>> + 'a> {
        match self {
            RawList::Text(items) => Box::new(items.into_iter().map(|raw| {
                serde_json::from_str(raw.get()).map_err(|e: serde_json::Error| e.to_string())
            })),
            RawList::Parsed(Value::Array(items)) => Box::new(items.into_iter().map(Ok)),
            RawList::Parsed(other) => {
                expect_array(&other, path, problems);
                Box::new(std::iter::empty())
            }
        }
    }
}

/// A document's text read as its root object with the list `field` taken out, each item of it
/// left as text: connectors hold nearly all of a large document's bytes, and parsed whole they
/// take ~7 times as much. Errors are the parser's, as `parse_json` reports them.
fn split_list_field<'a>(
    text: &'a str,
    field: &str,
    document: &'static str,
) -> Result<(Value, Option<RawList<'a>>), DocumentErrors> {
    let Ok(fields) = parse_json_as::<BTreeMap<String, &RawValue>>(text, document) else {
        // Not JSON, or not an object: parsed whole, the parser's error or the root's checks
        // say what it is, as for any document.
        let mut value = parse_json(text, document)?;
        let list = value.as_object_mut().and_then(|root| root.remove(field));
        return Ok((value, list.map(RawList::Parsed)));
    };
    let mut root = serde_json::Map::new();
    let mut list = None;
    for (name, raw) in fields {
        if name == field {
            list = Some(match parse_json_as::<Vec<&RawValue>>(raw.get(), document) {
                Ok(items) => RawList::Text(items),
                Err(_) => RawList::Parsed(parse_json(raw.get(), document)?),
            });
        } else {
            root.insert(name, parse_json(raw.get(), document)?);
        }
    }
    Ok((Value::Object(root), list))
}

/// What error paths need of a private connector once it is parsed: its tools' names, in
/// their places (the rest, schemas and descriptions, is most of a large catalog's bytes).
fn drop_all_but_tool_names(connector: &mut Value) {
    if let Some(tools) = connector.get_mut("tools").and_then(Value::as_array_mut) {
        for tool in tools {
            if let Some(fields) = tool.as_object_mut() {
                fields.retain(|field, _| field == "name");
            }
        }
    }
}

/// The path of `tools[j].name` inside a private connector, for a precise collision message.
fn raw_tool_index(private: &[Value], connector_path: &JsonPath, name: &str) -> Option<JsonPath> {
    let index: usize = connector_path
        .as_str()
        .strip_prefix("private_connectors[")?
        .strip_suffix(']')?
        .parse()
        .ok()?;
    let tools = private.get(index)?.get("tools")?.as_array()?;
    let j = tools
        .iter()
        .position(|t| t.get("name").and_then(Value::as_str) == Some(name))?;
    Some(connector_path.field("tools").index(j).field("name"))
}

fn parse_connection(
    value: &Value,
    path: &JsonPath,
    tenant: Option<&str>,
    connectors: &[(Arc<Connector>, JsonPath)],
    broken_ids: &[String],
    problems: &mut Problems,
) -> Option<Connection> {
    const FIELDS: &[&str] = &[
        "id",
        "connector",
        "label",
        "credential",
        "status",
        "account",
    ];
    let fields = Fields::of(value, path, FIELDS, problems)?;
    let id = read_id(&fields, "id", problems);
    let connector = fields.required_str("connector", problems).and_then(|id| {
        let found = connectors.iter().find(|(c, _)| c.id == id).map(|(c, _)| c);
        if found.is_none() && !broken_ids.iter().any(|b| b == id) {
            problems.push(
                &fields.path("connector"),
                format!("unknown connector {}", quote(id)),
            );
        }
        found
    });
    let label =
        fields
            .required_str("label", problems)
            .and_then(|label| match label_problem(label) {
                None => Some(label),
                Some(why) => {
                    problems.push(&fields.path("label"), why);
                    None
                }
            });
    let credential = fields.optional_str("credential", problems);
    // With no valid tenant id the ownership cannot be judged; that id's own problem is reported.
    let credential_problem = credential.and_then(|name| match tenant {
        Some(tenant) => credential_problem(tenant, name),
        None => (!is_valid_secret_name(name)).then(|| invalid_secret_name(name, "T_<TENANT>__")),
    });
    if let Some(problem) = &credential_problem {
        problems.push(&fields.path("credential"), problem.clone());
    }
    let account = match fields.optional_str("account", problems) {
        None => Some(AccountKind::Shared),
        Some(text) => match AccountKind::parse(text) {
            Some(kind) => Some(kind),
            None => {
                problems.push(
                    &fields.path("account"),
                    format!(
                        "unknown account kind {} (expected {} or {})",
                        quote(text),
                        quote(AccountKind::SHARED),
                        quote(AccountKind::PERSONAL)
                    ),
                );
                None
            }
        },
    };
    match (connector, account) {
        (Some(connector), Some(AccountKind::Personal)) => match (&connector.auth, credential) {
            (AuthScheme::None, _) => problems.push(
                &fields.path("account"),
                format!(
                    "connector {} uses no credential (auth scheme \"none\"), so there is no account to connect; remove this field",
                    quote(&connector.id)
                ),
            ),
            (_, Some(_)) => problems.push(
                &fields.path("credential"),
                "a personal connection uses each member's own account (connect_account); remove this field",
            ),
            (_, None) => {}
        },
        // A shared connection. Without a Worker secret, calls use the account a tenant admin
        // sets (`PUT …/connections/{c}/account` or `…/account/connect`); until then they are a
        // tool error that says so.
        (Some(connector), _) => {
            if connector.auth == AuthScheme::None && credential.is_some() {
                problems.push(
                    &fields.path("credential"),
                    format!(
                        "connector {} uses no credential (auth scheme \"none\"); remove this field",
                        quote(&connector.id)
                    ),
                );
            }
        }
        (None, _) => {}
    }
    let status = match fields.optional_str("status", problems) {
        None | Some("active") => Some(ConnectionStatus::Active),
        Some("disabled") => Some(ConnectionStatus::Disabled),
        Some(other) => {
            problems.push(
                &fields.path("status"),
                format!(
                    "unknown status {} (expected \"active\" or \"disabled\")",
                    quote(other)
                ),
            );
            None
        }
    };
    if credential_problem.is_some() {
        return None;
    }
    let credential = credential.map(str::to_owned);
    Some(Connection {
        id: id?.to_owned(),
        connector: connector?.id.clone(),
        label: label?.to_owned(),
        credential,
        status: status?,
        account: account?,
    })
}
