//! Re-sealing a tenant's stored credentials under the newest vault key version (issue 19),
//! decided over the rows the roster read, before anything is written.
//!
//! Every row is opened for its owner (tenant, connection, member): one sealed under an older
//! version is sealed again under the newest with a fresh nonce; one under the newest is already
//! current; one that does not open (a version the deployment no longer holds, a damaged value)
//! is unreadable and left as it is, named by its connection and member in the answer. Nothing
//! here, and nothing the answer or the audit row carries, is a credential, sealed or not.

use serde::Deserialize;
use serde_json::{json, Value};
use std::fmt;

use crate::accounts::SHARED;
use crate::roster::{Actor, AuditEntry};
use crate::vault::{Owner, Vault, NONCE_BYTES};

/// The answer names at most this many unreadable accounts (it counts all of them).
pub const MAX_UNREADABLE_LISTED: usize = 100;

/// One stored account as read for re-sealing (`accounts::SEALED_ALL_SQL`).
#[derive(Clone, PartialEq, Eq, Deserialize)]
pub struct SealedRow {
    pub connection_id: String,
    /// [`SHARED`] for a shared account.
    pub member_id: String,
    pub sealed: String,
}

impl fmt::Debug for SealedRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SealedRow({}, {:?})", self.connection_id, self.member_id)
    }
}

/// A row to rewrite: its keys, the value read and the value sealed under the newest version.
#[derive(Clone, PartialEq, Eq)]
pub struct Rewrite {
    pub connection_id: String,
    pub member_id: String,
    pub from: String,
    pub to: String,
}

impl fmt::Debug for Rewrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Rewrite({}, {:?})", self.connection_id, self.member_id)
    }
}

/// An account whose stored value does not open: who it belongs to and why, never the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub connection: String,
    /// `None` for a shared account.
    pub member: Option<String>,
    pub problem: String,
}

/// What re-sealing a tenant's rows comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub key_version: u32,
    pub rewrites: Vec<Rewrite>,
    pub already_current: usize,
    pub unreadable: Vec<Unreadable>,
}

/// Why nothing was re-sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResealError {
    /// The platform gave no randomness for a nonce; nothing was written.
    NoRandomness,
}

impl fmt::Display for ResealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResealError::NoRandomness => write!(
                f,
                "the gateway had no randomness for new nonces, so nothing was re-sealed; try again"
            ),
        }
    }
}

/// Decides every row of `tenant`: `nonce` gives a fresh nonce per value sealed again.
pub fn plan(
    vault: &Vault,
    tenant: &str,
    rows: Vec<SealedRow>,
    mut nonce: impl FnMut() -> Option<[u8; NONCE_BYTES]>,
) -> Result<Plan, ResealError> {
    let mut plan = Plan {
        key_version: vault.sealing_version(),
        rewrites: Vec::new(),
        already_current: 0,
        unreadable: Vec::new(),
    };
    for row in rows {
        let member = (row.member_id != SHARED).then_some(row.member_id.as_str());
        let owner = Owner {
            tenant,
            connection: &row.connection_id,
            member,
        };
        match vault.open(owner, &row.sealed) {
            Err(problem) => plan.unreadable.push(Unreadable {
                connection: row.connection_id.clone(),
                member: member.map(str::to_owned),
                problem: problem.to_string(),
            }),
            Ok(_) if !vault.is_stale(&row.sealed) => plan.already_current += 1,
            Ok(secret) => {
                let to = vault.seal(owner, &secret, nonce().ok_or(ResealError::NoRandomness)?);
                plan.rewrites.push(Rewrite {
                    connection_id: row.connection_id,
                    member_id: row.member_id,
                    from: row.sealed,
                    to,
                });
            }
        }
    }
    Ok(plan)
}

impl Plan {
    /// The answer once the rewrites ran, `resealed` of them written (a row that changed since
    /// it was read is not): counts, the key version, and the unreadable accounts by name.
    pub fn answer(&self, resealed: usize) -> Value {
        let listed: Vec<Value> = self
            .unreadable
            .iter()
            .take(MAX_UNREADABLE_LISTED)
            .map(|u| json!({"connection": u.connection, "member": u.member, "problem": u.problem}))
            .collect();
        json!({
            "key_version": self.key_version,
            "resealed": resealed,
            "already_current": self.already_current,
            "unreadable": self.unreadable.len(),
            "unreadable_accounts": listed,
        })
    }
}

/// The audit row of a re-seal, from its answer: counts and the key version, nothing more.
pub fn audit_entry(now: i64, by: &Actor, answer: &Value) -> AuditEntry {
    let count = |field: &str| answer.get(field).and_then(Value::as_u64).unwrap_or(0);
    let detail = format!(
        "{} re-sealed under key version {}, {} already current, {} unreadable",
        count("resealed"),
        count("key_version"),
        count("already_current"),
        count("unreadable"),
    );
    AuditEntry::new(now, by, "account.reseal", "accounts", Some(detail))
}
