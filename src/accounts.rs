//! The accounts members connect (issue 19), as the tenant's roster stores them: sealed
//! credentials only (`vault`), one row per connection and member (`''` for a shared account).
//!
//! A member's removal deletes their personal credentials inside the status change's own
//! statement, as the roster's grant trigger revokes their grants; deleting a connection's row
//! deletes its credential. The statements run in the roster object and on the host's SQLite
//! (`tests/roster_schema.rs`).

/// The member column of a shared account (the connection's one credential).
pub const SHARED: &str = "";

/// Applied after `roster::SCHEMA` (it refers to `members`), one statement per entry,
/// idempotent.
pub const SCHEMA: [&str; 2] = [
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
];

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
/// `(member_id)`: a member's accounts and the shared ones, without their credentials.
pub const LIST_SQL: &str =
    "SELECT connection_id, member_id, status, created_at, updated_at FROM connected_accounts
    WHERE member_id = ?1 OR member_id = '' ORDER BY connection_id, member_id";
