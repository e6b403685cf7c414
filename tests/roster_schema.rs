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
