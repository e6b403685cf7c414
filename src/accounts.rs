//! The accounts members connect (issue 19), as the tenant's roster stores them: sealed
//! credentials only (`vault`), one row per connection and member (`''` for a shared account).
//!
//! A member's removal deletes their personal credentials inside the status change's own
//! statement, as the roster's grant trigger revokes their grants; deleting a connection's row
//! deletes its credential, and a catalog write deletes the rows of every connection it removes
//! or adds ([`FORGET_CONNECTIONS_SQL`]), so an id added again never finds an old credential.
//! Re-sealing under the newest key version replaces a row's sealed value only if it is still
//! the one read ([`RESEAL_SQL`]). The statements run in the roster object and on the host's
//! SQLite (`tests/roster_schema.rs`).

/// The member column of a shared account (the connection's one credential).
pub const SHARED: &str = "";

/// Who a connection's account belongs to, as the catalog declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AccountKind {
    /// One account for the connection, used by every member the policy lets use it: an
    /// operator-named Worker secret, or one a tenant admin set through the admin API.
    #[default]
    Shared,
    /// Each member connects their own; a call uses the caller's and nobody else's.
    Personal,
}

impl AccountKind {
    pub const SHARED: &'static str = "shared";
    pub const PERSONAL: &'static str = "personal";

    pub fn as_str(self) -> &'static str {
        match self {
            AccountKind::Shared => Self::SHARED,
            AccountKind::Personal => Self::PERSONAL,
        }
    }

    pub fn parse(text: &str) -> Option<AccountKind> {
        match text {
            Self::SHARED => Some(AccountKind::Shared),
            Self::PERSONAL => Some(AccountKind::Personal),
            _ => None,
        }
    }

    /// The member column of an account of this kind for `member`.
    pub fn member_column(self, member: &str) -> &str {
        match self {
            AccountKind::Shared => SHARED,
            AccountKind::Personal => member,
        }
    }
}

/// A stored account's status (the table's `CHECK`), and what `list_connections` says of a
/// connection with no row.
pub const STATUS_CONNECTED: &str = "connected";
pub const STATUS_EXPIRED: &str = "expired";
pub const STATUS_NEEDS_RECONNECT: &str = "needs_reconnect";
pub const STATUS_NOT_CONNECTED: &str = "not_connected";

/// Applied after `roster::SCHEMA` (it refers to `members`), one statement per entry,
/// idempotent.
pub const SCHEMA: [&str; 4] = [
    "CREATE TABLE IF NOT EXISTS connected_accounts (
        connection_id TEXT NOT NULL,
        member_id TEXT NOT NULL,
        sealed TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('connected', 'expired', 'needs_reconnect')),
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (connection_id, member_id)
    )",
    "CREATE TRIGGER IF NOT EXISTS forget_accounts_when_member_is_removed
    AFTER UPDATE OF status ON members
    WHEN NEW.status = 'removed'
    BEGIN
        DELETE FROM connected_accounts WHERE member_id = NEW.id;
    END",
    // The one-time links to the paste page that were used: a link is spent by inserting its
    // hash, so a second use finds it here. Kept until the link would have expired anyway.
    "CREATE TABLE IF NOT EXISTS account_links_spent (
        hash TEXT PRIMARY KEY,
        expires_at INTEGER NOT NULL
    )",
    // Who is refreshing an account's OAuth tokens, until when: one refresh at a time per
    // connection and member (`provider_oauth`). A holder that never finishes loses it at `until`.
    "CREATE TABLE IF NOT EXISTS account_refresh_leases (
        connection_id TEXT NOT NULL,
        member_id TEXT NOT NULL,
        holder TEXT NOT NULL,
        until INTEGER NOT NULL,
        PRIMARY KEY (connection_id, member_id)
    )",
];

/// How long a refresh lease is held before another call may take it over (a little more than
/// the token endpoint's deadline).
pub const REFRESH_LEASE_MS: i64 = 15_000;

/// `(connection_id, member_id, holder, until, now)`: takes the refresh lease when nobody holds
/// it or the holder's time ran out; one row written means it was taken.
pub const TAKE_LEASE_SQL: &str = "INSERT INTO account_refresh_leases (connection_id, member_id, holder, until) VALUES (?1, ?2, ?3, ?4)
    ON CONFLICT (connection_id, member_id) DO UPDATE SET holder = excluded.holder, until = excluded.until
    WHERE account_refresh_leases.until <= ?5";
/// `(connection_id, member_id, holder)`: ends the holder's lease; one row written means it
/// still held it (and may store what it got).
pub const END_LEASE_SQL: &str = "DELETE FROM account_refresh_leases WHERE connection_id = ?1 AND member_id = ?2 AND holder = ?3";
/// `(sealed, now, connection_id, member_id)`: the refreshed tokens, connected again.
pub const STORE_REFRESHED_SQL: &str = "UPDATE connected_accounts SET sealed = ?1, status = 'connected', updated_at = ?2 WHERE connection_id = ?3 AND member_id = ?4";

/// `(hash, expires_at)`: spends a link; no row written means it was spent before.
pub const SPEND_LINK_SQL: &str =
    "INSERT INTO account_links_spent (hash, expires_at) VALUES (?1, ?2) ON CONFLICT (hash) DO NOTHING";
/// `(hash)`: whether a link was spent.
pub const LINK_SPENT_SQL: &str = "SELECT COUNT(*) AS n FROM account_links_spent WHERE hash = ?1";
/// `(now)`: forgets spent links past their expiry (they no longer verify anyway).
pub const PURGE_SPENT_LINKS_SQL: &str = "DELETE FROM account_links_spent WHERE expires_at < ?1";
/// `(member_id)`: whether the member is active (a personal account is stored only for one).
pub const MEMBER_ACTIVE_SQL: &str =
    "SELECT COUNT(*) AS n FROM members WHERE id = ?1 AND status = 'active'";

/// `(connection_id, member_id, sealed, now, now)`: connects, or replaces the credential of,
/// an account.
pub const UPSERT_SQL: &str = "INSERT INTO connected_accounts (connection_id, member_id, sealed, status, created_at, updated_at) VALUES (?1, ?2, ?3, 'connected', ?4, ?4)
    ON CONFLICT (connection_id, member_id) DO UPDATE SET sealed = excluded.sealed, status = 'connected', updated_at = excluded.updated_at";
/// `(connection_id, member_id)`: the sealed credential and its status, for an active member
/// (or a shared account, whose member column is [`SHARED`]).
pub const SELECT_SQL: &str = "SELECT a.sealed, a.status FROM connected_accounts a
    WHERE a.connection_id = ?1 AND a.member_id = ?2
    AND (?2 = '' OR EXISTS (SELECT 1 FROM members m WHERE m.id = ?2 AND m.status = 'active'))";
/// `(connection_id, member_id)`.
pub const DELETE_SQL: &str =
    "DELETE FROM connected_accounts WHERE connection_id = ?1 AND member_id = ?2";
/// `(status, now, connection_id, member_id)`: after a failed refresh or a refused credential.
pub const SET_STATUS_SQL: &str = "UPDATE connected_accounts SET status = ?1, updated_at = ?2 WHERE connection_id = ?3 AND member_id = ?4";
/// `(status, now, connection_id, member_id, sealed)`: after the upstream refused the account's
/// token, only while the row still holds the value that was sent (a reconnect meanwhile stays).
pub const MARK_SQL: &str = "UPDATE connected_accounts SET status = ?1, updated_at = ?2 WHERE connection_id = ?3 AND member_id = ?4 AND sealed = ?5";
/// Every account of the tenant, without their credentials (the admin API).
pub const LIST_ALL_SQL: &str = "SELECT connection_id, member_id, status, created_at, updated_at FROM connected_accounts ORDER BY connection_id, member_id";
/// `(member_id)`: a member's accounts and the shared ones, without their credentials.
pub const LIST_SQL: &str =
    "SELECT connection_id, member_id, status, created_at, updated_at FROM connected_accounts
    WHERE member_id = ?1 OR member_id = '' ORDER BY connection_id, member_id";
/// Every stored sealed value with its owner, for re-sealing under the newest key version
/// (`vault_reseal`); never answered.
pub const SEALED_ALL_SQL: &str = "SELECT connection_id, member_id, sealed FROM connected_accounts ORDER BY connection_id, member_id";
/// `(new sealed, connection_id, member_id, old sealed)`: re-seals one row, only if it still holds
/// the value that was opened (the status and times are the credential's, so they stay).
pub const RESEAL_SQL: &str = "UPDATE connected_accounts SET sealed = ?1 WHERE connection_id = ?2 AND member_id = ?3 AND sealed = ?4";
/// `(kept ids as a JSON array, added ids as a JSON array)`: at a catalog write, deletes the
/// accounts of every connection the new catalog does not have, and of every connection it adds
/// (an id that comes back starts with no account). JSON arrays, so any number of ids is two
/// bound parameters.
pub const FORGET_CONNECTIONS_SQL: &str = "DELETE FROM connected_accounts
    WHERE connection_id NOT IN (SELECT value FROM json_each(?1))
    OR connection_id IN (SELECT value FROM json_each(?2))";
