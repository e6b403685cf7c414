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

mod accounts {
    use super::roster;
    use floorgate::accounts::{
        DELETE_SQL, FORGET_CONNECTIONS_SQL, LINK_SPENT_SQL, LIST_ALL_SQL, LIST_SQL,
        MEMBER_ACTIVE_SQL, PURGE_SPENT_LINKS_SQL, SCHEMA, SELECT_SQL,
        SET_STATUS_SQL as SET_ACCOUNT_STATUS_SQL, SHARED, SPEND_LINK_SQL, UPSERT_SQL,
    };
    use floorgate::accounts::{
        END_LEASE_SQL, MARK_SQL, REFRESH_LEASE_MS, STORE_REFRESHED_SQL, TAKE_LEASE_SQL,
    };
    use floorgate::roster::SET_STATUS_SQL;
    use rusqlite::{params, Connection, OptionalExtension};

    fn with_accounts() -> Connection {
        let db = roster();
        for _ in 0..2 {
            for statement in SCHEMA {
                db.execute_batch(statement).unwrap();
            }
        }
        for (connection, member, sealed) in [
            ("jira", "ada", "fgv1.1.ada"),
            ("jira", "bob", "fgv1.1.bob"),
            ("slack", SHARED, "fgv1.1.shared"),
        ] {
            db.execute(UPSERT_SQL, params![connection, member, sealed, 5])
                .unwrap();
        }
        db
    }

    fn sealed(db: &Connection, connection: &str, member: &str) -> Option<String> {
        db.query_row(SELECT_SQL, params![connection, member], |r| r.get(0))
            .optional()
            .unwrap()
    }

    #[test]
    fn a_catalog_write_forgets_the_accounts_of_removed_and_added_connections() {
        let db = with_accounts();
        db.execute(UPSERT_SQL, params!["wiki", "ada", "fgv1.1.wiki", 5])
            .unwrap();
        // The new catalog keeps jira and wiki (slack is removed) and adds wiki back as new.
        let forgotten = db
            .execute(
                FORGET_CONNECTIONS_SQL,
                params![r#"["jira","wiki"]"#, r#"["wiki"]"#],
            )
            .unwrap();
        assert_eq!(forgotten, 2, "slack's shared account and wiki's old one");
        assert_eq!(sealed(&db, "slack", SHARED), None);
        assert_eq!(sealed(&db, "wiki", "ada"), None);
        assert_eq!(sealed(&db, "jira", "ada").as_deref(), Some("fgv1.1.ada"));
        assert_eq!(sealed(&db, "jira", "bob").as_deref(), Some("fgv1.1.bob"));
        // A catalog without connections forgets every account.
        assert_eq!(
            db.execute(FORGET_CONNECTIONS_SQL, params!["[]", "[]"])
                .unwrap(),
            2
        );
    }

    #[test]
    fn each_member_reads_their_own_account_and_the_shared_one() {
        let db = with_accounts();
        assert_eq!(sealed(&db, "jira", "ada").as_deref(), Some("fgv1.1.ada"));
        assert_eq!(sealed(&db, "jira", "bob").as_deref(), Some("fgv1.1.bob"));
        assert_eq!(
            sealed(&db, "slack", SHARED).as_deref(),
            Some("fgv1.1.shared")
        );
        assert_eq!(
            sealed(&db, "slack", "ada"),
            None,
            "no personal slack account"
        );
        let listed: Vec<(String, String)> = db
            .prepare(LIST_SQL)
            .unwrap()
            .query_map(params!["ada"], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            listed,
            [
                ("jira".into(), "ada".into()),
                ("slack".into(), String::new())
            ],
            "never another member's account"
        );
    }

    #[test]
    fn reconnecting_replaces_the_credential_and_clears_the_status() {
        let db = with_accounts();
        db.execute(
            SET_ACCOUNT_STATUS_SQL,
            params!["needs_reconnect", 6, "jira", "ada"],
        )
        .unwrap();
        db.execute(UPSERT_SQL, params!["jira", "ada", "fgv1.1.new", 7])
            .unwrap();
        let (value, status, created): (String, String, i64) = db
            .query_row(
                "SELECT sealed, status, created_at FROM connected_accounts WHERE connection_id = 'jira' AND member_id = 'ada'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(
            (value.as_str(), status.as_str(), created),
            ("fgv1.1.new", "connected", 5)
        );
        db.execute(DELETE_SQL, params!["jira", "ada"]).unwrap();
        assert_eq!(sealed(&db, "jira", "ada"), None);
    }

    #[test]
    fn removing_a_member_deletes_their_accounts_in_the_same_statement() {
        let db = with_accounts();
        db.execute(SET_STATUS_SQL, params!["suspended", 10, "ada"])
            .unwrap();
        assert_eq!(
            sealed(&db, "jira", "ada"),
            None,
            "a suspended member's account is not read"
        );
        let kept: i64 = db
            .query_row(
                "SELECT COUNT(*) FROM connected_accounts WHERE member_id = 'ada'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(kept, 1, "suspension keeps it for a reinstatement");
        db.execute(SET_STATUS_SQL, params!["removed", 11, "ada"])
            .unwrap();
        let left: i64 = db
            .query_row(
                "SELECT COUNT(*) FROM connected_accounts WHERE member_id = 'ada'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(left, 0, "removal deletes the credential");
        assert_eq!(sealed(&db, "jira", "bob").as_deref(), Some("fgv1.1.bob"));
        assert_eq!(
            sealed(&db, "slack", SHARED).as_deref(),
            Some("fgv1.1.shared")
        );
    }

    #[test]
    fn a_link_is_spent_once_and_forgotten_after_its_expiry() {
        let db = with_accounts();
        let spent = |hash: &str| -> i64 {
            db.query_row(LINK_SPENT_SQL, params![hash], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(spent("h1"), 0);
        assert_eq!(db.execute(SPEND_LINK_SQL, params!["h1", 100]).unwrap(), 1);
        // The second use writes nothing: the roster refuses the store with it.
        assert_eq!(db.execute(SPEND_LINK_SQL, params!["h1", 100]).unwrap(), 0);
        assert_eq!(spent("h1"), 1);
        db.execute(PURGE_SPENT_LINKS_SQL, params![99]).unwrap();
        assert_eq!(spent("h1"), 1, "kept until it would have expired");
        db.execute(PURGE_SPENT_LINKS_SQL, params![101]).unwrap();
        assert_eq!(spent("h1"), 0);
    }

    #[test]
    fn only_an_active_member_stores_a_personal_account() {
        let db = with_accounts();
        let active = |member: &str| -> i64 {
            db.query_row(MEMBER_ACTIVE_SQL, params![member], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(active("ada"), 1);
        db.execute(SET_STATUS_SQL, params!["suspended", 9, "ada"])
            .unwrap();
        assert_eq!(active("ada"), 0);
        assert_eq!(active("nobody"), 0);
    }

    #[test]
    fn the_admin_listing_names_every_account_and_holds_no_credential() {
        let db = with_accounts();
        let mut statement = db.prepare(LIST_ALL_SQL).unwrap();
        let columns: Vec<String> = statement
            .column_names()
            .into_iter()
            .map(str::to_owned)
            .collect();
        assert!(!columns.iter().any(|c| c == "sealed"), "{columns:?}");
        let rows: Vec<(String, String)> = statement
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows.len(), 3);
        db.execute(SET_STATUS_SQL, params!["removed", 9, "bob"])
            .unwrap();
        let left: i64 = db
            .query_row("SELECT COUNT(*) FROM connected_accounts", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 2, "bob's row went with his removal");
    }

    /// The OAuth refresh lease (`Command::LeaseRefresh` / `FinishRefresh`): one holder at a
    /// time per account, taken over only after it ran out, and only its holder stores.
    #[test]
    fn one_refresh_lease_per_account_and_only_its_holder_stores() {
        let db = with_accounts();
        let take = |holder: &str, now: i64| -> usize {
            db.execute(
                TAKE_LEASE_SQL,
                params!["jira", "ada", holder, now + REFRESH_LEASE_MS, now],
            )
            .unwrap()
        };
        assert_eq!(take("call-1", 1000), 1, "the first call gets it");
        assert_eq!(take("call-2", 1001), 0, "a concurrent call waits");
        assert_eq!(
            take("call-1", 1002),
            0,
            "not even its holder takes it twice"
        );
        // Another account's lease is its own.
        assert_eq!(
            db.execute(
                TAKE_LEASE_SQL,
                params!["jira", "bob", "call-3", 1001 + REFRESH_LEASE_MS, 1001]
            )
            .unwrap(),
            1
        );
        // A holder that never finished loses it when its time runs out.
        assert_eq!(take("call-2", 1000 + REFRESH_LEASE_MS), 1);
        // The first holder comes back late: its lease is gone, it may not store.
        assert_eq!(
            db.execute(END_LEASE_SQL, params!["jira", "ada", "call-1"])
                .unwrap(),
            0
        );
        assert_eq!(
            db.execute(END_LEASE_SQL, params!["jira", "ada", "call-2"])
                .unwrap(),
            1
        );
        db.execute(
            SET_ACCOUNT_STATUS_SQL,
            params!["needs_reconnect", 5, "jira", "ada"],
        )
        .unwrap();
        assert_eq!(
            db.execute(
                STORE_REFRESHED_SQL,
                params!["fgv1.1.fresh", 6, "jira", "ada"]
            )
            .unwrap(),
            1
        );
        let (stored, status): (String, String) = db
            .query_row(
                "SELECT sealed, status FROM connected_accounts WHERE connection_id = 'jira' AND member_id = 'ada'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(
            (stored.as_str(), status.as_str()),
            ("fgv1.1.fresh", "connected")
        );
        // A refresh that ends after a disconnect stores nothing: no row comes back.
        db.execute(DELETE_SQL, params!["jira", "bob"]).unwrap();
        assert_eq!(
            db.execute(
                STORE_REFRESHED_SQL,
                params!["fgv1.1.late", 7, "jira", "bob"]
            )
            .unwrap(),
            0
        );
        assert_eq!(sealed(&db, "jira", "bob"), None);
    }

    fn status(db: &Connection, connection: &str, member: &str) -> String {
        db.query_row(
            "SELECT status FROM connected_accounts WHERE connection_id = ?1 AND member_id = ?2",
            params![connection, member],
            |r| r.get(0),
        )
        .unwrap()
    }

    /// Marks `member`'s account of `connection` as the edge does after a refusal of `sent`;
    /// the rows it changed.
    fn mark(db: &Connection, connection: &str, member: &str, sent: &str) -> usize {
        db.execute(
            MARK_SQL,
            params!["needs_reconnect", 9, connection, member, sent],
        )
        .unwrap()
    }

    #[test]
    fn a_refused_token_marks_only_the_row_that_still_holds_it() {
        let db = with_accounts();
        // The upstream refused what ada's row holds: marked.
        assert_eq!(mark(&db, "jira", "ada", "fgv1.1.ada"), 1);
        assert_eq!(status(&db, "jira", "ada"), "needs_reconnect");
        // bob reconnected while his refused call was in flight: his new row stays connected.
        db.execute(UPSERT_SQL, params!["jira", "bob", "fgv1.1.bob-again", 8])
            .unwrap();
        assert_eq!(mark(&db, "jira", "bob", "fgv1.1.bob"), 0);
        assert_eq!(status(&db, "jira", "bob"), "connected");
        // The shared account is marked through its own column; nobody else's row moves.
        assert_eq!(mark(&db, "slack", SHARED, "fgv1.1.shared"), 1);
        assert_eq!(status(&db, "slack", SHARED), "needs_reconnect");
        assert_eq!(status(&db, "jira", "bob"), "connected");
        // Connecting again clears the mark.
        db.execute(UPSERT_SQL, params!["jira", "ada", "fgv1.1.ada-new", 10])
            .unwrap();
        assert_eq!(status(&db, "jira", "ada"), "connected");
    }
}
