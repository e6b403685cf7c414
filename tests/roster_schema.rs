//! The roster's SQL, run on the host's SQLite: the revocation rides the status change itself.
//!
//! The Durable Object executes exactly these statements; here they run against the same
//! engine (SQLite) so the trigger's semantics are checked where they can be inspected.

use floorgate::roster::{SCHEMA, SET_STATUS_SQL, VALIDATE_SQL};
use rusqlite::{params, Connection};

fn roster() -> Connection {
    let db = Connection::open_in_memory().unwrap();
    for statement in SCHEMA {
        db.execute_batch(statement).unwrap();
    }
    // Applying the schema twice must be harmless: the object runs it on every start.
    for statement in SCHEMA {
        db.execute_batch(statement).unwrap();
    }
    db.execute(
        "INSERT INTO members VALUES ('ada', 'engineer', 'active', 1, 1)",
        [],
    )
    .unwrap();
    db.execute(
        "INSERT INTO members VALUES ('bob', 'engineer', 'active', 1, 1)",
        [],
    )
    .unwrap();
    for (id, member, hash) in [
        ("g1", "ada", "h1"),
        ("g2", "ada", "h2"),
        ("g3", "bob", "h3"),
    ] {
        db.execute(
            "INSERT INTO grants (id, member_id, hash, label, created_at) VALUES (?, ?, ?, 'x', 1)",
            params![id, member, hash],
        )
        .unwrap();
    }
    db
}

fn valid(db: &Connection, hash: &str, member: &str) -> bool {
    db.prepare(VALIDATE_SQL)
        .unwrap()
        .exists(params![hash, member])
        .unwrap()
}

#[test]
fn suspending_revokes_every_grant_of_that_member_in_the_same_statement() {
    let db = roster();
    assert!(valid(&db, "h1", "ada") && valid(&db, "h2", "ada"));
    let changed = db
        .execute(SET_STATUS_SQL, params!["suspended", 10, "ada"])
        .unwrap();
    assert_eq!(changed, 1);
    assert!(!valid(&db, "h1", "ada") && !valid(&db, "h2", "ada"));
    let revoked: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM grants WHERE member_id = 'ada' AND revoked_at = 10 AND revoked_reason = 'member suspended'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(revoked, 2);
    // Another member is untouched.
    assert!(valid(&db, "h3", "bob"));
}

#[test]
fn reinstating_does_not_revive_old_grants() {
    let db = roster();
    db.execute(SET_STATUS_SQL, params!["suspended", 10, "ada"])
        .unwrap();
    db.execute(SET_STATUS_SQL, params!["active", 20, "ada"])
        .unwrap();
    assert!(!valid(&db, "h1", "ada") && !valid(&db, "h2", "ada"));
}

#[test]
fn removal_revokes_and_a_grant_cannot_speak_for_another_member() {
    let db = roster();
    assert!(!valid(&db, "h3", "ada"), "bob's grant claimed by ada");
    db.execute(SET_STATUS_SQL, params!["removed", 30, "bob"])
        .unwrap();
    assert!(!valid(&db, "h3", "bob"));
}

#[test]
fn a_failed_status_change_leaves_grants_alone() {
    let db = roster();
    // The CHECK constraint refuses an unknown status; the trigger's work must roll back with it.
    assert!(db
        .execute(SET_STATUS_SQL, params!["gone", 40, "ada"])
        .is_err());
    assert!(valid(&db, "h1", "ada") && valid(&db, "h2", "ada"));
}

/// Issue 15 item 9: a member's cheap calls (executions, or control changes through MCP) never
/// evict an operator row. Each class is pruned by its own bound with exactly the statements
/// the Durable Object runs; a small bound here stands for the deployed one.
#[test]
fn a_flood_of_member_rows_never_evicts_an_operator_row() {
    use floorgate::roster::{
        PRUNE_AUDIT_SQL, PRUNE_EXECUTIONS_SQL, RECORD_AUDIT_SQL, RECORD_EXECUTION_SQL,
    };
    let db = roster();
    let bound = 50;
    let audit = |db: &Connection, at: i64, class: &str, action: &str| {
        db.execute(
            RECORD_AUDIT_SQL,
            params![at, class, "who", action, "target", None::<String>],
        )
        .unwrap();
        db.execute(PRUNE_AUDIT_SQL, params![class, class, bound])
            .unwrap();
    };
    audit(&db, 1, "operator", "member.put");
    for at in 2..600 {
        audit(&db, at, "control", "member.suspend");
        db.execute(
            RECORD_EXECUTION_SQL,
            params![at, "ada", "get_item", "main", "ok", 200, 5],
        )
        .unwrap();
        db.execute(PRUNE_EXECUTIONS_SQL, params![bound]).unwrap();
    }
    let count = |sql: &str| -> i64 { db.query_row(sql, [], |row| row.get(0)).unwrap() };
    assert_eq!(
        count("SELECT COUNT(*) FROM audit WHERE class = 'operator' AND action = 'member.put'"),
        1,
        "the operator row survives"
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM audit WHERE class = 'control'"),
        bound
    );
    assert_eq!(
        count("SELECT MIN(at) FROM audit WHERE class = 'control'"),
        600 - bound,
        "the newest control rows are the ones kept"
    );
    assert_eq!(count("SELECT COUNT(*) FROM executions"), bound);
    // The operator class is bounded the same way when it is the one that grows.
    for at in 600..700 {
        audit(&db, at, "operator", "document.put");
    }
    assert_eq!(
        count("SELECT COUNT(*) FROM audit WHERE class = 'operator'"),
        bound
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM audit WHERE class = 'control'"),
        bound
    );
}
