//! The per-tenant roster Durable Object: members and grants in its SQLite storage.
//!
//! One object per tenant (`id_from_name(tenant)`) is the single writer for that tenant's
//! membership, so a status change and the revocation of that member's grants are one SQL
//! statement (see `roster::SCHEMA`'s trigger) and every validation reads the committed state.

use std::cell::Cell;

use serde::Deserialize;
use serde_json::{json, Value};
use worker::{durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, State};

use super::token_store::SqlTokens;

use crate::accounts;
use crate::oauth::command::{self as oauth_command, NoTables, OAuthCommand, OAuthReply};
use crate::oauth::token::{self as oauth_token, LIST_FAMILIES_SQL, REVOKE_LISTED_FAMILY_SQL};
use crate::roster::{
    transition_allowed, AccountInfo, AuditClass, AuditEntry, Command, GrantInfo, LeaseReply,
    Member, MemberStatus, RosterError, StoredAccount, HAS_TABLES_SQL, LIST_AUDIT_SQL,
    MAX_AUDIT_ROWS_PER_CLASS, MAX_EXECUTION_ROWS, PRUNE_AUDIT_SQL, PRUNE_EXECUTIONS_SQL,
    RECORD_AUDIT_SQL, RECORD_EXECUTION_SQL, SCHEMA, SET_STATUS_SQL, VALIDATE_SQL,
};

#[durable_object]
pub struct Roster {
    state: State,
    sql: SqlStorage,
    /// Whether the tables exist. An object nobody wrote to has none, and reads leave it so.
    ready: Cell<bool>,
    /// The key codes and tokens are minted under; `None` without a usable grant key (then
    /// nothing is minted, and the shell refuses every OAuth request before it gets here).
    token_key: Option<[u8; 32]>,
    /// The vault over the deployment's master secrets, for re-sealing; why there is none.
    vault: std::result::Result<crate::vault::Vault, String>,
}

#[derive(Deserialize)]
struct Count {
    n: f64,
}

impl DurableObject for Roster {
    fn new(state: State, env: Env) -> Self {
        let token_key = super::oauth::oauth_keys(&env).ok().map(|keys| keys.tokens);
        let roster = Roster {
            sql: state.storage().sql(),
            state,
            ready: Cell::new(false),
            token_key,
            vault: super::accounts::vault(&env),
        };
        // An existing roster gets any statement a newer schema added; a new one waits for
        // its first write.
        let has_tables = roster
            .sql
            .exec(HAS_TABLES_SQL, None)
            .and_then(|c| c.to_array::<Count>())
            .map(|rows| rows.first().is_some_and(|r| r.n > 0.0));
        match has_tables {
            Ok(true) => {
                if let Err(e) = roster.create_tables() {
                    worker::console_error!("{e}");
                }
            }
            Ok(false) => {}
            Err(e) => worker::console_error!("roster schema check failed: {e}"),
        }
        roster
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let body: Value = req.json().await?;
        if body.get("oauth").is_some() {
            let reply = match serde_json::from_value::<OAuthCommand>(body) {
                Ok(command) => {
                    let reply = self.run_oauth(command);
                    if reply.stored_something() {
                        self.keep_house_later().await;
                    }
                    reply
                }
                Err(e) => OAuthReply::Refused {
                    error: crate::oauth::OAuthError::new(
                        crate::oauth::ErrorCode::ServerError,
                        format!("bad OAuth command: {e}"),
                    ),
                },
            };
            return Response::from_json(&reply);
        }
        let reply = match serde_json::from_value::<Command>(body) {
            Ok(command) => match (self.ready.get(), command.reply_without_tables()) {
                (false, Some(reply)) => reply,
                // Reads no rows and creates no tables.
                (false, None) if matches!(command, Command::ResealAccounts { .. }) => {
                    self.run(command)
                }
                (false, None) => self
                    .create_tables()
                    .and_then(|()| self.run_and_audit(command)),
                (true, _) => self.run_and_audit(command),
            },
            Err(e) => Err(RosterError::Storage(format!("bad roster command: {e}"))),
        };
        let body = match reply {
            Ok(value) => json!({ "ok": value }),
            Err(error) => json!({ "err": error }),
        };
        Response::from_json(&body)
    }

    /// Housekeeping: deletes the codes and tokens that expired a day ago, and comes back while
    /// any remain.
    async fn alarm(&self) -> Result<Response> {
        let cutoff = worker::Date::now().as_millis() as i64 - oauth_token::EXPIRED_KEPT_MS;
        for statement in oauth_token::PURGE_EXPIRED_SQL {
            self.sql.exec(statement, vec![(cutoff as f64).into()])?;
        }
        let left: Vec<Count> = self
            .sql
            .exec(oauth_token::COUNT_EXPIRING_SQL, None)?
            .to_array()?;
        if left.first().is_some_and(|c| c.n > 0.0) {
            self.state
                .storage()
                .set_alarm(oauth_token::HOUSEKEEPING_EVERY_MS)
                .await?;
        }
        Response::ok("")
    }
}

#[derive(Deserialize)]
struct MemberRow {
    id: String,
    role: String,
    status: String,
    created_at: f64,
    updated_at: f64,
}

impl MemberRow {
    fn into_member(self) -> Member {
        Member {
            id: self.id,
            role: self.role,
            status: MemberStatus::parse(&self.status).unwrap_or(MemberStatus::Removed),
            created_at: self.created_at as i64,
            updated_at: self.updated_at as i64,
        }
    }
}

#[derive(Deserialize)]
struct GrantRow {
    id: String,
    member_id: String,
    label: String,
    created_at: f64,
    revoked_at: Option<f64>,
    revoked_reason: Option<String>,
}

#[derive(Deserialize)]
struct FamilyRow {
    id: String,
    member_id: String,
    client_name: String,
    created_at: f64,
    revoked_at: Option<f64>,
    revoked_reason: Option<String>,
}

#[derive(Deserialize)]
struct AccountRow {
    connection_id: String,
    member_id: String,
    status: String,
    created_at: f64,
    updated_at: f64,
}

#[derive(Deserialize)]
struct ValidRow {
    role: String,
    grant_id: String,
}

#[derive(Deserialize)]
struct AuditRow {
    seq: f64,
    at: f64,
    class: String,
    actor: String,
    action: String,
    target: String,
    detail: Option<String>,
}

#[derive(Deserialize)]
struct ExecutionRow {
    seq: f64,
    at: f64,
    member_id: String,
    tool: String,
    connection: Option<String>,
    outcome: String,
    upstream_status: Option<f64>,
    latency_ms: f64,
}

fn storage(e: worker::Error) -> RosterError {
    RosterError::Storage(e.to_string())
}

impl Roster {
    /// Makes sure the housekeeping will run: an alarm, unless one is set already.
    async fn keep_house_later(&self) {
        let storage = self.state.storage();
        let result = match storage.get_alarm().await {
            Ok(Some(_)) => Ok(()),
            _ => storage.set_alarm(oauth_token::HOUSEKEEPING_EVERY_MS).await,
        };
        if let Err(e) = result {
            worker::console_error!("scheduling the roster's housekeeping failed: {e}");
        }
    }

    fn create_tables(&self) -> std::result::Result<(), RosterError> {
        // The OAuth and account tables refer to `members`, so they come after the roster's own.
        for statement in SCHEMA
            .iter()
            .chain(oauth_token::SCHEMA.iter())
            .chain(crate::accounts::SCHEMA.iter())
        {
            self.sql.exec(statement, None).map_err(|e| {
                RosterError::Storage(format!("roster schema statement failed: {e}"))
            })?;
        }
        self.ready.set(true);
        Ok(())
    }

    /// Runs a command and, when it changed something, writes its audit row in the same
    /// synchronous step (no await between them, so both commit together or neither does).
    fn run_and_audit(&self, command: Command) -> std::result::Result<Value, RosterError> {
        let after = matches!(
            command,
            Command::ResealAccounts { .. } | Command::ForgetConnections { .. }
        )
        .then(|| command.clone());
        let entry = command.audit_entry();
        let reply = self.run(command)?;
        let entry = entry.or_else(|| match after? {
            Command::ResealAccounts { now, by, .. } => {
                Some(crate::reseal::audit_entry(now, &by, &reply))
            }
            forget => forget.forget_audit(&reply),
        });
        if let Some(entry) = entry {
            self.record_audit(&entry)?;
        }
        Ok(reply)
    }

    fn record_audit(&self, entry: &AuditEntry) -> std::result::Result<(), RosterError> {
        let class = entry.class.as_str();
        self.sql
            .exec(
                RECORD_AUDIT_SQL,
                vec![
                    (entry.at as f64).into(),
                    class.into(),
                    entry.actor.clone().into(),
                    entry.action.clone().into(),
                    entry.target.clone().into(),
                    entry
                        .detail
                        .clone()
                        .map(Into::into)
                        .unwrap_or(worker::SqlStorageValue::Null),
                ],
            )
            .map_err(storage)?;
        // Only this class's oldest rows go: another class's volume never evicts these.
        self.sql
            .exec(
                PRUNE_AUDIT_SQL,
                vec![
                    class.into(),
                    class.into(),
                    (MAX_AUDIT_ROWS_PER_CLASS as f64).into(),
                ],
            )
            .map_err(storage)?;
        Ok(())
    }

    /// Runs an OAuth command in one synchronous step. A roster nobody wrote to answers reads
    /// from no tables and creates none; a command that creates something for a member needs
    /// that member active.
    fn run_oauth(&self, command: OAuthCommand) -> OAuthReply {
        if let Some(member) = command.member_must_be_active() {
            let active = self.ready.get()
                && matches!(self.member(member), Ok(Some(m)) if m.status == MemberStatus::Active);
            if !active {
                return OAuthReply::MemberNotActive {
                    member: member.to_owned(),
                };
            }
        }
        let Some(key) = &self.token_key else {
            return OAuthReply::Refused {
                error: crate::oauth::OAuthError::new(
                    crate::oauth::ErrorCode::TemporarilyUnavailable,
                    "the gateway's grant key is not configured",
                ),
            };
        };
        if self.ready.get() {
            let mut store = SqlTokens {
                sql: &self.sql,
                key,
            };
            oauth_command::run(&mut store, command)
        } else {
            oauth_command::run(&mut NoTables, command)
        }
    }

    /// Revokes a client's authorization (its token family) listed beside the grants; `member`
    /// limits it to that member's own. Whether one was revoked.
    fn revoke_family(
        &self,
        id: &str,
        member: Option<&str>,
        now: i64,
    ) -> std::result::Result<bool, RosterError> {
        let owner = member
            .map(Into::into)
            .unwrap_or(worker::SqlStorageValue::Null);
        let cursor = self
            .sql
            .exec(
                REVOKE_LISTED_FAMILY_SQL,
                vec![(now as f64).into(), id.into(), owner],
            )
            .map_err(storage)?;
        Ok(cursor.rows_written() > 0)
    }

    /// Re-seals the stale rows in this one synchronous step: each is rewritten only if it
    /// still holds the value opened. With no tables there is nothing to read.
    fn reseal(&self, tenant: &str) -> std::result::Result<Value, RosterError> {
        let vault = self.vault.as_ref().map_err(|problem| {
            RosterError::Reseal(format!(
                "{problem}; set VAULT_MASTER_KEY (and the newest VAULT_MASTER_KEY_V<n>)"
            ))
        })?;
        let rows: Vec<crate::reseal::SealedRow> = if self.ready.get() {
            self.sql
                .exec(accounts::SEALED_ALL_SQL, None)
                .and_then(|c| c.to_array())
                .map_err(storage)?
        } else {
            Vec::new()
        };
        let plan = crate::reseal::plan(vault, tenant, rows, || {
            let mut nonce = [0u8; crate::vault::NONCE_BYTES];
            getrandom::getrandom(&mut nonce).ok().map(|()| nonce)
        })
        .map_err(|e| RosterError::Reseal(e.to_string()))?;
        let mut resealed = 0;
        for rewrite in &plan.rewrites {
            let cursor = self
                .sql
                .exec(
                    accounts::RESEAL_SQL,
                    vec![
                        rewrite.to.clone().into(),
                        rewrite.connection_id.clone().into(),
                        rewrite.member_id.clone().into(),
                        rewrite.from.clone().into(),
                    ],
                )
                .map_err(storage)?;
            resealed += cursor.rows_written();
        }
        Ok(plan.answer(resealed))
    }

    fn member(&self, id: &str) -> std::result::Result<Option<Member>, RosterError> {
        let rows: Vec<MemberRow> = self
            .sql
            .exec("SELECT * FROM members WHERE id = ?", vec![id.into()])
            .and_then(|c| c.to_array())
            .map_err(storage)?;
        Ok(rows.into_iter().next().map(MemberRow::into_member))
    }

    fn run(&self, command: Command) -> std::result::Result<Value, RosterError> {
        match command {
            Command::Validate { member, hash } => {
                let rows: Vec<ValidRow> = self
                    .sql
                    .exec(VALIDATE_SQL, vec![hash.into(), member.clone().into()])
                    .and_then(|c| c.to_array())
                    .map_err(storage)?;
                Ok(match rows.into_iter().next() {
                    Some(row) => {
                        json!({"member": member, "role": row.role, "grant_id": row.grant_id})
                    }
                    None => Value::Null,
                })
            }
            Command::UpsertMember {
                member, role, now, ..
            } => {
                match self.member(&member)? {
                    Some(existing) if existing.status == MemberStatus::Removed => {
                        return Err(RosterError::MemberRemoved(member))
                    }
                    Some(_) => {
                        self.sql
                            .exec(
                                "UPDATE members SET role = ?, updated_at = ? WHERE id = ?",
                                vec![role.into(), (now as f64).into(), member.clone().into()],
                            )
                            .map_err(storage)?;
                    }
                    None => {
                        self.sql
                            .exec(
                                "INSERT INTO members (id, role, status, created_at, updated_at) VALUES (?, ?, 'active', ?, ?)",
                                vec![member.clone().into(), role.into(), (now as f64).into(), (now as f64).into()],
                            )
                            .map_err(storage)?;
                    }
                }
                let member = self
                    .member(&member)?
                    .ok_or(RosterError::UnknownMember(member))?;
                Ok(serde_json::to_value(member).unwrap_or(Value::Null))
            }
            Command::ListMembers => {
                let rows: Vec<MemberRow> = self
                    .sql
                    .exec("SELECT * FROM members ORDER BY id", None)
                    .and_then(|c| c.to_array())
                    .map_err(storage)?;
                let members: Vec<Member> = rows.into_iter().map(MemberRow::into_member).collect();
                Ok(serde_json::to_value(members).unwrap_or(Value::Null))
            }
            Command::SetStatus {
                member,
                status,
                now,
                ..
            } => {
                let current = self
                    .member(&member)?
                    .ok_or_else(|| RosterError::UnknownMember(member.clone()))?;
                if !transition_allowed(current.status, status) {
                    return Err(RosterError::InvalidTransition {
                        member,
                        from: current.status,
                        to: status,
                    });
                }
                // One statement: the trigger revokes the member's grants inside it.
                self.sql
                    .exec(
                        SET_STATUS_SQL,
                        vec![
                            status.as_str().into(),
                            (now as f64).into(),
                            member.clone().into(),
                        ],
                    )
                    .map_err(storage)?;
                let member = self
                    .member(&member)?
                    .ok_or(RosterError::UnknownMember(member))?;
                Ok(serde_json::to_value(member).unwrap_or(Value::Null))
            }
            Command::IssueGrant {
                member,
                id,
                hash,
                label,
                now,
                ..
            } => {
                let current = self
                    .member(&member)?
                    .ok_or_else(|| RosterError::UnknownMember(member.clone()))?;
                match current.status {
                    MemberStatus::Active => {}
                    MemberStatus::Removed => return Err(RosterError::MemberRemoved(member)),
                    MemberStatus::Suspended => return Err(RosterError::MemberNotActive(member)),
                }
                self.sql
                    .exec(
                        "INSERT INTO grants (id, member_id, hash, label, created_at) VALUES (?, ?, ?, ?, ?)",
                        vec![id.clone().into(), member.clone().into(), hash.into(), label.clone().into(), (now as f64).into()],
                    )
                    .map_err(storage)?;
                Ok(json!({"id": id, "member": member, "label": label, "created_at": now}))
            }
            Command::ListGrants { member } => {
                let cursor = match &member {
                    Some(m) => self.sql.exec(
                        "SELECT * FROM grants WHERE member_id = ? ORDER BY created_at, id",
                        vec![m.clone().into()],
                    ),
                    None => self
                        .sql
                        .exec("SELECT * FROM grants ORDER BY created_at, id", None),
                };
                let rows: Vec<GrantRow> = cursor.and_then(|c| c.to_array()).map_err(storage)?;
                let mut grants: Vec<GrantInfo> = rows
                    .into_iter()
                    .map(|r| GrantInfo {
                        id: r.id,
                        member: r.member_id,
                        label: r.label,
                        created_at: r.created_at as i64,
                        revoked_at: r.revoked_at.map(|v| v as i64),
                        revoked_reason: r.revoked_reason,
                        client: None,
                    })
                    .collect();
                let families: Vec<FamilyRow> = self
                    .sql
                    .exec(
                        LIST_FAMILIES_SQL,
                        vec![member
                            .clone()
                            .map(Into::into)
                            .unwrap_or(worker::SqlStorageValue::Null)],
                    )
                    .and_then(|c| c.to_array())
                    .map_err(storage)?;
                grants.extend(families.into_iter().map(|f| GrantInfo {
                    id: f.id,
                    member: f.member_id,
                    label: format!("OAuth: {}", f.client_name),
                    created_at: f.created_at as i64,
                    revoked_at: f.revoked_at.map(|v| v as i64),
                    revoked_reason: f.revoked_reason,
                    client: Some(f.client_name),
                }));
                Ok(serde_json::to_value(grants).unwrap_or(Value::Null))
            }
            Command::RevokeGrant {
                id, member, now, ..
            } => {
                let cursor = match &member {
                    Some(m) => self.sql.exec(
                        "UPDATE grants SET revoked_at = ?, revoked_reason = 'revoked' WHERE id = ? AND member_id = ? AND revoked_at IS NULL",
                        vec![(now as f64).into(), id.clone().into(), m.clone().into()],
                    ),
                    None => self.sql.exec(
                        "UPDATE grants SET revoked_at = ?, revoked_reason = 'revoked' WHERE id = ? AND revoked_at IS NULL",
                        vec![(now as f64).into(), id.clone().into()],
                    ),
                }
                .map_err(storage)?;
                if cursor.rows_written() == 0 && !self.revoke_family(&id, member.as_deref(), now)? {
                    return Err(RosterError::UnknownGrant(id));
                }
                Ok(json!({"id": id, "revoked_at": now}))
            }
            Command::RecordExecution {
                at,
                member,
                tool,
                connection,
                outcome,
                upstream_status,
                latency_ms,
            } => {
                self.sql
                    .exec(
                        RECORD_EXECUTION_SQL,
                        vec![
                            (at as f64).into(),
                            member.into(),
                            tool.into(),
                            connection
                                .map(Into::into)
                                .unwrap_or(worker::SqlStorageValue::Null),
                            outcome.into(),
                            upstream_status
                                .map(|s| (s as f64).into())
                                .unwrap_or(worker::SqlStorageValue::Null),
                            (latency_ms as f64).into(),
                        ],
                    )
                    .map_err(storage)?;
                // Bounded on its own: executions never evict an audit row.
                self.sql
                    .exec(
                        PRUNE_EXECUTIONS_SQL,
                        vec![(MAX_EXECUTION_ROWS as f64).into()],
                    )
                    .map_err(storage)?;
                Ok(Value::Null)
            }
            Command::ListExecutions { limit } => {
                let rows: Vec<ExecutionRow> = self
                    .sql
                    .exec(
                        "SELECT * FROM executions ORDER BY seq DESC LIMIT ?",
                        vec![(limit.clamp(1, 1000) as f64).into()],
                    )
                    .and_then(|c| c.to_array())
                    .map_err(storage)?;
                let items: Vec<Value> = rows
                    .into_iter()
                    .map(|r| {
                        json!({"seq": r.seq as i64, "at": r.at as i64, "member": r.member_id, "tool": r.tool,
                               "connection": r.connection, "outcome": r.outcome,
                               "upstream_status": r.upstream_status.map(|s| s as i64), "latency_ms": r.latency_ms as i64})
                    })
                    .collect();
                Ok(Value::Array(items))
            }
            // Written by `run_and_audit`, like every other command's row.
            Command::RecordAudit { .. } => Ok(Value::Null),
            Command::StoreAccount {
                connection,
                member,
                sealed,
                link,
                now,
                ..
            } => {
                // Every statement below runs in this one synchronous step: the link is spent
                // and the credential stored together, or neither.
                if let Some(member) = &member {
                    let active: Vec<Count> = self
                        .sql
                        .exec(accounts::MEMBER_ACTIVE_SQL, vec![member.clone().into()])
                        .and_then(|c| c.to_array())
                        .map_err(storage)?;
                    if !active.first().is_some_and(|c| c.n > 0.0) {
                        return Err(RosterError::MemberNotActive(member.clone()));
                    }
                }
                if let Some(link) = link {
                    self.sql
                        .exec(accounts::PURGE_SPENT_LINKS_SQL, vec![(now as f64).into()])
                        .map_err(storage)?;
                    let spent = self
                        .sql
                        .exec(
                            accounts::SPEND_LINK_SQL,
                            vec![link.hash.into(), (link.expires_at as f64).into()],
                        )
                        .map_err(storage)?;
                    if spent.rows_written() == 0 {
                        return Err(RosterError::LinkUsed);
                    }
                }
                let column = member.clone().unwrap_or_default();
                self.sql
                    .exec(
                        accounts::UPSERT_SQL,
                        vec![
                            connection.clone().into(),
                            column.into(),
                            sealed.into(),
                            (now as f64).into(),
                        ],
                    )
                    .map_err(storage)?;
                Ok(
                    json!({"connection": connection, "member": member, "status": accounts::STATUS_CONNECTED}),
                )
            }
            Command::ReadAccount { connection, member } => {
                let rows: Vec<StoredAccount> = self
                    .sql
                    .exec(
                        accounts::SELECT_SQL,
                        vec![connection.into(), member.unwrap_or_default().into()],
                    )
                    .and_then(|c| c.to_array())
                    .map_err(storage)?;
                Ok(rows
                    .into_iter()
                    .next()
                    .map(|row| serde_json::to_value(row).unwrap_or(Value::Null))
                    .unwrap_or(Value::Null))
            }
            Command::DeleteAccount {
                connection, member, ..
            } => {
                let cursor = self
                    .sql
                    .exec(
                        accounts::DELETE_SQL,
                        vec![connection.into(), member.unwrap_or_default().into()],
                    )
                    .map_err(storage)?;
                Ok(json!({"disconnected": cursor.rows_written() > 0}))
            }
            Command::ListAccounts { member } => {
                let cursor = match member {
                    Some(member) => self.sql.exec(accounts::LIST_SQL, vec![member.into()]),
                    None => self.sql.exec(accounts::LIST_ALL_SQL, None),
                };
                let rows: Vec<AccountRow> = cursor.and_then(|c| c.to_array()).map_err(storage)?;
                let accounts: Vec<AccountInfo> = rows
                    .into_iter()
                    .map(|r| AccountInfo {
                        connection: r.connection_id,
                        member: (r.member_id != accounts::SHARED).then_some(r.member_id),
                        status: r.status,
                        created_at: r.created_at as i64,
                        updated_at: r.updated_at as i64,
                    })
                    .collect();
                Ok(serde_json::to_value(accounts).unwrap_or(Value::Null))
            }
            Command::ResealAccounts { tenant, .. } => self.reseal(&tenant),
            Command::ForgetConnections { keep, added, .. } => {
                let json = |ids: Vec<String>| Value::from(ids).to_string();
                let cursor = self
                    .sql
                    .exec(
                        accounts::FORGET_CONNECTIONS_SQL,
                        vec![json(keep).into(), json(added).into()],
                    )
                    .map_err(storage)?;
                Ok(json!({"forgotten": cursor.rows_written()}))
            }
            Command::LeaseRefresh {
                connection,
                member,
                sealed,
                holder,
                now,
            } => {
                // One synchronous step: the row read, compared and the lease taken together,
                // so two calls can never both be granted while the row holds one value.
                let rows: Vec<StoredAccount> = self
                    .sql
                    .exec(
                        accounts::SELECT_SQL,
                        vec![connection.clone().into(), member.clone().into()],
                    )
                    .and_then(|c| c.to_array())
                    .map_err(storage)?;
                let reply = match rows.into_iter().next() {
                    None => LeaseReply::Gone,
                    Some(row)
                        if row.sealed != sealed || row.status != accounts::STATUS_CONNECTED =>
                    {
                        LeaseReply::Changed { account: row }
                    }
                    Some(_) => {
                        let taken = self
                            .sql
                            .exec(
                                accounts::TAKE_LEASE_SQL,
                                vec![
                                    connection.into(),
                                    member.into(),
                                    holder.into(),
                                    ((now + accounts::REFRESH_LEASE_MS) as f64).into(),
                                    (now as f64).into(),
                                ],
                            )
                            .map_err(storage)?;
                        if taken.rows_written() > 0 {
                            LeaseReply::Granted
                        } else {
                            LeaseReply::Busy
                        }
                    }
                };
                Ok(serde_json::to_value(reply).unwrap_or(Value::Null))
            }
            Command::FinishRefresh {
                connection,
                member,
                holder,
                sealed,
                status,
                now,
            } => {
                let ended = self
                    .sql
                    .exec(
                        accounts::END_LEASE_SQL,
                        vec![
                            connection.clone().into(),
                            member.clone().into(),
                            holder.into(),
                        ],
                    )
                    .map_err(storage)?;
                if ended.rows_written() == 0 {
                    return Ok(json!({"stored": false}));
                }
                let written = match (sealed, status) {
                    (Some(sealed), _) => self.sql.exec(
                        accounts::STORE_REFRESHED_SQL,
                        vec![
                            sealed.into(),
                            (now as f64).into(),
                            connection.into(),
                            member.into(),
                        ],
                    ),
                    (None, Some(status)) => self.sql.exec(
                        accounts::SET_STATUS_SQL,
                        vec![
                            status.into(),
                            (now as f64).into(),
                            connection.into(),
                            member.into(),
                        ],
                    ),
                    (None, None) => return Ok(json!({"stored": false})),
                }
                .map_err(storage)?;
                Ok(json!({"stored": written.rows_written() > 0}))
            }
            Command::MarkAccount {
                connection,
                member,
                sealed,
                status,
                now,
            } => {
                let cursor = self
                    .sql
                    .exec(
                        accounts::MARK_SQL,
                        vec![
                            status.into(),
                            (now as f64).into(),
                            connection.into(),
                            member.unwrap_or_default().into(),
                            sealed.into(),
                        ],
                    )
                    .map_err(storage)?;
                Ok(json!({"marked": cursor.rows_written() > 0}))
            }
            Command::LinkSpent { hash } => {
                let rows: Vec<Count> = self
                    .sql
                    .exec(accounts::LINK_SPENT_SQL, vec![hash.into()])
                    .and_then(|c| c.to_array())
                    .map_err(storage)?;
                Ok(Value::Bool(rows.first().is_some_and(|c| c.n > 0.0)))
            }
            Command::ListAudit { limit } => {
                let mut classes = serde_json::Map::new();
                for class in AuditClass::ALL {
                    let rows: Vec<AuditRow> = self
                        .sql
                        .exec(
                            LIST_AUDIT_SQL,
                            vec![class.as_str().into(), (limit.clamp(1, 1000) as f64).into()],
                        )
                        .and_then(|c| c.to_array())
                        .map_err(storage)?;
                    let items = rows
                        .into_iter()
                        .map(|r| {
                            json!({"seq": r.seq as i64, "at": r.at as i64, "class": r.class, "actor": r.actor,
                                   "action": r.action, "target": r.target, "detail": r.detail})
                        })
                        .collect();
                    classes.insert(class.as_str().to_owned(), Value::Array(items));
                }
                Ok(Value::Object(classes))
            }
        }
    }
}
