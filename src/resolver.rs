//! The resolver: what one member may see and do, decided in one place for every path.
//!
//! SPEC §5 names five stages. Browse, connect and advertise are computed once into a
//! [`MemberView`]; execute is decided again from the catalog and the restrictions on every call
//! ([`MemberView::resolve_call`]), never from the listing; the outbound-URL stage runs on the
//! finished request in [`crate::outbound`]. A tool the member may not see behaves exactly like a
//! tool that does not exist: same absence from counts and listings, same error text.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::call_error::{invalid, quote_name, CallError};
use crate::catalog::{
    quote, AccountKind, Catalog, Connection, ConnectionStatus, Connector, JsonPath, Operation,
    ToolDef,
};
use crate::control::{self, ControlOp, SearchRequest};
use crate::lazy_json::LazyJson;
use crate::mcp::Tool;
use crate::names::{ControlOpKind, CONNECTION_ARGUMENT, EXECUTE_TOOL, SEARCH_TOOLS};
use crate::policy::{Access, Policy, UnknownRole};
use crate::scaffold::{frozen_field_note, merged_connection_note, with_notes};
use crate::schema::check_arguments;

/// Past this many visible tools (control operations + connected tools), connected tools are
/// reached through `search_tools` instead of being listed.
pub const DEFAULT_COLLAPSE_THRESHOLD: usize = 30;

/// A connected tool as this member sees it: scaffolding added, frozen fields removed.
#[derive(Debug, Clone, PartialEq)]
pub struct AdvertisedTool {
    /// The advertised name, equal to the catalog tool's name (names are unique per tenant).
    pub name: Arc<str>,
    /// The catalog's own text (shared) unless the gateway added notes.
    pub description: Arc<str>,
    /// The catalog's own schema when nothing is frozen or merged; a new one otherwise.
    pub input_schema: LazyJson,
    pub annotations: LazyJson,
    /// The catalog tool's [`ToolDef::destructive`].
    pub destructive: bool,
    /// The catalog tool's [`ToolDef::read_only`].
    pub read_only: Option<bool>,
    pub connector_id: Arc<str>,
    pub connector_label: Arc<str>,
    /// Labels of the visible, active connections it runs through (sorted by codepoint); two or
    /// more make it a merged tool with a `connection` argument.
    pub connection_labels: Arc<[String]>,
    /// The values the gateway's notes in `description` interpolate (frozen values, then a merged
    /// tool's account labels): the tenant's own words for its set-up, handed to the ranker as
    /// data so it never parses them back out of the text.
    pub note_values: Vec<String>,
}

impl AdvertisedTool {
    /// The MCP `Tool` it is listed as (`annotations` only when there are some).
    pub fn definition(&self) -> Tool {
        Tool {
            name: self.name.to_string(),
            title: None,
            description: self.description.to_string(),
            input_schema: self.input_schema.value().clone(),
            annotations: self
                .annotations
                .as_object()
                .is_some_and(|a| !a.is_empty())
                .then(|| (**self.annotations.value()).clone()),
        }
    }

    pub fn is_merged(&self) -> bool {
        self.connection_labels.len() >= 2
    }
}

/// A connector the member may browse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisibleConnector {
    pub id: String,
    pub label: String,
    /// The connect stage: whether the member may connect accounts for it.
    pub connectable: bool,
    /// How many of its tools this member is advertised (0 without a usable connection).
    pub advertised_tools: usize,
}

/// A connection the member may browse (disabled ones included, with their status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisibleConnection {
    pub id: String,
    pub connector: String,
    pub label: String,
    pub status: ConnectionStatus,
    /// Whose account a call uses.
    pub account: AccountKind,
    /// Whether an operator-named Worker secret backs it (a shared connection's fallback); the
    /// name itself stays in the catalog.
    pub operator_secret: bool,
    /// Whether its connector sends a credential at all (not `auth: none`).
    pub takes_credential: bool,
}

/// Everything one member may see, computed from the catalog and their restrictions.
#[derive(Debug, Clone)]
pub struct MemberView {
    catalog: Arc<Catalog>,
    access: Access,
    pub member: String,
    pub role: String,
    connectors: Vec<VisibleConnector>,
    connections: Vec<VisibleConnection>,
    tools: Vec<AdvertisedTool>,
    control_ops: Vec<ControlOpKind>,
}

/// A call that passed the execute stage, ready for [`crate::outbound::build_request`].
#[derive(Debug, Clone)]
pub struct ResolvedCall {
    pub tool: String,
    pub connector: Arc<Connector>,
    pub connection: Connection,
    pub operation: Operation,
    /// The arguments to send: validated, `connection` removed, frozen values applied.
    pub arguments: Map<String, Value>,
    /// Sets of allowed outbound path prefixes (one of each set must match), from restrictions.
    pub path_prefixes: Vec<Vec<String>>,
}

/// What a `tools/call` (or `execute_tool`) turned out to be.
#[derive(Debug, Clone)]
pub enum Dispatch {
    Control(ControlOp),
    Search(SearchRequest),
    Connected(Box<ResolvedCall>),
}

/// What `tools/list` returns for a member.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// Whether connected tools were replaced by `search_tools` and `execute_tool`.
    pub collapsed: bool,
    /// V: visible control operations + visible connected tools.
    pub visible_count: usize,
    pub tools: Vec<Tool>,
}

impl MemberView {
    /// Computes the browse, connect and advertise stages for one member.
    pub fn build(
        catalog: Arc<Catalog>,
        policy: &Policy,
        member: &str,
        role: &str,
    ) -> Result<MemberView, UnknownRole> {
        let access = policy.access(member, role)?;
        let mut view = MemberView {
            catalog: Arc::clone(&catalog),
            access,
            member: member.to_owned(),
            role: role.to_owned(),
            connectors: Vec::new(),
            connections: Vec::new(),
            // Room for every tool: a member usually sees most of them, and growing a vector
            // of 10,000 tools copied it a dozen times.
            tools: Vec::with_capacity(catalog.tools().count()),
            control_ops: Vec::new(),
        };
        for connector in catalog.connectors() {
            if !view.access.allows_connector(&connector.id) {
                continue;
            }
            let visible: Vec<&Connection> = catalog
                .connections_of(&connector.id)
                .filter(|c| view.access.allows_connection(&c.id))
                .collect();
            view.connections
                .extend(visible.iter().map(|c| VisibleConnection {
                    id: c.id.clone(),
                    connector: c.connector.clone(),
                    label: c.label.clone(),
                    status: c.status,
                    account: c.account,
                    operator_secret: c.credential.is_some(),
                    takes_credential: connector.auth.takes_credential(),
                }));
            let mut usable: Vec<&Connection> = visible
                .into_iter()
                .filter(|c| c.status == ConnectionStatus::Active)
                .collect();
            usable.sort_by(|a, b| a.label.cmp(&b.label));
            let before = view.tools.len();
            if !usable.is_empty() {
                // One copy of the connector's id and label for all its tools.
                let names = ConnectorNames {
                    id: connector.id.as_str().into(),
                    label: connector.label.clone(),
                    connection_labels: usable.iter().map(|c| c.label.clone()).collect(),
                };
                for tool in &connector.tools {
                    if view.access.allows_tool(&tool.name) {
                        let advertised = advertise(&view.access, connector, &names, tool, &usable);
                        view.tools.push(advertised);
                    }
                }
            }
            view.connectors.push(VisibleConnector {
                id: connector.id.clone(),
                label: connector.label.to_string(),
                connectable: view.access.allows_connect(&connector.id),
                advertised_tools: view.tools.len() - before,
            });
        }
        // A view lives as long as its tenant's copy: no room left over (nothing to do when the
        // member sees every tool).
        view.tools.shrink_to_fit();
        // Connecting and disconnecting accounts is offered only to a member who sees a personal
        // connection: elsewhere the two operations could do nothing.
        let has_personal = view
            .connections
            .iter()
            .any(|c| c.account == AccountKind::Personal);
        view.control_ops = ControlOpKind::ALL
            .into_iter()
            .filter(|op| view.access.allows_control(*op))
            .filter(|op| has_personal || !op.is_about_personal_accounts())
            .collect();
        Ok(view)
    }

    pub fn tenant(&self) -> &str {
        &self.catalog.tenant
    }

    /// Browse stage: connectors the member may see.
    pub fn connectors(&self) -> &[VisibleConnector] {
        &self.connectors
    }

    /// Browse stage: connections the member may see.
    pub fn connections(&self) -> &[VisibleConnection] {
        &self.connections
    }

    /// The OAuth client members connect a visible connection's account through, when its
    /// connector declares one (`auth.oauth`).
    pub fn oauth_client_of(
        &self,
        connection: &str,
    ) -> Option<Arc<crate::catalog::oauth_client::OAuthClient>> {
        let visible = self.connections.iter().find(|c| c.id == connection)?;
        self.catalog.connector(&visible.connector)?.oauth.clone()
    }

    /// Connect stage: whether the member may connect an account of this connector.
    pub fn may_connect(&self, connector: &str) -> bool {
        self.connectors
            .iter()
            .any(|c| c.id == connector && c.connectable)
    }

    /// Advertise stage: the connected tools in `tools/list` and in the search pool.
    pub fn tools(&self) -> &[AdvertisedTool] {
        &self.tools
    }

    pub fn tool(&self, name: &str) -> Option<&AdvertisedTool> {
        self.tools.iter().find(|t| &*t.name == name)
    }

    /// Visible control-plane operations, in catalog order.
    pub fn control_ops(&self) -> &[ControlOpKind] {
        &self.control_ops
    }

    pub fn allows_control(&self, op: ControlOpKind) -> bool {
        self.control_ops.contains(&op)
    }

    /// V of SPEC §6: visible control operations + visible connected tools.
    pub fn visible_count(&self) -> usize {
        self.control_ops.len() + self.tools.len()
    }

    /// `tools/list`: everything when V ≤ `threshold`, else control operations + the two
    /// meta-tools. Control operations always come first.
    pub fn listing(&self, threshold: usize) -> Listing {
        let visible_count = self.visible_count();
        let collapsed = visible_count > threshold;
        let mut tools: Vec<Tool> = self
            .control_ops
            .iter()
            .map(|op| control::definition(*op))
            .collect();
        if collapsed {
            tools.push(control::search_tools_definition());
            tools.push(control::execute_tool_definition());
        } else {
            tools.extend(self.tools.iter().map(AdvertisedTool::definition));
        }
        Listing {
            collapsed,
            visible_count,
            tools,
        }
    }

    /// The definition of any tool this member can call by name, for `describe_tool`.
    pub fn definition_of(&self, name: &str) -> Option<Tool> {
        if let Some(tool) = self.tool(name) {
            return Some(tool.definition());
        }
        if let Some(op) = ControlOpKind::from_name(name).filter(|op| self.allows_control(*op)) {
            return Some(control::definition(op));
        }
        match name {
            SEARCH_TOOLS => Some(control::search_tools_definition()),
            EXECUTE_TOOL => Some(control::execute_tool_definition()),
            _ => None,
        }
    }

    /// Resolves any `tools/call`: a control operation, a meta-tool, or a connected tool.
    /// `execute_tool` unwraps to the same resolution as calling the named tool directly.
    pub fn dispatch(&self, name: &str, arguments: &Value) -> Result<Dispatch, CallError> {
        if name == EXECUTE_TOOL {
            let (inner, inner_arguments) = control::parse_execute_tool(arguments)?;
            if inner == EXECUTE_TOOL {
                return Err(CallError::UnknownTool { name: inner });
            }
            return self.dispatch(&inner, &inner_arguments);
        }
        if name == SEARCH_TOOLS {
            return Ok(Dispatch::Search(control::parse_search_tools(arguments)?));
        }
        if let Some(op) = ControlOpKind::from_name(name) {
            if !self.allows_control(op) {
                return Err(CallError::UnknownTool {
                    name: name.to_owned(),
                });
            }
            return Ok(Dispatch::Control(ControlOp::parse(op, arguments)?));
        }
        self.resolve_call(name, arguments)
            .map(|call| Dispatch::Connected(Box::new(call)))
    }

    /// The execute stage for a connected tool, decided from the catalog and the restrictions
    /// (never from the listing): resolve the name, pick the connection, check the arguments
    /// against the schema for that connection, apply frozen values.
    pub fn resolve_call(&self, name: &str, arguments: &Value) -> Result<ResolvedCall, CallError> {
        let unknown = || CallError::UnknownTool {
            name: name.to_owned(),
        };
        let (connector, tool) = self.catalog.tool(name).ok_or_else(unknown)?;
        if !self.access.allows_connector(&connector.id) || !self.access.allows_tool(&tool.name) {
            return Err(unknown());
        }
        let mut usable: Vec<&Connection> = self
            .catalog
            .connections_of(&connector.id)
            .filter(|c| {
                c.status == ConnectionStatus::Active && self.access.allows_connection(&c.id)
            })
            .collect();
        usable.sort_by(|a, b| a.label.cmp(&b.label));
        if usable.is_empty() {
            return Err(unknown());
        }
        let arguments_path = JsonPath::root().field("arguments");
        let Value::Object(arguments) = arguments else {
            return Err(invalid(
                &arguments_path,
                format!(
                    "expected an object, got {}",
                    crate::catalog::kind_of(arguments)
                ),
            ));
        };
        let mut arguments = arguments.clone();
        let connection = if usable.len() >= 2 {
            let labels = quoted_labels(&usable);
            let at = arguments_path.field(CONNECTION_ARGUMENT);
            match arguments.remove(CONNECTION_ARGUMENT) {
                None => {
                    return Err(invalid(
                        &at,
                        format!("required argument is missing (one of: {labels})"),
                    ))
                }
                Some(Value::String(label)) => {
                    *usable.iter().find(|c| c.label == label).ok_or_else(|| {
                        invalid(
                            &at,
                            format!(
                                "unknown connection {} (expected one of: {labels})",
                                quote_name(&label)
                            ),
                        )
                    })?
                }
                Some(other) => {
                    return Err(invalid(
                        &at,
                        format!("expected a string, got {}", crate::catalog::kind_of(&other)),
                    ))
                }
            }
        } else {
            usable[0]
        };
        let operation = tool
            .operation
            .as_ref()
            .ok_or_else(|| CallError::NoOperation {
                name: tool.name.to_string(),
            })?
            .get()
            .map_err(|_| CallError::OperationUnreadable {
                name: tool.name.to_string(),
            })?;

        let frozen = frozen_fields(&self.access, tool, &connection.id);
        for (field, value) in &frozen {
            if let Some(given) = arguments.remove(field) {
                if &given != value {
                    return Err(CallError::FrozenConflict {
                        field: field.clone(),
                        frozen: value.clone(),
                    });
                }
            }
        }
        let schema = schema_without(tool.input_schema.value(), frozen.keys());
        check_arguments(&schema, &Value::Object(arguments.clone()))?;
        arguments.extend(frozen);
        Ok(ResolvedCall {
            tool: tool.name.to_string(),
            connector: Arc::clone(connector),
            connection: connection.clone(),
            operation,
            arguments,
            path_prefixes: self
                .access
                .path_prefixes(&connector.id)
                .into_iter()
                .map(<[String]>::to_vec)
                .collect(),
        })
    }
}

fn quoted_labels(connections: &[&Connection]) -> String {
    connections
        .iter()
        .map(|c| quote(&c.label))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Frozen values that apply to this tool through this connection: only real arguments.
fn frozen_fields(access: &Access, tool: &ToolDef, connection: &str) -> BTreeMap<String, Value> {
    let frozen = access.frozen_for(&tool.name, connection);
    if frozen.is_empty() {
        // Most tools: their schema stays unparsed text (a view of 10,000 tools would otherwise
        // parse 10,000 schemas).
        return frozen;
    }
    let properties = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object);
    frozen
        .into_iter()
        .filter(|(field, _)| properties.is_some_and(|p| p.contains_key(field)))
        .collect()
}

/// The schema with some top-level arguments removed from `properties` and `required`.
fn schema_without<'a>(schema: &Value, fields: impl Iterator<Item = &'a String> + Clone) -> Value {
    let mut schema = schema.clone();
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for field in fields.clone() {
            properties.remove(field);
        }
    }
    if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
        let removed: Vec<&String> = fields.collect();
        required.retain(|r| !r.as_str().is_some_and(|r| removed.iter().any(|f| *f == r)));
    }
    schema
}

/// Builds the advertised form of one tool over the member's usable connections (sorted).
/// The catalog's description, shared, or a new one with the gateway's notes.
fn described(tool: &ToolDef, notes: &[String]) -> Arc<str> {
    if notes.is_empty() {
        tool.description.clone()
    } else {
        with_notes(&tool.description, notes).into()
    }
}

/// A connector's id, label and usable connections' labels as its advertised tools share them.
struct ConnectorNames {
    id: Arc<str>,
    label: Arc<str>,
    connection_labels: Arc<[String]>,
}

fn advertise(
    access: &Access,
    connector: &Connector,
    names: &ConnectorNames,
    tool: &ToolDef,
    usable: &[&Connection],
) -> AdvertisedTool {
    // Most members freeze nothing: then no tool allocates anything for it.
    let per_connection: Vec<BTreeMap<String, Value>> = if access.freezes_nothing() {
        Vec::new()
    } else {
        usable
            .iter()
            .map(|c| frozen_fields(access, tool, &c.id))
            .collect()
    };
    // A field leaves the schema only when every usable connection freezes it.
    let everywhere: Vec<String> = per_connection
        .first()
        .map(|first| {
            first
                .keys()
                .filter(|f| per_connection.iter().all(|m| m.contains_key(*f)))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let mut notes: Vec<String> = Vec::new();
    let mut note_values: Vec<String> = Vec::new();
    let mut noted: Vec<(&String, &Value)> = Vec::new();
    let mut all_frozen: Vec<(&String, &Value)> =
        per_connection.iter().flat_map(|m| m.iter()).collect();
    all_frozen.sort_by(|a, b| a.0.cmp(b.0));
    for (field, value) in all_frozen {
        if !noted.contains(&(field, value)) {
            noted.push((field, value));
            notes.push(frozen_field_note(field, value));
            note_values.push(value.to_string());
        }
    }
    let labels = names.connection_labels.clone();
    if everywhere.is_empty() && labels.len() < 2 {
        return AdvertisedTool {
            name: tool.name.clone(),
            description: described(tool, &notes),
            input_schema: tool.input_schema.clone(),
            annotations: tool.annotations.clone(),
            destructive: tool.destructive,
            read_only: tool.read_only,
            connector_id: names.id.clone(),
            connector_label: names.label.clone(),
            connection_labels: labels,
            note_values,
        };
    }
    let mut input_schema = schema_without(tool.input_schema.value(), everywhere.iter());
    if labels.len() >= 2 {
        let label_refs: Vec<&str> = labels.iter().map(String::as_str).collect();
        notes.push(merged_connection_note(&label_refs));
        note_values.extend(labels.iter().cloned());
        if let Value::Object(schema) = &mut input_schema {
            let properties = schema
                .entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(properties) = properties {
                properties.insert(
                    CONNECTION_ARGUMENT.to_owned(),
                    json!({
                        "type": "string",
                        "enum": labels,
                        "description": format!("Which {} account to use.", connector.label),
                    }),
                );
            }
            let required = schema
                .entry("required")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(required) = required {
                required.push(Value::String(CONNECTION_ARGUMENT.to_owned()));
            }
        }
    }
    AdvertisedTool {
        name: tool.name.clone(),
        description: described(tool, &notes),
        input_schema: LazyJson::from_value(input_schema),
        annotations: tool.annotations.clone(),
        destructive: tool.destructive,
        read_only: tool.read_only,
        connector_id: names.id.clone(),
        connector_label: names.label.clone(),
        connection_labels: labels,
        note_values,
    }
}
