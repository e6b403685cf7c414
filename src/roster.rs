//! The membership and grant model a tenant's Durable Object keeps, and the commands it takes.
//!
//! The object is the single writer for one tenant, so every check and change below is strongly
//! consistent. The schema's trigger revokes a member's live grants inside the very statement
//! that suspends or removes the member: there is no moment where one is done and not the other.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The SQLite schema, one statement per entry. Applied (idempotently) when an object that
/// already has tables starts, and otherwise only by its first write: a tenant name nobody
/// wrote to never gets storage (see [`Command::reply_without_tables`]).
pub const SCHEMA: [&str; 7] = [
    "CREATE TABLE IF NOT EXISTS members (
        id TEXT PRIMARY KEY,
        role TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('active', 'suspended', 'removed')),
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS grants (
        id TEXT PRIMARY KEY,
        member_id TEXT NOT NULL REFERENCES members(id),
        hash TEXT NOT NULL UNIQUE,
        label TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER,
        revoked_reason TEXT
    )",
    "CREATE INDEX IF NOT EXISTS grants_by_member ON grants(member_id)",
    // Runs inside the UPDATE that changes the status: one statement, one transaction.
    "CREATE TRIGGER IF NOT EXISTS revoke_grants_when_member_leaves
    AFTER UPDATE OF status ON members
    WHEN NEW.status <> 'active'
    BEGIN
        UPDATE grants SET revoked_at = NEW.updated_at, revoked_reason = 'member ' || NEW.status
        WHERE member_id = NEW.id AND revoked_at IS NULL;
    END",
    "CREATE TABLE IF NOT EXISTS executions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        member_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        connection TEXT,
        outcome TEXT NOT NULL,
        upstream_status INTEGER,
        latency_ms INTEGER NOT NULL
    )",
    // Changes, apart from executions: a member's calls fill `executions`, never this table, and
    // each class here has its own bound, so neither can push an operator row out.
    "CREATE TABLE IF NOT EXISTS audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        class TEXT NOT NULL CHECK (class IN ('operator', 'control')),
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        detail TEXT
    )",
    "CREATE INDEX IF NOT EXISTS audit_by_class ON audit(class, seq)",
];

/// Rows kept per audit class, and executions kept. Each bound applies to its own rows only.
pub const MAX_AUDIT_ROWS_PER_CLASS: i64 = 100_000;
pub const MAX_EXECUTION_ROWS: i64 = 10_000;

pub const RECORD_AUDIT_SQL: &str =
    "INSERT INTO audit (at, class, actor, action, target, detail) VALUES (?, ?, ?, ?, ?, ?)";
/// Keeps the newest N rows of one class: binds the class twice, then N.
pub const PRUNE_AUDIT_SQL: &str = "DELETE FROM audit WHERE class = ? AND seq <= (
    SELECT seq FROM audit WHERE class = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)";
/// The newest rows of one class: binds the class, then the limit.
pub const LIST_AUDIT_SQL: &str = "SELECT seq, at, class, actor, action, target, detail FROM audit
    WHERE class = ? ORDER BY seq DESC LIMIT ?";
pub const RECORD_EXECUTION_SQL: &str = "INSERT INTO executions (at, member_id, tool, connection, outcome, upstream_status, latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?)";
/// Keeps the newest N executions: binds N.
pub const PRUNE_EXECUTIONS_SQL: &str =
    "DELETE FROM executions WHERE seq <= (SELECT MAX(seq) FROM executions) - ?";

/// The name of the roster object that keeps the deployment's own audit (directory writes). A
/// tenant id never contains `_`, so no tenant's roster can be this one.
pub const DEPLOYMENT_AUDIT_OBJECT: &str = "_deployment";

/// Looks a live grant up: it must be unrevoked, belong to the claimed member, and that member
/// must be active. Checked on every MCP request; nothing caches the answer.
pub const VALIDATE_SQL: &str = "SELECT m.role AS role, g.id AS grant_id FROM grants g
    JOIN members m ON m.id = g.member_id
    WHERE g.hash = ? AND g.member_id = ? AND g.revoked_at IS NULL AND m.status = 'active'";

/// Changes a member's status; the trigger above revokes their grants in the same statement.
pub const SET_STATUS_SQL: &str = "UPDATE members SET status = ?, updated_at = ? WHERE id = ?";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemberStatus {
    Active,
    Suspended,
    Removed,
}

impl MemberStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MemberStatus::Active => "active",
            MemberStatus::Suspended => "suspended",
            MemberStatus::Removed => "removed",
        }
    }

    pub fn parse(text: &str) -> Option<MemberStatus> {
        match text {
            "active" => Some(MemberStatus::Active),
            "suspended" => Some(MemberStatus::Suspended),
            "removed" => Some(MemberStatus::Removed),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub id: String,
    pub role: String,
    pub status: MemberStatus,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantInfo {
    pub id: String,
    pub member: String,
    pub label: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
    pub revoked_reason: Option<String>,
    /// For a client's OAuth authorization (a token family): the client's name. Static grants
    /// have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

/// Who made a change: the operator (admin API) or a member (a control operation over MCP).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    Operator,
    Member(String),
}

/// An audit row's class; each has its own retention bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditClass {
    Operator,
    Control,
}

impl AuditClass {
    pub const ALL: [AuditClass; 2] = [AuditClass::Operator, AuditClass::Control];

    pub fn as_str(self) -> &'static str {
        match self {
            AuditClass::Operator => "operator",
            AuditClass::Control => "control",
        }
    }
}

impl Actor {
    pub fn class(&self) -> AuditClass {
        match self {
            Actor::Operator => AuditClass::Operator,
            Actor::Member(_) => AuditClass::Control,
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Actor::Operator => "operator",
            Actor::Member(member) => member,
        }
    }
}

/// One audit row: who changed what, when. Never a secret, a grant or a tool's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub at: i64,
    pub class: AuditClass,
    pub actor: String,
    pub action: String,
    pub target: String,
    pub detail: Option<String>,
}

impl AuditEntry {
    pub fn new(at: i64, by: &Actor, action: &str, target: &str, detail: Option<String>) -> Self {
        AuditEntry {
            at,
            class: by.class(),
            actor: by.name().to_owned(),
            action: action.to_owned(),
            target: target.to_owned(),
            detail,
        }
    }
}

/// Who a valid grant speaks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub tenant: String,
    pub member: String,
    pub role: String,
    pub grant_id: String,
}

/// What the Worker asks of a tenant's roster object. Times are Unix milliseconds, passed in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Command {
    Validate {
        member: String,
        hash: String,
    },
    UpsertMember {
        member: String,
        role: String,
        now: i64,
        by: Actor,
    },
    ListMembers,
    SetStatus {
        member: String,
        status: MemberStatus,
        now: i64,
        by: Actor,
    },
    IssueGrant {
        member: String,
        id: String,
        hash: String,
        label: String,
        now: i64,
        by: Actor,
    },
    ListGrants {
        member: Option<String>,
    },
    /// `member: Some(..)` limits the revocation to that member's own grants.
    RevokeGrant {
        id: String,
        member: Option<String>,
        now: i64,
        by: Actor,
    },
    RecordExecution {
        at: i64,
        member: String,
        tool: String,
        connection: Option<String>,
        outcome: String,
        upstream_status: Option<i64>,
        latency_ms: i64,
    },
    ListExecutions {
        limit: i64,
    },
    /// A change made outside the roster (a document written to KV).
    RecordAudit {
        entry: AuditEntry,
    },
    /// The newest `limit` rows of each audit class.
    ListAudit {
        limit: i64,
    },
    /// Stores a sealed credential (never the credential) for a connection: `member: None` is
    /// the shared account. A member's own comes through a one-time link, spent here in the same
    /// step (`link`), and only while the member is active.
    StoreAccount {
        connection: String,
        member: Option<String>,
        sealed: String,
        link: Option<SpentLink>,
        now: i64,
        by: Actor,
    },
    /// The sealed credential and status of one account (`null` when there is none, or the
    /// member is not active).
    ReadAccount {
        connection: String,
        member: Option<String>,
    },
    /// Deletes one account's credential; replies whether there was one.
    DeleteAccount {
        connection: String,
        member: Option<String>,
        now: i64,
        by: Actor,
    },
    /// The accounts (never their credentials) of `member` and the shared ones; `None`: all.
    ListAccounts {
        member: Option<String>,
    },
    /// Whether a one-time link was spent.
    LinkSpent {
        hash: String,
    },
    /// Asks for the right to refresh one account's OAuth tokens (`provider_oauth`): granted
    /// only while the row still holds `sealed` (the value the caller read) and nobody else
    /// holds the lease; replies a [`LeaseReply`].
    LeaseRefresh {
        connection: String,
        member: String,
        sealed: String,
        holder: String,
        now: i64,
    },
    /// Ends `holder`'s lease: stores the refreshed tokens (`sealed`), or sets `status`
    /// (`needs_reconnect`, `expired`), or only releases it; nothing is written for a holder
    /// whose lease was taken over. Replies `{"stored": bool}`.
    FinishRefresh {
        connection: String,
        member: String,
        holder: String,
        sealed: Option<String>,
        status: Option<String>,
        now: i64,
    },
    /// Sets the status of one account (`needs_reconnect` after the upstream refused its
    /// refreshed token, or its pasted key) only while it still holds `sealed`, the value the
    /// call sent. Replies
    /// `{"marked": bool}`.
    MarkAccount {
        connection: String,
        member: Option<String>,
        sealed: String,
        status: String,
        now: i64,
    },
    /// Re-seals every stored account of `tenant` sealed under an older vault key version with
    /// the newest; replies counts (`reseal::Plan::answer`), never a credential. A roster with no
    /// tables reads no rows and creates none.
    ResealAccounts {
        tenant: String,
        now: i64,
        by: Actor,
    },
    /// At a catalog write: deletes the accounts of every connection not in `keep` (the new
    /// catalog's ids) and of every one in `added` (ids the old catalog did not have); replies
    /// `{"forgotten": n}`.
    ForgetConnections {
        keep: Vec<String>,
        added: Vec<String>,
        now: i64,
        by: Actor,
    },
}

/// A one-time link spent by the store that uses it: the hash of the link and when it would
/// have expired (until then its row stays).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpentLink {
    pub hash: String,
    pub expires_at: i64,
}

/// One account as listed: no credential, sealed or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountInfo {
    pub connection: String,
    /// `None` for a shared account.
    pub member: Option<String>,
    pub status: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// The roster's answer to [`Command::LeaseRefresh`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "lease", rename_all = "snake_case")]
pub enum LeaseReply {
    /// Refresh, then send `FinishRefresh`.
    Granted,
    /// The row changed since it was read (another call refreshed it, or its status moved):
    /// use this one.
    Changed { account: StoredAccount },
    /// Another call is refreshing it now: wait and read again.
    Busy,
    /// No such account any more (disconnected, or the member is not active).
    Gone,
}

/// A stored account as read for a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredAccount {
    pub sealed: String,
    pub status: String,
}

/// The audit detail of an account change: whose account, never its credential.
fn account_detail(member: Option<&str>) -> String {
    match member {
        Some(member) => format!("personal account of {member}"),
        None => "shared account".to_owned(),
    }
}

/// Whether an object has tables yet; `SELECT` this and read `n`.
pub const HAS_TABLES_SQL: &str =
    "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'members'";

impl Command {
    /// The audit row a change leaves when it succeeds, written by the roster in the same
    /// synchronous step as the change itself.
    pub fn audit_entry(&self) -> Option<AuditEntry> {
        match self {
            Command::UpsertMember {
                member,
                role,
                now,
                by,
            } => Some(AuditEntry::new(
                *now,
                by,
                "member.put",
                member,
                Some(format!("role {role}")),
            )),
            Command::SetStatus {
                member,
                status,
                now,
                by,
            } => {
                let action = match status {
                    MemberStatus::Active => "member.reinstate",
                    MemberStatus::Suspended => "member.suspend",
                    MemberStatus::Removed => "member.remove",
                };
                Some(AuditEntry::new(*now, by, action, member, None))
            }
            Command::IssueGrant {
                member,
                id,
                label,
                now,
                by,
                ..
            } => Some(AuditEntry::new(
                *now,
                by,
                "grant.issue",
                member,
                Some(format!("grant {id}, label {label}")),
            )),
            Command::RevokeGrant { id, now, by, .. } => {
                Some(AuditEntry::new(*now, by, "grant.revoke", id, None))
            }
            Command::RecordAudit { entry } => Some(entry.clone()),
            Command::StoreAccount {
                connection,
                member,
                now,
                by,
                ..
            } => Some(AuditEntry::new(
                *now,
                by,
                "account.connect",
                connection,
                Some(account_detail(member.as_deref())),
            )),
            Command::DeleteAccount {
                connection,
                member,
                now,
                by,
            } => Some(AuditEntry::new(
                *now,
                by,
                "account.disconnect",
                connection,
                Some(account_detail(member.as_deref())),
            )),
            // Their rows say what they did, so the object writes them from the reply
            // (`Command::audit_after`), in the same step.
            Command::ResealAccounts { .. } | Command::ForgetConnections { .. } => None,
            Command::Validate { .. }
            | Command::ReadAccount { .. }
            | Command::ListAccounts { .. }
            | Command::LinkSpent { .. }
            | Command::LeaseRefresh { .. }
            | Command::FinishRefresh { .. }
            | Command::MarkAccount { .. }
            | Command::ListMembers
            | Command::ListGrants { .. }
            | Command::RecordExecution { .. }
            | Command::ListExecutions { .. }
            | Command::ListAudit { .. } => None,
        }
    }

    /// The audit row of a forget that deleted accounts, from its reply: the connections kept
    /// and added, and how many accounts went (never a credential). The re-seal's row is
    /// `reseal::audit_entry`.
    pub fn forget_audit(&self, reply: &serde_json::Value) -> Option<AuditEntry> {
        let Command::ForgetConnections { now, by, .. } = self else {
            return None;
        };
        let forgotten = reply.get("forgotten").and_then(|n| n.as_u64()).unwrap_or(0);
        (forgotten > 0).then(|| {
            AuditEntry::new(
                *now,
                by,
                "account.forget",
                "accounts",
                Some(format!(
                    "{forgotten} accounts of connections the catalog removed or added"
                )),
            )
        })
    }

    /// The reply of a roster that has no tables yet, for every command that needs none: reads
    /// see an empty roster and changes to members or grants find nothing to change. `None`
    /// means the command creates the tables and runs (it adds a member or records an event).
    pub fn reply_without_tables(&self) -> Option<Result<serde_json::Value, RosterError>> {
        use serde_json::Value;
        match self {
            Command::Validate { .. } | Command::ReadAccount { .. } => Some(Ok(Value::Null)),
            Command::LinkSpent { .. } => Some(Ok(Value::Bool(false))),
            Command::LeaseRefresh { .. } => Some(Ok(
                serde_json::to_value(LeaseReply::Gone).unwrap_or(Value::Null)
            )),
            Command::FinishRefresh { .. } => Some(Ok(serde_json::json!({"stored": false}))),
            Command::MarkAccount { .. } => Some(Ok(serde_json::json!({"marked": false}))),
            Command::ListAccounts { .. } => Some(Ok(Value::Array(Vec::new()))),
            Command::DeleteAccount { .. } => Some(Ok(Value::Bool(false))),
            Command::ForgetConnections { .. } => Some(Ok(serde_json::json!({"forgotten": 0}))),
            // The object answers it without tables: it reads no rows and needs the vault.
            Command::ResealAccounts { .. } => None,
            Command::StoreAccount {
                member: Some(member),
                ..
            } => Some(Err(RosterError::UnknownMember(member.clone()))),
            Command::StoreAccount { member: None, .. } => None,
            Command::ListMembers | Command::ListGrants { .. } | Command::ListExecutions { .. } => {
                Some(Ok(Value::Array(Vec::new())))
            }
            Command::ListAudit { .. } => {
                Some(Ok(serde_json::json!({"operator": [], "control": []})))
            }
            Command::SetStatus { member, .. } | Command::IssueGrant { member, .. } => {
                Some(Err(RosterError::UnknownMember(member.clone())))
            }
            Command::RevokeGrant { id, .. } => Some(Err(RosterError::UnknownGrant(id.clone()))),
            Command::UpsertMember { .. }
            | Command::RecordExecution { .. }
            | Command::RecordAudit { .. } => None,
        }
    }
}

/// A roster refusal, with a message an operator can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "error", content = "detail", rename_all = "snake_case")]
pub enum RosterError {
    UnknownMember(String),
    MemberRemoved(String),
    MemberNotActive(String),
    UnknownGrant(String),
    /// A one-time link to the paste page was used before.
    LinkUsed,
    /// The stored accounts cannot be re-sealed: no usable vault key, or no randomness.
    Reseal(String),
    InvalidTransition {
        member: String,
        from: MemberStatus,
        to: MemberStatus,
    },
    Storage(String),
}

impl RosterError {
    /// The HTTP status the admin API answers this with.
    pub fn status(&self) -> u16 {
        match self {
            RosterError::UnknownMember(_) | RosterError::UnknownGrant(_) => 404,
            RosterError::MemberRemoved(_)
            | RosterError::MemberNotActive(_)
            | RosterError::LinkUsed
            | RosterError::InvalidTransition { .. } => 409,
            RosterError::Storage(_) => 500,
            RosterError::Reseal(_) => 503,
        }
    }
}

impl fmt::Display for RosterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RosterError::UnknownMember(m) => write!(f, "no member \"{m}\" in this tenant"),
            RosterError::MemberRemoved(m) => {
                write!(
                    f,
                    "member \"{m}\" was removed; removal is final, add the person under a new id"
                )
            }
            RosterError::MemberNotActive(m) => {
                write!(
                    f,
                    "member \"{m}\" is not active; reinstate them before issuing grants"
                )
            }
            RosterError::UnknownGrant(g) => write!(f, "no grant \"{g}\" here"),
            RosterError::LinkUsed => write!(
                f,
                "this link was already used; ask for a new one (connect_account)"
            ),
            RosterError::InvalidTransition { member, from, to } => write!(
                f,
                "member \"{member}\" cannot go from {} to {}",
                from.as_str(),
                to.as_str()
            ),
            RosterError::Storage(e) => write!(f, "roster storage failed: {e}"),
            RosterError::Reseal(why) => write!(f, "nothing was re-sealed: {why}"),
        }
    }
}

/// Which status changes are allowed. Removal is final; reinstating only undoes a suspension.
pub fn transition_allowed(from: MemberStatus, to: MemberStatus) -> bool {
    use MemberStatus::*;
    matches!(
        (from, to),
        (Active, Suspended) | (Active, Removed) | (Suspended, Active) | (Suspended, Removed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removal_is_final_and_reinstating_undoes_only_a_suspension() {
        use MemberStatus::*;
        assert!(transition_allowed(Active, Suspended));
        assert!(transition_allowed(Suspended, Active));
        assert!(!transition_allowed(Removed, Active));
        assert!(!transition_allowed(Removed, Suspended));
        assert!(!transition_allowed(Active, Active));
    }

    #[test]
    fn only_adding_a_member_or_recording_an_event_creates_a_roster() {
        let (member, now) = ("ada".to_owned(), 1);
        let reads_and_refusals = [
            Command::Validate {
                member: member.clone(),
                hash: "h".into(),
            },
            Command::ListMembers,
            Command::ListGrants { member: None },
            Command::ListExecutions { limit: 5 },
            Command::SetStatus {
                member: member.clone(),
                status: MemberStatus::Suspended,
                now,
                by: Actor::Operator,
            },
            Command::IssueGrant {
                member: member.clone(),
                id: "g".into(),
                hash: "h".into(),
                label: "l".into(),
                now,
                by: Actor::Operator,
            },
            Command::RevokeGrant {
                id: "g".into(),
                member: None,
                now,
                by: Actor::Operator,
            },
        ];
        for command in &reads_and_refusals {
            assert!(command.reply_without_tables().is_some(), "{command:?}");
        }
        // A forged or made-up grant only ever validates: an empty roster says "no such grant".
        assert_eq!(
            reads_and_refusals[0].reply_without_tables(),
            Some(Ok(serde_json::Value::Null))
        );
        let writes = [
            Command::UpsertMember {
                member: member.clone(),
                role: "r".into(),
                now,
                by: Actor::Operator,
            },
            Command::RecordExecution {
                at: now,
                member,
                tool: "t".into(),
                connection: None,
                outcome: "ok".into(),
                upstream_status: None,
                latency_ms: 0,
            },
        ];
        for command in &writes {
            assert!(command.reply_without_tables().is_none(), "{command:?}");
        }
    }

    #[test]
    fn every_change_leaves_an_audit_row_classed_by_who_made_it() {
        let by_member = Actor::Member("bob".into());
        let suspend = Command::SetStatus {
            member: "ada".into(),
            status: MemberStatus::Suspended,
            now: 7,
            by: by_member.clone(),
        };
        assert_eq!(
            suspend.audit_entry(),
            Some(AuditEntry {
                at: 7,
                class: AuditClass::Control,
                actor: "bob".into(),
                action: "member.suspend".into(),
                target: "ada".into(),
                detail: None,
            })
        );
        let issue = Command::IssueGrant {
            member: "ada".into(),
            id: "g_1".into(),
            hash: "secret-hash".into(),
            label: "laptop".into(),
            now: 8,
            by: Actor::Operator,
        };
        let entry = issue.audit_entry().unwrap();
        assert_eq!(
            (entry.class, entry.action.as_str()),
            (AuditClass::Operator, "grant.issue")
        );
        assert!(
            !entry.detail.unwrap().contains("secret-hash"),
            "never the grant's hash"
        );
        let revoke = Command::RevokeGrant {
            id: "g_1".into(),
            member: Some("bob".into()),
            now: 9,
            by: by_member,
        };
        assert_eq!(revoke.audit_entry().unwrap().action, "grant.revoke");
        for read in [
            Command::ListAudit { limit: 5 },
            Command::Validate {
                member: "ada".into(),
                hash: "h".into(),
            },
        ] {
            assert_eq!(read.audit_entry(), None);
        }
    }

    #[test]
    fn commands_round_trip_as_tagged_json() {
        let command = Command::SetStatus {
            member: "ada".into(),
            status: MemberStatus::Suspended,
            now: 5,
            by: Actor::Member("bob".into()),
        };
        let text = serde_json::to_string(&command).unwrap();
        assert_eq!(
            text,
            r#"{"op":"set_status","member":"ada","status":"suspended","now":5,"by":{"member":"bob"}}"#
        );
        assert_eq!(serde_json::from_str::<Command>(&text).unwrap(), command);
    }
}
