//! A tenant prepared for serving: documents parsed and validated once, member views and their
//! search indexes built on first use and kept with the prepared copy.
//!
//! The prepared tenant is what the isolate cache holds. Everything a request needs that does
//! not depend on the request itself lives here, so a warm request only validates its grant,
//! looks its member's view up and answers.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use crate::catalog::{Catalog, Directory, DocumentErrors, OriginRules};
use crate::mcp::Tool;
use crate::policy::Policy;
use crate::policy::UnknownRole;
use crate::rank;
use crate::resolver::MemberView;

/// The deployment-wide connector directory, prepared once per version.
pub struct Deployment {
    /// SHA-256 of the directory text this was prepared from (tenants' copies depend on it).
    pub fingerprint: String,
    pub directory: Directory,
    /// The directory as a search index: public knowledge for product detection.
    pub search_directory: rank::v2::Directory,
}

impl Deployment {
    /// `None` (nothing stored yet) is an empty directory.
    pub fn prepare(directory_json: Option<&str>) -> Result<Deployment, DocumentErrors> {
        let text = directory_json.unwrap_or(r#"{"schema": 1, "connectors": []}"#);
        let directory = Directory::parse(text)?;
        let fingerprint = crate::cache::documents_fingerprint(&[directory_json.map(str::as_bytes)]);
        let docs = directory
            .connectors()
            .iter()
            .flat_map(|connector| {
                connector.tools.iter().map(|tool| rank::ToolDoc {
                    name: tool.name.clone(),
                    connector: connector.label.clone(),
                    description: tool.description.clone(),
                    input_schema: tool.input_schema.clone(),
                    destructive: destroys(&tool.annotations),
                    notes: Vec::new(),
                })
            })
            .collect();
        Ok(Deployment {
            fingerprint,
            directory,
            search_directory: rank::v2::Directory::build(docs),
        })
    }
}

/// One member's view with its listing and (built on the first search) its search index.
pub struct PreparedView {
    pub view: MemberView,
    pub listing: Vec<Tool>,
    pub collapsed: bool,
    pub visible_count: usize,
    index: OnceCell<rank::v2::Index>,
}

impl PreparedView {
    fn new(view: MemberView, threshold: usize) -> PreparedView {
        let listing = view.listing(threshold);
        PreparedView {
            listing: listing.tools,
            collapsed: listing.collapsed,
            visible_count: listing.visible_count,
            view,
            index: OnceCell::new(),
        }
    }

    /// The member's search pool: exactly their advertised connected tools, nothing else.
    pub fn index(&self) -> &rank::v2::Index {
        self.index.get_or_init(|| {
            rank::v2::Index::build(
                self.view
                    .tools()
                    .iter()
                    .map(|tool| rank::ToolDoc {
                        name: tool.name.clone(),
                        connector: tool.connector_label.clone(),
                        description: tool.description.clone(),
                        input_schema: tool.input_schema.clone(),
                        destructive: destroys(&tool.annotations),
                        notes: tool.note_values.clone(),
                    })
                    .collect(),
            )
        })
    }
}

/// Whether a tool's MCP annotations say it destroys data.
fn destroys(annotations: &serde_json::Map<String, serde_json::Value>) -> bool {
    annotations
        .get("destructiveHint")
        .and_then(serde_json::Value::as_bool)
        == Some(true)
}

/// A tenant's validated documents plus the views built from them so far.
pub struct PreparedTenant {
    pub tenant: String,
    pub deployment: Rc<Deployment>,
    pub catalog: Arc<Catalog>,
    pub policy: Policy,
    threshold: usize,
    views: RefCell<HashMap<(String, String), Rc<PreparedView>>>,
}

impl PreparedTenant {
    /// Validates a tenant's documents against the deployment's directory. A missing catalog is
    /// an empty one; a missing policy defines no roles (members see only `whoami`).
    pub fn prepare(
        tenant: &str,
        deployment: Rc<Deployment>,
        catalog_json: Option<&str>,
        policy_json: Option<&str>,
        threshold: usize,
    ) -> Result<PreparedTenant, DocumentErrors> {
        let (catalog, policy) = parse_tenant_documents(
            tenant,
            &deployment.directory,
            catalog_json,
            policy_json,
            OriginRules::STORED,
        )?;
        Ok(PreparedTenant {
            tenant: tenant.to_owned(),
            deployment,
            catalog: Arc::new(catalog),
            policy,
            threshold,
            views: RefCell::new(HashMap::new()),
        })
    }

    /// The member's view, built once per prepared copy.
    pub fn view(&self, member: &str, role: &str) -> Result<Rc<PreparedView>, UnknownRole> {
        let key = (member.to_owned(), role.to_owned());
        if let Some(view) = self.views.borrow().get(&key) {
            return Ok(view.clone());
        }
        let view = MemberView::build(self.catalog.clone(), &self.policy, member, role)?;
        let prepared = Rc::new(PreparedView::new(view, self.threshold));
        self.views.borrow_mut().insert(key, prepared.clone());
        Ok(prepared)
    }
}

/// Parses and validates a tenant's catalog and policy against a directory, the catalog's
/// origins under `rules`. A missing catalog is an empty one; a missing policy defines no roles
/// (members then see only `whoami`).
pub fn parse_tenant_documents(
    tenant: &str,
    directory: &Directory,
    catalog_json: Option<&str>,
    policy_json: Option<&str>,
    rules: OriginRules,
) -> Result<(Catalog, Policy), DocumentErrors> {
    let empty_catalog =
        format!(r#"{{"schema": 1, "tenant": "{tenant}", "connectors": [], "connections": []}}"#);
    let empty_policy = format!(r#"{{"schema": 1, "tenant": "{tenant}", "roles": {{}}}}"#);
    let catalog = Catalog::parse_stored(
        catalog_json.unwrap_or(&empty_catalog),
        directory,
        tenant,
        rules,
    )?;
    if catalog.tenant != tenant {
        return Err(wrong_tenant("catalog", &catalog.tenant, tenant));
    }
    let policy = Policy::parse(policy_json.unwrap_or(&empty_policy), &catalog)?;
    if policy.tenant != tenant {
        return Err(wrong_tenant("policy", &policy.tenant, tenant));
    }
    Ok((catalog, policy))
}

/// What a set of documents amounts to, for an operator's write or `floorgate validate`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    pub tenant: String,
    pub connectors: usize,
    pub connections: usize,
    pub tools: usize,
    pub roles: usize,
}

/// Checks a full set of documents before any of them is stored: the directory, then the
/// catalog against it (its private connectors' origins under `rules`, the deployment's), then
/// the policy against the catalog. The directory's own origins were judged when it was written.
pub fn check_documents(
    tenant: &str,
    directory_json: Option<&str>,
    catalog_json: Option<&str>,
    policy_json: Option<&str>,
    rules: OriginRules,
) -> Result<Summary, DocumentErrors> {
    let directory =
        Directory::parse(directory_json.unwrap_or(r#"{"schema": 1, "connectors": []}"#))?;
    let (catalog, policy) =
        parse_tenant_documents(tenant, &directory, catalog_json, policy_json, rules)?;
    let bytes = catalog_json.map_or(0, str::len) + policy_json.map_or(0, str::len);
    let prepared = crate::cache::prepared_bytes(bytes);
    if prepared > crate::cache::MAX_PREPARED_BYTES {
        const MB: usize = 1024 * 1024;
        return Err(DocumentErrors {
            document: "catalog",
            errors: vec![crate::catalog::DocumentError {
                path: String::new(),
                message: format!(
                    "prepared for serving, this tenant's documents ({} KB) would take about {} MB \
                     of an isolate's memory, and at most {} MB fit; split the tenant or trim its tools",
                    bytes / 1024,
                    prepared / MB,
                    crate::cache::MAX_PREPARED_BYTES / MB
                ),
            }],
        });
    }
    Ok(Summary {
        tenant: tenant.to_owned(),
        connectors: catalog.connectors().len(),
        connections: catalog.connections().len(),
        tools: catalog.tools().count(),
        roles: policy.roles().count(),
    })
}

/// A tenant whose stored documents a directory update makes invalid.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Invalidated {
    pub tenant: String,
    pub document: &'static str,
    pub problems: Vec<String>,
}

/// The tenants (of `stored`: tenant, catalog, policy) whose documents would fail against the
/// directory `directory_json`, each with its problems: what a directory update reports.
pub fn tenants_invalidated<'a>(
    directory_json: &str,
    stored: impl IntoIterator<Item = (&'a str, Option<&'a str>, Option<&'a str>)>,
    rules: OriginRules,
) -> Vec<Invalidated> {
    stored
        .into_iter()
        .filter_map(|(tenant, catalog, policy)| {
            check_documents(tenant, Some(directory_json), catalog, policy, rules)
                .err()
                .map(|e| Invalidated {
                    tenant: tenant.to_owned(),
                    document: e.document,
                    problems: e.lines(),
                })
        })
        .collect()
}

fn wrong_tenant(document: &'static str, found: &str, expected: &str) -> DocumentErrors {
    DocumentErrors {
        document,
        errors: vec![crate::catalog::DocumentError {
            path: "tenant".into(),
            message: format!("is \"{found}\" but the document is stored for tenant \"{expected}\""),
        }],
    }
}
