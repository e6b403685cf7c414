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

use crate::catalog::{Catalog, Directory, DocumentErrors, OriginRules, ToolDef};
use crate::mcp::Tool;
use crate::packed;
use crate::policy::Policy;
use crate::policy::UnknownRole;
use crate::rank;
use crate::rank::v2::DocId;
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
        Deployment::prepare_with(directory_json, None).map(|(d, _)| d)
    }

    /// Prepares the directory, reading its search index from `snapshot` (what the directory
    /// write compiled) when it was compiled for exactly this text; otherwise the index is built
    /// and the reason the snapshot was not used comes back beside the deployment.
    pub fn prepare_with(
        directory_json: Option<&str>,
        snapshot: Option<&[u8]>,
    ) -> Result<(Deployment, Option<String>), DocumentErrors> {
        let text = directory_json.unwrap_or(r#"{"schema": 1, "connectors": []}"#);
        let directory = Directory::parse(text)?;
        let fingerprint = crate::cache::documents_fingerprint(&[directory_json.map(str::as_bytes)]);
        let read = snapshot.map(|bytes| {
            let index =
                open_snapshot(bytes, &fingerprint, &fingerprint).map_err(|p| p.to_string())?;
            rank::v2::Directory::from_compiled(index, directory_tools(&directory))
                .map_err(|e| e.to_string())
        });
        let built = || rank::v2::Directory::build(directory_tools(&directory));
        let (search_directory, problem) = match read {
            Some(Ok(compiled)) => (compiled, None),
            Some(Err(problem)) => (built(), Some(problem)),
            None => (built(), None),
        };
        let deployment = Deployment {
            fingerprint,
            directory,
            search_directory,
        };
        Ok((deployment, problem))
    }
}

/// Every tool of the directory as the ranker indexes it, in directory order.
fn directory_tools(directory: &Directory) -> Vec<rank::ToolDoc> {
    directory
        .connectors()
        .iter()
        .flat_map(|connector| {
            connector
                .tools
                .iter()
                .map(|tool| plain_doc(&connector.label, tool))
        })
        .collect()
}

/// A catalog or directory tool as the ranker indexes it, with no notes of any member's view;
/// `label` its connector's (shared, not copied).
fn plain_doc(label: &Arc<str>, tool: &ToolDef) -> rank::ToolDoc {
    rank::ToolDoc {
        name: tool.name.clone(),
        connector: label.clone(),
        description: tool.description.clone(),
        input_schema: tool.input_schema.clone(),
        destructive: tool.destructive,
        read_only: tool.read_only,
        notes: Vec::new(),
    }
}

/// The directory's snapshot: its search index compiled, stamped (twice: the envelope is the
/// tenants') with the directory's version; refused past [`MAX_SNAPSHOT_BYTES`].
pub fn compile_directory_snapshot(
    directory: &Directory,
    directory_version: &str,
) -> Result<Vec<u8>, DocumentErrors> {
    let index = rank::v2::Directory::build(directory_tools(directory)).compile();
    within_one_value(
        envelope(directory_version, directory_version, &index),
        MAX_SNAPSHOT_BYTES,
        "directory",
    )
}

/// The largest value Workers KV stores (25 MiB). A snapshot is one value, never split: the
/// 16 MiB body limit and the memory estimate keep accepted documents under it (about 13 MB, by
/// estimate, for the largest accepted tenant of the load bench's shape), so one past it is
/// refused when written rather than stored in pieces that every cold copy would read one by one.
pub const MAX_SNAPSHOT_BYTES: usize = 25 * 1024 * 1024;

/// `snapshot` when it fits in one KV value of `limit` bytes; else the problem, on `document`,
/// in words an operator can act on (nothing is stored).
pub fn within_one_value(
    snapshot: Vec<u8>,
    limit: usize,
    document: &'static str,
) -> Result<Vec<u8>, DocumentErrors> {
    if snapshot.len() <= limit {
        return Ok(snapshot);
    }
    const KB: usize = 1024;
    Err(DocumentErrors {
        document,
        errors: vec![crate::catalog::DocumentError {
            path: String::new(),
            message: format!(
                "compiled for serving, these documents make a {} KB snapshot and one KV value \
                 holds at most {} KB; split the tenant or trim its tools' text",
                snapshot.len().div_ceil(KB),
                limit / KB
            ),
        }],
    })
}

/// One member's view with its listing and (on its first search) its search pool.
pub struct PreparedView {
    pub view: MemberView,
    pub listing: Vec<Tool>,
    pub collapsed: bool,
    pub visible_count: usize,
    pool: OnceCell<SearchPool>,
}

/// Where a member's searches run: the tenant's shared index through the member's visible part
/// (the ranker's IDF, counts and explanations are then the visible part's alone), or an index
/// of the member's own, when the view advertises a tool differently from the catalog (frozen
/// values, merged accounts) and so must be indexed as the member sees it.
enum SearchPool {
    Shared(rank::v2::Visible),
    Own(Box<rank::v2::Index>, rank::v2::Visible),
}

impl PreparedView {
    fn new(view: MemberView, threshold: usize) -> PreparedView {
        let listing = view.listing(threshold);
        PreparedView {
            listing: listing.tools,
            collapsed: listing.collapsed,
            visible_count: listing.visible_count,
            view,
            pool: OnceCell::new(),
        }
    }

    /// Whether the member's search runs over the tenant's shared index (false before the first
    /// search, or when the view needs its own).
    pub fn searches_shared_index(&self) -> bool {
        matches!(self.pool.get(), Some(SearchPool::Shared(_)))
    }
}

/// The member's advertised tools as the ranker indexes them (notes as data).
fn view_tools(view: &MemberView) -> Vec<rank::ToolDoc> {
    view.tools()
        .iter()
        .map(|tool| rank::ToolDoc {
            name: tool.name.clone(),
            connector: tool.connector_label.clone(),
            description: tool.description.clone(),
            input_schema: tool.input_schema.clone(),
            destructive: tool.destructive,
            read_only: tool.read_only,
            notes: tool.note_values.clone(),
        })
        .collect()
}

/// Every tool of a catalog as the ranker indexes it, in catalog order: what the admin write
/// compiles and what a compiled index is read back over.
pub fn catalog_tools(catalog: &Catalog) -> Vec<rank::ToolDoc> {
    catalog
        .tools()
        .map(|(connector, tool)| plain_doc(&connector.label, tool))
        .collect()
}

/// The index over all of a tenant's tools, shared by its members' views.
pub struct SharedIndex {
    pub index: rank::v2::Index,
    /// Read from the snapshot the admin write compiled (false: built in this isolate).
    pub compiled: bool,
}

impl SharedIndex {
    /// The member's visible part, when every tool the view advertises is indexed here exactly
    /// as the member sees it; `None` otherwise.
    fn visible_part(&self, view: &MemberView) -> Option<rank::v2::Visible> {
        let mut ids = Vec::with_capacity(view.tools().len());
        // A view lists its tools mostly in the catalog's order, the index's: the tool after the
        // last one found is tried first, and the name lookup only when it is not that one.
        let mut next: DocId = 0;
        for tool in view.tools() {
            let guess = (next < self.index.len() as DocId)
                .then_some(next)
                .filter(|&d| same_text(&self.index.doc(d).name, &tool.name));
            // Names are unique per tenant; `by_name` matches them case-insensitively.
            let id = match guess {
                Some(d) => d,
                None => *self
                    .index
                    .by_name(&tool.name)
                    .iter()
                    .find(|&&d| same_text(&self.index.doc(d).name, &tool.name))?,
            };
            next = id + 1;
            let doc = self.index.doc(id);
            let same = tool.note_values.is_empty()
                && doc.input_schema.ptr_eq(&tool.input_schema)
                && same_text(&doc.description, &tool.description)
                && same_text(&doc.connector, &tool.connector_label);
            if !same {
                return None;
            }
            ids.push(id);
        }
        Some(rank::v2::Visible::from_ids(&self.index, ids))
    }
}

/// Whether two shared texts are equal: the same copy, or the same text. `Arc<str>`'s own `==`
/// always compares the text (std's pointer shortcut is for sized values only), and a view's
/// texts are almost always its catalog's own copies.
fn same_text(a: &Arc<str>, b: &Arc<str>) -> bool {
    Arc::ptr_eq(a, b) || a == b
}

/// What the member views of one prepared copy may take together: past it the least recently
/// used view is dropped, and built again (2–3 ms at 10,000 tools) when its member comes back.
/// Without a bound a tenant with many members would grow one copy past the isolate's memory.
pub const VIEW_CACHE_BYTES: usize = 16 << 20;
/// A member view's size per tool of the catalog: 1.4 MiB at 10,000 tools (bench/load), rounded
/// up.
pub const VIEW_BYTES_PER_TOOL: usize = 160;
/// A view's size apart from its tools.
pub const VIEW_FIXED_BYTES: usize = 4096;
/// Views kept whatever their size, and at most.
pub const MIN_VIEWS: usize = 2;
pub const MAX_VIEWS: usize = 256;

/// The member of a view shared by every member of its role without an override of their own
/// (member ids are never empty).
pub const ROLE_WIDE: &str = "";

/// The estimated size of one member view of a `tools`-tool catalog.
fn view_bytes(tools: usize) -> usize {
    tools
        .saturating_mul(VIEW_BYTES_PER_TOOL)
        .saturating_add(VIEW_FIXED_BYTES)
}

/// How many member views a copy of a `tools`-tool catalog keeps.
pub fn views_kept(tools: usize) -> usize {
    (VIEW_CACHE_BYTES / view_bytes(tools)).clamp(MIN_VIEWS, MAX_VIEWS)
}

/// The member views of one copy, the least recently used first out.
#[derive(Default)]
struct Views {
    by_key: HashMap<(String, String), Rc<PreparedView>>,
    /// Keys from the least to the most recently used.
    order: std::collections::VecDeque<(String, String)>,
}

impl Views {
    fn get(&mut self, key: &(String, String)) -> Option<Rc<PreparedView>> {
        let view = self.by_key.get(key)?.clone();
        if let Some(at) = self.order.iter().position(|k| k == key) {
            if let Some(k) = self.order.remove(at) {
                self.order.push_back(k);
            }
        }
        Some(view)
    }

    fn insert(&mut self, key: (String, String), view: Rc<PreparedView>, keep: usize) {
        while self.by_key.len() >= keep.max(1) {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.by_key.remove(&oldest);
        }
        self.order.push_back(key.clone());
        self.by_key.insert(key, view);
    }
}

/// A tenant's validated documents plus the member views built from them (at most
/// [`views_kept`]).
pub struct PreparedTenant {
    pub tenant: String,
    pub deployment: Rc<Deployment>,
    pub catalog: Arc<Catalog>,
    pub policy: Policy,
    threshold: usize,
    /// The catalog's tools, for the views' budget.
    tool_count: usize,
    views: RefCell<Views>,
    /// The compiled index of the tenant's snapshot, until the first search reads it.
    compiled: RefCell<Option<Vec<u8>>>,
    /// Why a compiled index could not be read, if one was tried (the shell logs it).
    compiled_problem: RefCell<Option<String>>,
    shared: OnceCell<SharedIndex>,
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
        Ok(PreparedTenant::new(
            tenant, deployment, catalog, policy, threshold,
        ))
    }

    fn new(
        tenant: &str,
        deployment: Rc<Deployment>,
        catalog: Catalog,
        policy: Policy,
        threshold: usize,
    ) -> PreparedTenant {
        PreparedTenant {
            tenant: tenant.to_owned(),
            deployment,
            tool_count: catalog.tools().count(),
            catalog: Arc::new(catalog),
            policy,
            threshold,
            views: RefCell::new(Views::default()),
            compiled: RefCell::new(None),
            compiled_problem: RefCell::new(None),
            shared: OnceCell::new(),
        }
    }

    /// Offers the tenant's snapshot as read from KV, for documents of `version` (what
    /// [`crate::admin::tenant_version`] gives for the documents this copy was prepared from).
    /// A snapshot of other documents, another directory or another format is refused with the
    /// reason, and the index is then built from the tools on the first search.
    pub fn offer_snapshot(&self, bytes: &[u8], version: &str) -> Result<(), SnapshotProblem> {
        let body = open_snapshot(bytes, version, &self.deployment.fingerprint)?;
        let sections = TenantSections::split(body)?;
        *self.compiled.borrow_mut() = Some(sections.index.to_vec());
        Ok(())
    }

    /// Prepares a tenant from its snapshot alone, when it was compiled for documents of
    /// `version` (the tenant's version key) against this deployment's directory: no document
    /// is read, parsed or validated, and the input schemas stay text until used. Anything else
    /// is refused with the reason; the caller then reads the documents.
    pub fn from_snapshot(
        tenant: &str,
        deployment: Rc<Deployment>,
        bytes: &[u8],
        version: &str,
        threshold: usize,
    ) -> Result<PreparedTenant, SnapshotProblem> {
        let body = open_snapshot(bytes, version, &deployment.fingerprint)?;
        let sections = TenantSections::split(body)?;
        let mut catalog = packed::Reader::new(sections.catalog);
        let catalog = Catalog::read_compiled(&mut catalog, &deployment.directory)
            .map_err(|e| SnapshotProblem::Damaged(e.to_string()))?;
        if catalog.tenant != tenant {
            return Err(SnapshotProblem::Damaged(format!(
                "compiled for tenant \"{}\"",
                catalog.tenant
            )));
        }
        let empty_policy = empty_policy(tenant);
        let policy = Policy::parse(sections.policy.unwrap_or(&empty_policy), &catalog)
            .map_err(|e| SnapshotProblem::Damaged(format!("its policy: {e}")))?;
        if policy.tenant != tenant {
            return Err(SnapshotProblem::Damaged(format!(
                "its policy is for tenant \"{}\"",
                policy.tenant
            )));
        }
        let prepared = PreparedTenant::new(tenant, deployment, catalog, policy, threshold);
        *prepared.compiled.borrow_mut() = Some(sections.index.to_vec());
        Ok(prepared)
    }

    /// Why the offered snapshot's index could not be read (after the first search).
    pub fn compiled_problem(&self) -> Option<String> {
        self.compiled_problem.borrow().clone()
    }

    /// The index over all the tenant's tools: read from the snapshot when one was offered and
    /// is good, else built here.
    pub fn shared_index(&self) -> &SharedIndex {
        self.shared.get_or_init(|| {
            let tools = || catalog_tools(&self.catalog);
            if let Some(bytes) = self.compiled.borrow_mut().take() {
                match rank::v2::Index::from_compiled(&bytes, tools()) {
                    Ok(index) => {
                        return SharedIndex {
                            index,
                            compiled: true,
                        }
                    }
                    Err(e) => *self.compiled_problem.borrow_mut() = Some(e.to_string()),
                }
            }
            SharedIndex {
                index: rank::v2::Index::build(tools()),
                compiled: false,
            }
        })
    }

    /// The index and visible part a member's search runs over.
    pub fn search_pool<'a>(
        &'a self,
        view: &'a PreparedView,
    ) -> (&'a rank::v2::Index, &'a rank::v2::Visible) {
        let pool = view.pool.get_or_init(|| {
            // Notes or merged accounts change a tool's text: such a view needs its own index,
            // and the shared one is not even built for it.
            let own_text = view
                .view
                .tools()
                .iter()
                .any(|t| !t.note_values.is_empty() || t.is_merged());
            let shared = (!own_text)
                .then(|| self.shared_index().visible_part(&view.view))
                .flatten();
            match shared {
                Some(visible) => SearchPool::Shared(visible),
                None => {
                    let own = rank::v2::Index::build(view_tools(&view.view));
                    let all = rank::v2::Visible::all(&own);
                    SearchPool::Own(Box::new(own), all)
                }
            }
        });
        match pool {
            SearchPool::Shared(visible) => (&self.shared_index().index, visible),
            SearchPool::Own(index, all) => (index, all),
        }
    }

    /// The member's view, built once per prepared copy while it stays among the
    /// [`views_kept`] most recently used. A member the policy has no override for sees exactly
    /// what their role gives, so all such members of a role share one view (built with no
    /// member: [`ROLE_WIDE`]); a member with an override has their own.
    pub fn view(&self, member: &str, role: &str) -> Result<Rc<PreparedView>, UnknownRole> {
        let member = if self.policy.member_override(member).is_some() {
            member
        } else {
            ROLE_WIDE
        };
        let key = (member.to_owned(), role.to_owned());
        if let Some(view) = self.views.borrow_mut().get(&key) {
            return Ok(view);
        }
        let view = MemberView::build(self.catalog.clone(), &self.policy, member, role)?;
        let prepared = Rc::new(PreparedView::new(view, self.threshold));
        self.views
            .borrow_mut()
            .insert(key, prepared.clone(), views_kept(self.tool_count));
        Ok(prepared)
    }

    /// Member views held now.
    pub fn views_held(&self) -> usize {
        self.views.borrow().by_key.len()
    }

    /// How many tools the catalog of this copy has.
    pub fn tool_count(&self) -> usize {
        self.tool_count
    }

    /// The most the member views of this copy are estimated to take.
    pub fn views_budget_bytes(&self) -> usize {
        view_bytes(self.tool_count).saturating_mul(views_kept(self.tool_count))
    }
}

/// The first bytes of a tenant snapshot.
pub const SNAPSHOT_MAGIC: [u8; 4] = *b"FGSN";
/// The snapshot envelope's layout version. The compiled index inside has its own, and a change
/// of either changes this one, so an old snapshot is refused whole and rebuilt (4: the index's
/// format 3).
pub const SNAPSHOT_FORMAT: u32 = 4;

/// Why a snapshot read from KV is not used (the index is then built from the tools).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnapshotProblem {
    NotASnapshot,
    OtherFormat {
        found: u32,
    },
    /// Compiled from other documents than those read (KV propagates keys independently).
    OtherDocuments,
    /// Compiled against another connector directory (written since).
    OtherDirectory,
    /// Stamped right but unreadable inside (written behind the gateway's back).
    Damaged(String),
}

impl std::fmt::Display for SnapshotProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotProblem::NotASnapshot => write!(f, "not a tenant snapshot"),
            SnapshotProblem::OtherFormat { found } => write!(
                f,
                "snapshot of format {found}, this gateway reads {SNAPSHOT_FORMAT}: run POST /admin/v1/versions/rebuild"
            ),
            SnapshotProblem::OtherDocuments => {
                write!(f, "snapshot compiled from other documents than those read")
            }
            SnapshotProblem::OtherDirectory => write!(
                f,
                "snapshot compiled against another directory: run POST /admin/v1/versions/rebuild"
            ),
            SnapshotProblem::Damaged(what) => write!(f, "snapshot damaged: {what}"),
        }
    }
}

/// A tenant's snapshot: what serving needs compiled at the admin write, stamped with the
/// documents' version and the directory's, so an isolate never reads it for other documents.
/// Layout: magic, format `u32`, then the two versions (each a `u16` length and its text), then
/// the tenant's sections ([`TenantSections`]): the validated catalog
/// ([`Catalog::compile_into`]), the policy as stored, and the search index over
/// [`catalog_tools`] ([`rank::v2::compiled`]).
pub fn compile_snapshot(
    catalog: &Catalog,
    policy_json: Option<&str>,
    version: &str,
    directory_version: &str,
) -> Result<Vec<u8>, DocumentErrors> {
    let index = rank::v2::Index::build(catalog_tools(catalog)).compile();
    let mut compiled_catalog = packed::Writer::default();
    catalog.compile_into(&mut compiled_catalog);
    // Written straight into the envelope, a buffer of its final size: the body is not copied
    // again (the compiled catalog's own bytes are dropped as soon as they are in).
    let policy_bytes = policy_json.map_or(0, str::len) + 8;
    let body_bytes = compiled_catalog.out.len() + 8 + policy_bytes + index.len();
    let mut out = envelope_with_capacity(version, directory_version, body_bytes);
    out.bytes(&compiled_catalog.out);
    drop(compiled_catalog);
    match policy_json {
        None => out.u8(0),
        Some(policy) => {
            out.u8(1);
            out.str(policy);
        }
    }
    out.out.extend_from_slice(&index);
    within_one_value(out.out, MAX_SNAPSHOT_BYTES, "catalog")
}

/// The parts of a tenant snapshot's body, found without reading them.
struct TenantSections<'a> {
    catalog: &'a [u8],
    policy: Option<&'a str>,
    index: &'a [u8],
}

impl<'a> TenantSections<'a> {
    fn split(body: &'a [u8]) -> Result<TenantSections<'a>, SnapshotProblem> {
        let damaged = |c: packed::Corrupt| SnapshotProblem::Damaged(c.to_string());
        let mut r = packed::Reader::new(body);
        let catalog = r.bytes().map_err(damaged)?;
        let policy = if r.bool().map_err(damaged)? {
            Some(r.str().map_err(damaged)?)
        } else {
            None
        };
        Ok(TenantSections {
            catalog,
            policy,
            index: r.rest(),
        })
    }
}

fn empty_policy(tenant: &str) -> String {
    format!(r#"{{"schema": 1, "tenant": "{tenant}", "roles": {{}}}}"#)
}

fn envelope(version: &str, directory_version: &str, body: &[u8]) -> Vec<u8> {
    let mut out = envelope_with_capacity(version, directory_version, body.len());
    out.out.extend_from_slice(body);
    out.out
}

/// A snapshot's head (magic, format, the two versions), with room for a body of `body_bytes`.
fn envelope_with_capacity(
    version: &str,
    directory_version: &str,
    body_bytes: usize,
) -> packed::Writer {
    let mut out = Vec::with_capacity(body_bytes + 160);
    out.extend_from_slice(&SNAPSHOT_MAGIC);
    out.extend_from_slice(&SNAPSHOT_FORMAT.to_le_bytes());
    for stamp in [version, directory_version] {
        out.extend_from_slice(&(stamp.len() as u16).to_le_bytes());
        out.extend_from_slice(stamp.as_bytes());
    }
    packed::Writer { out }
}

/// The compiled index inside a snapshot, if it was compiled for these versions.
pub fn open_snapshot<'a>(
    bytes: &'a [u8],
    version: &str,
    directory_version: &str,
) -> Result<&'a [u8], SnapshotProblem> {
    let rest = bytes
        .strip_prefix(&SNAPSHOT_MAGIC)
        .ok_or(SnapshotProblem::NotASnapshot)?;
    let (format, mut rest) = rest
        .split_first_chunk::<4>()
        .ok_or(SnapshotProblem::NotASnapshot)?;
    let format = u32::from_le_bytes(*format);
    if format != SNAPSHOT_FORMAT {
        return Err(SnapshotProblem::OtherFormat { found: format });
    }
    let mut stamps = [&[][..]; 2];
    for stamp in &mut stamps {
        let (len, after) = rest
            .split_first_chunk::<2>()
            .ok_or(SnapshotProblem::NotASnapshot)?;
        let len = usize::from(u16::from_le_bytes(*len));
        if after.len() < len {
            return Err(SnapshotProblem::NotASnapshot);
        }
        (*stamp, rest) = after.split_at(len);
    }
    if stamps[0] != version.as_bytes() {
        return Err(SnapshotProblem::OtherDocuments);
    }
    if stamps[1] != directory_version.as_bytes() {
        return Err(SnapshotProblem::OtherDirectory);
    }
    Ok(rest)
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
    let empty_policy = empty_policy(tenant);
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

/// The estimated peak memory of a `tools`-tool tenant prepared from documents of
/// `document_bytes`, its members' views included: what the admin write refuses past
/// [`crate::cache::tenant_budget_bytes`] of the directory, and what the isolate cache weighs such
/// a copy at.
pub fn documents_peak_bytes(tools: usize, document_bytes: usize) -> usize {
    crate::cache::write_peak_bytes(tools, document_bytes).saturating_add(VIEW_CACHE_BYTES)
}

/// What a set of documents amounts to, for an operator's write or `floorgate validate`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    pub tenant: String,
    pub connectors: usize,
    pub connections: usize,
    pub tools: usize,
    pub roles: usize,
    /// The estimated peak memory of preparing these documents in an isolate, members' views
    /// included ([`crate::cache::write_peak_bytes`]): how close the tenant is to
    /// `memory_limit_bytes`, past which a write is refused.
    pub memory_estimate_bytes: usize,
    /// The isolate's budget less the directory's prepared copy
    /// ([`crate::cache::tenant_budget_bytes`]).
    pub memory_limit_bytes: usize,
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
    check_and_parse(
        tenant,
        directory_json,
        catalog_json,
        policy_json,
        rules,
        "catalog",
    )
    .map(|(summary, _)| summary)
}

/// [`check_documents`], also handing back the parsed catalog (what the admin write compiles).
/// A limit of the tenant as a whole (its memory) is charged to `written`, the document that
/// pushed it past.
pub fn check_and_parse(
    tenant: &str,
    directory_json: Option<&str>,
    catalog_json: Option<&str>,
    policy_json: Option<&str>,
    rules: OriginRules,
    written: &'static str,
) -> Result<(Summary, Catalog), DocumentErrors> {
    let directory =
        Directory::parse(directory_json.unwrap_or(r#"{"schema": 1, "connectors": []}"#))?;
    check_against(
        tenant,
        &directory,
        catalog_json,
        policy_json,
        rules,
        written,
    )
}

/// [`check_and_parse`] against a directory already parsed (a call that checks many tenants
/// parses it once).
pub fn check_against(
    tenant: &str,
    directory: &Directory,
    catalog_json: Option<&str>,
    policy_json: Option<&str>,
    rules: OriginRules,
    written: &'static str,
) -> Result<(Summary, Catalog), DocumentErrors> {
    let (catalog, policy) =
        parse_tenant_documents(tenant, directory, catalog_json, policy_json, rules)?;
    let bytes = catalog_json.map_or(0, str::len) + policy_json.map_or(0, str::len);
    let tools = catalog.tools().count();
    let prepared = documents_peak_bytes(tools, bytes);
    // The directory's prepared copy shares every isolate with the tenant.
    let limit = crate::cache::tenant_budget_bytes(directory.text_bytes());
    if prepared > limit {
        const MB: usize = 1024 * 1024;
        return Err(DocumentErrors {
            document: written,
            errors: vec![crate::catalog::DocumentError {
                path: String::new(),
                message: format!(
                    "prepared for serving, this tenant's {tools} tools ({} KB of documents) would \
                     take about {} MB of an isolate's memory with its members' views, and at most \
                     {} MB fit; split the tenant or trim its tools",
                    bytes / 1024,
                    prepared / MB,
                    limit / MB
                ),
            }],
        });
    }
    let summary = Summary {
        tenant: tenant.to_owned(),
        connectors: catalog.connectors().len(),
        connections: catalog.connections().len(),
        tools,
        roles: policy.roles().count(),
        memory_estimate_bytes: prepared,
        memory_limit_bytes: limit,
    };
    Ok((summary, catalog))
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
    recheck_tenants(directory_json, stored, rules).invalidated
}

/// What a directory write finds of the tenants it checks: those its directory makes invalid,
/// and a snapshot compiled against it for each of the others.
#[derive(Debug, Default)]
pub struct Recheck {
    pub invalidated: Vec<Invalidated>,
    /// (tenant, snapshot) for every tenant whose documents still check.
    pub compiled: Vec<(String, Vec<u8>)>,
}

/// Checks each stored tenant against `directory_json` (parsed once; each tenant's documents
/// once) and compiles the snapshot of every tenant that still checks.
pub fn recheck_tenants<'a>(
    directory_json: &str,
    stored: impl IntoIterator<Item = (&'a str, Option<&'a str>, Option<&'a str>)>,
    rules: OriginRules,
) -> Recheck {
    let directory = Directory::parse(directory_json);
    let directory_version = crate::cache::documents_fingerprint(&[Some(directory_json.as_bytes())]);
    let mut out = Recheck::default();
    for (tenant, catalog, policy) in stored {
        let checked = directory
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|d| check_against(tenant, d, catalog, policy, rules, "catalog"));
        let compiled = checked.and_then(|(_, parsed)| {
            let version = documents_version(catalog, policy);
            compile_snapshot(&parsed, policy, &version, &directory_version)
        });
        match compiled {
            Ok(snapshot) => out.compiled.push((tenant.to_owned(), snapshot)),
            Err(e) => out.invalidated.push(Invalidated {
                tenant: tenant.to_owned(),
                document: e.document,
                problems: e.lines(),
            }),
        }
    }
    out
}

/// A tenant's documents' version: the fingerprint of the catalog and the policy as stored, in
/// that order (`admin::tenant_version` publishes it).
pub fn documents_version(catalog: Option<&str>, policy: Option<&str>) -> String {
    crate::cache::documents_fingerprint(&[catalog.map(str::as_bytes), policy.map(str::as_bytes)])
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
