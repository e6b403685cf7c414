//! Re-sealing under the newest key version, on the host's SQLite with the roster's own
//! statements: stale rows are sealed again and open under the newest version alone, current
//! rows are counted, unreadable rows are named and left untouched, and no answer holds a
//! credential.

use floorgate::accounts::{RESEAL_SQL, SCHEMA as ACCOUNTS_SCHEMA, SEALED_ALL_SQL, UPSERT_SQL};
use floorgate::reseal::{self, ResealError, SealedRow};
use floorgate::roster::{Actor, SCHEMA};
use floorgate::vault::{Owner, Vault, MIN_MASTER_BYTES, NONCE_BYTES};
use rusqlite::{params, Connection};

fn vault(versions: &[u32]) -> Vault {
    Vault::new(
        versions
            .iter()
            .map(|v| (*v, vec![*v as u8; MIN_MASTER_BYTES]))
            .collect(),
    )
    .unwrap()
}

fn owner<'a>(connection: &'a str, member: Option<&'a str>) -> Owner<'a> {
    Owner {
        tenant: "acme",
        connection,
        member,
    }
}

fn rows(db: &Connection) -> Vec<SealedRow> {
    db.prepare(SEALED_ALL_SQL)
        .unwrap()
        .query_map([], |r| {
            Ok(SealedRow {
                connection_id: r.get(0)?,
                member_id: r.get(1)?,
                sealed: r.get(2)?,
            })
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn db() -> Connection {
    let db = Connection::open_in_memory().unwrap();
    for statement in SCHEMA.iter().chain(ACCOUNTS_SCHEMA.iter()) {
        db.execute_batch(statement).unwrap();
    }
    let v1 = vault(&[1]);
    let v2 = vault(&[1, 2]);
    let rows = [
        (
            "jira",
            "ada",
            v1.seal(owner("jira", Some("ada")), "ada-key", [1; NONCE_BYTES]),
        ),
        (
            "jira",
            "bob",
            v2.seal(owner("jira", Some("bob")), "bob-key", [2; NONCE_BYTES]),
        ),
        (
            "slack",
            "",
            v1.seal(owner("slack", None), "team-key", [3; NONCE_BYTES]),
        ),
        // Sealed for another member: copied here, it does not open.
        (
            "wiki",
            "cy",
            v1.seal(owner("wiki", Some("dan")), "dan-key", [4; NONCE_BYTES]),
        ),
        ("zoom", "cy", "fgv1.1.damaged".to_owned()),
    ];
    for (connection, member, sealed) in rows {
        db.execute(UPSERT_SQL, params![connection, member, sealed, 5])
            .unwrap();
    }
    db
}

#[test]
fn stale_rows_are_sealed_again_and_open_under_the_newest_version_alone() {
    let db = db();
    let newest = vault(&[1, 2]);
    let mut n = 10u8;
    let plan = reseal::plan(&newest, "acme", rows(&db), || {
        n += 1;
        Some([n; NONCE_BYTES])
    })
    .unwrap();
    assert_eq!(plan.key_version, 2);
    assert_eq!(plan.rewrites.len(), 2, "{plan:?}");
    assert_eq!(plan.already_current, 1);
    let unreadable: Vec<(&str, Option<&str>)> = plan
        .unreadable
        .iter()
        .map(|u| (u.connection.as_str(), u.member.as_deref()))
        .collect();
    assert_eq!(unreadable, [("wiki", Some("cy")), ("zoom", Some("cy"))]);
    let before = rows(&db);
    let mut written = 0;
    for rewrite in &plan.rewrites {
        written += db
            .execute(
                RESEAL_SQL,
                params![
                    rewrite.to,
                    rewrite.connection_id,
                    rewrite.member_id,
                    rewrite.from
                ],
            )
            .unwrap();
    }
    assert_eq!(written, 2);
    let v2_only = Vault::new(vec![(2, vec![2; MIN_MASTER_BYTES])]).unwrap();
    let after = rows(&db);
    let open = |connection: &str, member: &str| {
        let row = after
            .iter()
            .find(|r| r.connection_id == connection && r.member_id == member)
            .unwrap();
        let member = (!member.is_empty()).then_some(member);
        v2_only.open(owner(connection, member), &row.sealed)
    };
    assert_eq!(open("jira", "ada").unwrap(), "ada-key");
    assert_eq!(open("jira", "bob").unwrap(), "bob-key");
    assert_eq!(open("slack", "").unwrap(), "team-key");
    // Unreadable rows are left exactly as they were.
    for (b, a) in before.iter().zip(&after) {
        if b.connection_id == "wiki" || b.connection_id == "zoom" {
            assert_eq!(b.sealed, a.sealed);
        }
    }
    let answer = plan.answer(written);
    assert_eq!(answer["resealed"], 2);
    assert_eq!(answer["already_current"], 1);
    assert_eq!(answer["unreadable"], 2);
    assert_eq!(answer["unreadable_accounts"][0]["connection"], "wiki");
    let text = answer.to_string();
    for secret in ["ada-key", "bob-key", "team-key", "dan-key", "fgv1."] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    let entry = reseal::audit_entry(7, &Actor::Operator, &answer);
    assert_eq!(entry.action, "account.reseal");
    assert_eq!(
        entry.detail.as_deref(),
        Some("2 re-sealed under key version 2, 1 already current, 2 unreadable")
    );
    // A second run finds everything readable current.
    let again = reseal::plan(&newest, "acme", rows(&db), || Some([99; NONCE_BYTES])).unwrap();
    assert_eq!((again.rewrites.len(), again.already_current), (0, 3));
}

#[test]
fn a_row_changed_since_it_was_read_is_not_overwritten() {
    let db = db();
    let plan = reseal::plan(&vault(&[1, 2]), "acme", rows(&db), || {
        Some([9; NONCE_BYTES])
    })
    .unwrap();
    // Ada reconnects between the read and the write.
    db.execute(UPSERT_SQL, params!["jira", "ada", "fgv1.2.newer", 6])
        .unwrap();
    let ada = plan.rewrites.iter().find(|r| r.member_id == "ada").unwrap();
    let written = db
        .execute(
            RESEAL_SQL,
            params![ada.to, ada.connection_id, ada.member_id, ada.from],
        )
        .unwrap();
    assert_eq!(written, 0);
    assert!(rows(&db).iter().any(|r| r.sealed == "fgv1.2.newer"));
}

#[test]
fn without_randomness_nothing_is_resealed_and_debug_shows_no_value() {
    let db = db();
    let refused = reseal::plan(&vault(&[1, 2]), "acme", rows(&db), || None);
    assert_eq!(refused, Err(ResealError::NoRandomness));
    assert!(ResealError::NoRandomness
        .to_string()
        .contains("nothing was re-sealed"));
    let shown = format!("{:?}", rows(&db));
    assert!(!shown.contains("fgv1"), "{shown}");
}
