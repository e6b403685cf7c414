//! The token state machine over the host's SQLite, with the statements the roster object runs:
//! codes are single-use, refresh tokens rotate and a spent one revokes its family, and a
//! member's suspension or removal revokes their tokens inside the status change itself.

use floorgate::oauth::command::{
    run, NoTables, OAuthCommand, OAuthReply, Randomness, SECRETS_PER_COMMAND,
};
use floorgate::oauth::metadata::BearerChallenge;
use floorgate::oauth::pkce::{challenge_of, Challenge};
use floorgate::oauth::token::*;
use floorgate::oauth::ErrorCode;
use floorgate::roster;
use rusqlite::{params, Connection, OptionalExtension};

const RESOURCE: &str = "https://gate.example.com/mcp";
const CLIENT: &str = "https://app.example.com/client.json";
const REDIRECT: &str = "https://app.example.com/cb";
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const T0: i64 = 1_700_000_000_000;
/// The deployment's token key in these tests (`OAuthKeys::tokens` in the Worker).
const TOKEN_KEY: &[u8] = b"the token key of the test deployment";

struct Sqlite(Connection);

impl TokenStore for Sqlite {
    type Error = rusqlite::Error;

    fn token_key(&self) -> &[u8] {
        TOKEN_KEY
    }

    fn insert_code(&mut self, c: &CodeRecord) -> Result<(), Self::Error> {
        self.0
            .execute(
                INSERT_CODE_SQL,
                params![
                    c.hash,
                    c.family_id,
                    c.member,
                    c.client_id,
                    c.client_name,
                    c.redirect_uri,
                    c.code_challenge,
                    c.scope,
                    c.resource,
                    c.created_at,
                    c.expires_at
                ],
            )
            .map(drop)
    }

    fn select_code(&mut self, hash: &str) -> Result<Option<StoredCode>, Self::Error> {
        self.0
            .query_row(SELECT_CODE_SQL, [hash], |r| {
                Ok(StoredCode {
                    record: CodeRecord {
                        hash: hash.to_owned(),
                        family_id: r.get(0)?,
                        member: r.get(1)?,
                        client_id: r.get(2)?,
                        client_name: r.get(3)?,
                        redirect_uri: r.get(4)?,
                        code_challenge: r.get(5)?,
                        scope: r.get(6)?,
                        resource: r.get(7)?,
                        created_at: r.get(8)?,
                        expires_at: r.get(9)?,
                    },
                    used_at: r.get(10)?,
                    revoked_at: r.get(11)?,
                    member_active: r.get(12)?,
                })
            })
            .optional()
    }

    fn use_code(&mut self, hash: &str, now: i64) -> Result<bool, Self::Error> {
        Ok(self.0.execute(USE_CODE_SQL, params![now, hash])? == 1)
    }

    fn insert_family(&mut self, f: &FamilyRecord) -> Result<(), Self::Error> {
        self.0
            .execute(
                INSERT_FAMILY_SQL,
                params![
                    f.id,
                    f.member,
                    f.client_id,
                    f.client_name,
                    f.scope,
                    f.resource,
                    f.created_at
                ],
            )
            .map(drop)
    }

    fn insert_token(&mut self, t: &TokenRecord) -> Result<(), Self::Error> {
        self.0
            .execute(
                INSERT_TOKEN_SQL,
                params![
                    t.hash,
                    t.kind.column(),
                    t.family_id,
                    t.created_at,
                    t.expires_at
                ],
            )
            .map(drop)
    }

    fn select_token(&mut self, hash: &str) -> Result<Option<StoredToken>, Self::Error> {
        self.0
            .query_row(SELECT_TOKEN_SQL, [hash], |r| {
                let kind: String = r.get(0)?;
                Ok(StoredToken {
                    kind: TokenKind::from_column(&kind).expect("the CHECK allows only these"),
                    family_id: r.get(1)?,
                    expires_at: r.get(2)?,
                    used_at: r.get(3)?,
                    revoked_at: r.get(4)?,
                    family_revoked_at: r.get(5)?,
                    member: r.get(6)?,
                    role: r.get(7)?,
                    member_active: r.get(8)?,
                    client_id: r.get(9)?,
                    scope: r.get(10)?,
                    resource: r.get(11)?,
                })
            })
            .optional()
    }

    fn use_token(&mut self, hash: &str, now: i64) -> Result<bool, Self::Error> {
        Ok(self.0.execute(USE_TOKEN_SQL, params![now, hash])? == 1)
    }

    fn revoke_family(&mut self, id: &str, now: i64, reason: &str) -> Result<(), Self::Error> {
        self.0
            .execute(REVOKE_FAMILY_SQL, params![now, reason, id])
            .map(drop)
    }

    fn revoke_token(&mut self, hash: &str, now: i64, reason: &str) -> Result<(), Self::Error> {
        self.0
            .execute(REVOKE_TOKEN_SQL, params![now, reason, hash])
            .map(drop)
    }

    fn insert_sign_in(&mut self, s: &SignInRecord) -> Result<(), Self::Error> {
        self.0
            .execute(
                INSERT_SIGN_IN_SQL,
                params![s.hash, s.member, s.created_at, s.expires_at],
            )
            .map(drop)
    }

    fn select_sign_in(&mut self, hash: &str) -> Result<Option<StoredSignIn>, Self::Error> {
        self.0
            .query_row(SELECT_SIGN_IN_SQL, [hash], |r| {
                Ok(StoredSignIn {
                    member: r.get(0)?,
                    expires_at: r.get(1)?,
                    used_at: r.get(2)?,
                    revoked_at: r.get(3)?,
                    member_active: r.get(4)?,
                })
            })
            .optional()
    }

    fn use_sign_in(&mut self, hash: &str, now: i64) -> Result<bool, Self::Error> {
        Ok(self.0.execute(USE_SIGN_IN_SQL, params![now, hash])? == 1)
    }
}

fn store() -> Sqlite {
    let db = Connection::open_in_memory().unwrap();
    // Twice: the object applies its schema on every start.
    for _ in 0..2 {
        for statement in roster::SCHEMA.iter().chain(SCHEMA.iter()) {
            db.execute_batch(statement).unwrap();
        }
    }
    for member in ["ada", "bob"] {
        db.execute(
            "INSERT INTO members VALUES (?, 'engineer', 'active', 1, 1)",
            [member],
        )
        .unwrap();
    }
    db.execute(
        "INSERT INTO grants (id, member_id, hash, label, created_at) VALUES ('g1', 'ada', 'h1', 'laptop', 1)",
        [],
    )
    .unwrap();
    Sqlite(db)
}

/// Deterministic randomness: every call a new secret.
fn counter() -> impl FnMut() -> [u8; SECRET_BYTES] {
    let mut n = 0u8;
    move || {
        n = n.wrapping_add(1);
        [n; SECRET_BYTES]
    }
}

fn approval(member: &str) -> Approval {
    Approval {
        tenant: "acme".into(),
        member: member.into(),
        client_id: CLIENT.into(),
        client_name: "Example App".into(),
        redirect_uri: REDIRECT.into(),
        challenge: Challenge::parse(Some(&challenge_of(VERIFIER)), Some("S256")).unwrap(),
        scope: "mcp".into(),
        resource: RESOURCE.into(),
    }
}

fn code_request(code: &str) -> TokenRequest {
    TokenRequest::AuthorizationCode {
        code: code.into(),
        code_verifier: Some(VERIFIER.into()),
        redirect_uri: Some(REDIRECT.into()),
        client_id: CLIENT.into(),
        resource: Some(RESOURCE.into()),
    }
}

fn refresh_request(token: &str) -> TokenRequest {
    TokenRequest::RefreshToken {
        refresh_token: token.into(),
        client_id: CLIENT.into(),
        scope: None,
        resource: None,
    }
}

/// Signs `member` in: a code, then its exchange.
fn signed_in(s: &mut Sqlite, rng: &mut impl FnMut() -> [u8; 32], member: &str) -> TokenResponse {
    let code = issue_code(s, &approval(member), rng, T0).unwrap();
    exchange(s, &code_request(&code), RESOURCE, rng, T0 + 1000).unwrap()
}

fn invalid_token(why: &str) -> Result<AccessIdentity, BearerChallenge> {
    Err(BearerChallenge::InvalidToken(why.into()))
}

#[test]
fn the_whole_flow_code_token_call_refresh() {
    let (mut s, mut rng) = (store(), counter());
    let code = issue_code(&mut s, &approval("ada"), &mut rng, T0).unwrap();
    assert!(code.starts_with("fgc1.acme."));
    let tokens = exchange(&mut s, &code_request(&code), RESOURCE, &mut rng, T0 + 1000).unwrap();
    assert!(tokens.access_token.starts_with("fga1.acme."));
    assert!(tokens.refresh_token.starts_with("fgr1.acme."));
    let body = tokens.body();
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 3600);
    assert_eq!(body["scope"], "mcp");

    let who = authenticate(&mut s, &tokens.access_token, RESOURCE, T0 + 2000).unwrap();
    assert_eq!(
        (who.tenant.as_str(), who.member.as_str(), who.role.as_str()),
        ("acme", "ada", "engineer")
    );
    assert_eq!(who.client_id, CLIENT);

    let next = exchange(
        &mut s,
        &refresh_request(&tokens.refresh_token),
        RESOURCE,
        &mut rng,
        T0 + 5000,
    )
    .unwrap();
    assert_ne!(next.refresh_token, tokens.refresh_token);
    assert_eq!(next.family_id, tokens.family_id);
    assert!(authenticate(&mut s, &next.access_token, RESOURCE, T0 + 6000).is_ok());
    // Storage holds hashes only.
    let leaked: i64 =
        s.0.query_row(
            "SELECT COUNT(*) FROM oauth_tokens WHERE hash IN (?, ?)",
            params![tokens.access_token, tokens.refresh_token],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(leaked, 0);
}

#[test]
fn a_reused_refresh_token_revokes_its_whole_family() {
    let (mut s, mut rng) = (store(), counter());
    let first = signed_in(&mut s, &mut rng, "ada");
    let second = exchange(
        &mut s,
        &refresh_request(&first.refresh_token),
        RESOURCE,
        &mut rng,
        T0 + 2000,
    )
    .unwrap();
    // Another authorization of the same member is a separate family.
    let other = signed_in(&mut s, &mut rng, "ada");

    let reuse = exchange(
        &mut s,
        &refresh_request(&first.refresh_token),
        RESOURCE,
        &mut rng,
        T0 + 3000,
    )
    .unwrap_err();
    assert_eq!(reuse.code, ErrorCode::InvalidGrant);
    assert!(
        reuse.description.contains("already used"),
        "{}",
        reuse.description
    );
    for dead in [&first.access_token, &second.access_token] {
        assert_eq!(
            authenticate(&mut s, dead, RESOURCE, T0 + 4000),
            invalid_token("the access token was revoked")
        );
    }
    let rotated = exchange(
        &mut s,
        &refresh_request(&second.refresh_token),
        RESOURCE,
        &mut rng,
        T0 + 4000,
    )
    .unwrap_err();
    assert_eq!(rotated.description, "the refresh token was revoked");
    assert!(authenticate(&mut s, &other.access_token, RESOURCE, T0 + 4000).is_ok());
    let reason: String =
        s.0.query_row(
            "SELECT revoked_reason FROM oauth_tokens WHERE hash = ?",
            [floorgate::grant::hash_token(&second.access_token)],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(reason, "refresh token reused");
}

#[test]
fn a_reused_code_revokes_the_tokens_issued_from_it() {
    let (mut s, mut rng) = (store(), counter());
    let code = issue_code(&mut s, &approval("ada"), &mut rng, T0).unwrap();
    let tokens = exchange(&mut s, &code_request(&code), RESOURCE, &mut rng, T0 + 1000).unwrap();
    let again = exchange(&mut s, &code_request(&code), RESOURCE, &mut rng, T0 + 2000).unwrap_err();
    assert_eq!(again.code, ErrorCode::InvalidGrant);
    assert_eq!(
        again.description,
        "the authorization code was already used; the tokens issued from it are revoked"
    );
    assert!(authenticate(&mut s, &tokens.access_token, RESOURCE, T0 + 3000).is_err());
    assert!(exchange(
        &mut s,
        &refresh_request(&tokens.refresh_token),
        RESOURCE,
        &mut rng,
        T0 + 3000
    )
    .is_err());
}

#[test]
fn each_bad_code_exchange_has_its_exact_answer() {
    let mut rng = counter();
    type Change = Box<dyn Fn(&mut TokenRequest)>;
    let cases: Vec<(Change, i64, ErrorCode, &str)> = vec![
        (
            Box::new(|r| set_verifier(r, None)),
            T0,
            ErrorCode::InvalidGrant,
            "code_verifier is required",
        ),
        (
            Box::new(|r| set_verifier(r, Some("x".repeat(43)))),
            T0,
            ErrorCode::InvalidGrant,
            "code_verifier does not match the code_challenge of the authorization request",
        ),
        (
            Box::new(|r| set_verifier(r, Some(challenge_of(VERIFIER)))),
            T0,
            ErrorCode::InvalidGrant,
            "code_verifier does not match the code_challenge of the authorization request",
        ),
        (
            Box::new(|r| {
                if let TokenRequest::AuthorizationCode { client_id, .. } = r {
                    *client_id = "https://other.example/c.json".into();
                }
            }),
            T0,
            ErrorCode::InvalidGrant,
            "the authorization code was issued to another client",
        ),
        (
            Box::new(|r| {
                if let TokenRequest::AuthorizationCode { redirect_uri, .. } = r {
                    *redirect_uri = Some("https://app.example.com/cb2".into());
                }
            }),
            T0,
            ErrorCode::InvalidGrant,
            "redirect_uri must be the one of the authorization request",
        ),
        (
            Box::new(|r| {
                if let TokenRequest::AuthorizationCode { resource, .. } = r {
                    *resource = Some("https://other.example/mcp".into());
                }
            }),
            T0,
            ErrorCode::InvalidTarget,
            "resource must be https://gate.example.com/mcp",
        ),
        (
            Box::new(|_| {}),
            T0 + AUTHORIZATION_CODE_TTL_MS,
            ErrorCode::InvalidGrant,
            "the authorization code expired: start the authorization again",
        ),
    ];
    for (change, at, code_want, text_want) in cases {
        let mut s = store();
        let code = issue_code(&mut s, &approval("ada"), &mut rng, T0).unwrap();
        let mut request = code_request(&code);
        change(&mut request);
        let err = exchange(&mut s, &request, RESOURCE, &mut rng, at).unwrap_err();
        assert_eq!((err.code, err.description.as_str()), (code_want, text_want));
        // A failed attempt spends the code: the right request afterwards is a reuse.
        let retry = exchange(&mut s, &code_request(&code), RESOURCE, &mut rng, T0).unwrap_err();
        assert!(
            retry.description.contains("already used"),
            "{}",
            retry.description
        );
    }
    let mut s = store();
    let unknown = mint(TokenKind::AuthorizationCode, "acme", &[200; 32], TOKEN_KEY).token;
    let err = exchange(&mut s, &code_request(&unknown), RESOURCE, &mut rng, T0).unwrap_err();
    assert_eq!(err.description, "unknown authorization code");
    let refresh_as_code = mint(TokenKind::Refresh, "acme", &[201; 32], TOKEN_KEY).token;
    let err = exchange(
        &mut s,
        &code_request(&refresh_as_code),
        RESOURCE,
        &mut rng,
        T0,
    )
    .unwrap_err();
    assert_eq!(
        (err.code, err.description.as_str()),
        (
            ErrorCode::InvalidGrant,
            "this is a refresh token where an authorization code is expected"
        )
    );
}

fn set_verifier(request: &mut TokenRequest, value: Option<String>) {
    if let TokenRequest::AuthorizationCode { code_verifier, .. } = request {
        *code_verifier = value;
    }
}

#[test]
fn access_tokens_fail_when_expired_foreign_or_of_the_wrong_kind() {
    let (mut s, mut rng) = (store(), counter());
    let t = signed_in(&mut s, &mut rng, "ada");
    let issued_at = T0 + 1000;
    assert!(authenticate(
        &mut s,
        &t.access_token,
        RESOURCE,
        issued_at + ACCESS_TOKEN_TTL_MS - 1
    )
    .is_ok());
    assert_eq!(
        authenticate(
            &mut s,
            &t.access_token,
            RESOURCE,
            issued_at + ACCESS_TOKEN_TTL_MS
        ),
        invalid_token("the access token expired")
    );
    assert_eq!(
        authenticate(
            &mut s,
            &t.access_token,
            "https://other.example/mcp",
            T0 + 2000
        ),
        invalid_token("the access token was issued for another resource")
    );
    assert_eq!(
        authenticate(&mut s, &t.refresh_token, RESOURCE, T0 + 2000),
        invalid_token("this is a refresh token where an access token is expected")
    );
    // A token minted for another tenant is unknown to this tenant's roster.
    let foreign = mint(TokenKind::Access, "globex", &[77; 32], TOKEN_KEY).token;
    assert_eq!(
        authenticate(&mut s, &foreign, RESOURCE, T0 + 2000),
        invalid_token("unknown access token")
    );
    assert_eq!(
        authenticate(&mut s, "fg1.acme.ada.00", RESOURCE, T0),
        invalid_token("not a token issued by this server")
    );
    // A refresh token past its life is refused, and so is a request for more scope.
    let late = exchange(
        &mut s,
        &refresh_request(&t.refresh_token),
        RESOURCE,
        &mut rng,
        issued_at + REFRESH_TOKEN_TTL_MS,
    )
    .unwrap_err();
    assert_eq!(late.description, "the refresh token expired: sign in again");
    let t2 = signed_in(&mut s, &mut rng, "ada");
    let wider = TokenRequest::RefreshToken {
        refresh_token: t2.refresh_token.clone(),
        client_id: CLIENT.into(),
        scope: Some("mcp admin".into()),
        resource: None,
    };
    let err = exchange(&mut s, &wider, RESOURCE, &mut rng, T0 + 2000).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidScope);
    let t3 = signed_in(&mut s, &mut rng, "ada");
    let stolen = TokenRequest::RefreshToken {
        refresh_token: t3.refresh_token.clone(),
        client_id: "https://thief.example/c.json".into(),
        scope: None,
        resource: None,
    };
    let err = exchange(&mut s, &stolen, RESOURCE, &mut rng, T0 + 2000).unwrap_err();
    assert_eq!(
        err.description,
        "the refresh token was issued to another client"
    );
}

#[test]
fn suspending_a_member_revokes_their_tokens_in_the_same_statement() {
    let (mut s, mut rng) = (store(), counter());
    let ada = signed_in(&mut s, &mut rng, "ada");
    let ada2 = signed_in(&mut s, &mut rng, "ada");
    let bob = signed_in(&mut s, &mut rng, "bob");
    let pending = issue_code(&mut s, &approval("ada"), &mut rng, T0).unwrap();
    let (sign_in, _) = issue_sign_in(&mut s, "acme", "ada", &[150; 32], T0).unwrap();

    let changed =
        s.0.execute(roster::SET_STATUS_SQL, params!["suspended", T0 + 10, "ada"])
            .unwrap();
    assert_eq!(changed, 1);
    // Every token row of ada's is marked, by the statement above alone.
    let live: i64 = s
        .0
        .query_row(
            "SELECT COUNT(*) FROM oauth_tokens t JOIN oauth_families f ON f.id = t.family_id WHERE f.member_id = 'ada' AND t.revoked_at IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(live, 0);
    let reason: String = s
        .0
        .query_row(
            "SELECT DISTINCT t.revoked_reason FROM oauth_tokens t JOIN oauth_families f ON f.id = t.family_id WHERE f.member_id = 'ada'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(reason, "member suspended");
    for t in [&ada, &ada2] {
        assert_eq!(
            authenticate(&mut s, &t.access_token, RESOURCE, T0 + 20),
            invalid_token("the access token was revoked")
        );
        assert!(exchange(
            &mut s,
            &refresh_request(&t.refresh_token),
            RESOURCE,
            &mut rng,
            T0 + 20
        )
        .is_err());
    }
    let err = exchange(&mut s, &code_request(&pending), RESOURCE, &mut rng, T0 + 20).unwrap_err();
    assert_eq!(
        err.description,
        "the authorization code was revoked: the member is no longer active"
    );
    let claim = read(&sign_in).unwrap();
    assert_eq!(
        redeem_sign_in(&mut s, &claim, T0 + 20),
        Err(SignInError::Revoked)
    );
    assert!(authenticate(&mut s, &bob.access_token, RESOURCE, T0 + 20).is_ok());

    // Reinstating revives nothing; the static grant went with the same statement.
    s.0.execute(roster::SET_STATUS_SQL, params!["active", T0 + 30, "ada"])
        .unwrap();
    assert!(authenticate(&mut s, &ada.access_token, RESOURCE, T0 + 40).is_err());
    assert!(!s
        .0
        .prepare(roster::VALIDATE_SQL)
        .unwrap()
        .exists(params!["h1", "ada"])
        .unwrap());
}

#[test]
fn removal_revokes_and_a_failed_status_change_revokes_nothing() {
    let (mut s, mut rng) = (store(), counter());
    let ada = signed_in(&mut s, &mut rng, "ada");
    assert!(s
        .0
        .execute(roster::SET_STATUS_SQL, params!["gone", T0 + 5, "ada"])
        .is_err());
    assert!(authenticate(&mut s, &ada.access_token, RESOURCE, T0 + 6).is_ok());
    s.0.execute(roster::SET_STATUS_SQL, params!["removed", T0 + 7, "ada"])
        .unwrap();
    assert!(authenticate(&mut s, &ada.access_token, RESOURCE, T0 + 8).is_err());
}

#[test]
fn revocation_follows_rfc_7009() {
    let (mut s, mut rng) = (store(), counter());
    let t = signed_in(&mut s, &mut rng, "ada");
    // Unknown, malformed and foreign-kind tokens: success, nothing happens.
    assert_eq!(revoke(&mut s, "nonsense", Some(CLIENT), T0), Ok(()));
    assert_eq!(
        revoke(
            &mut s,
            &mint(TokenKind::Access, "acme", &[99; 32], TOKEN_KEY).token,
            None,
            T0
        ),
        Ok(())
    );
    // Another client may not revoke it.
    let err = revoke(
        &mut s,
        &t.access_token,
        Some("https://thief.example/c.json"),
        T0,
    )
    .unwrap_err();
    assert_eq!(err.code, ErrorCode::UnauthorizedClient);
    assert!(authenticate(&mut s, &t.access_token, RESOURCE, T0 + 2000).is_ok());
    // An access token revokes itself only.
    revoke(&mut s, &t.access_token, Some(CLIENT), T0 + 2000).unwrap();
    assert!(authenticate(&mut s, &t.access_token, RESOURCE, T0 + 3000).is_err());
    let next = exchange(
        &mut s,
        &refresh_request(&t.refresh_token),
        RESOURCE,
        &mut rng,
        T0 + 3000,
    )
    .unwrap();
    // A refresh token revokes its family.
    revoke(&mut s, &next.refresh_token, None, T0 + 4000).unwrap();
    assert!(authenticate(&mut s, &next.access_token, RESOURCE, T0 + 5000).is_err());
    assert_eq!(revoke(&mut s, &next.refresh_token, None, T0 + 6000), Ok(()));
}

#[test]
fn sign_in_codes_are_single_use_short_lived_and_hashed() {
    let mut s = store();
    let (code, expires_at) = issue_sign_in(&mut s, "acme", "ada", &[42; 32], T0).unwrap();
    assert_eq!(expires_at, T0 + SIGN_IN_CODE_TTL_MS);
    assert!(code.starts_with("fgs1.acme."));
    let stored: i64 =
        s.0.query_row(
            "SELECT COUNT(*) FROM oauth_sign_in_codes WHERE hash = ?",
            [&code],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored, 0, "the code itself is never stored");
    let claim = read(&code).unwrap();
    assert_eq!(redeem_sign_in(&mut s, &claim, T0 + 1), Ok("ada".to_owned()));
    assert_eq!(
        redeem_sign_in(&mut s, &claim, T0 + 2),
        Err(SignInError::Used)
    );

    let (late, _) = issue_sign_in(&mut s, "acme", "bob", &[43; 32], T0).unwrap();
    let late = read(&late).unwrap();
    assert_eq!(
        redeem_sign_in(&mut s, &late, T0 + SIGN_IN_CODE_TTL_MS),
        Err(SignInError::Expired)
    );
    let unknown = read(&mint(TokenKind::SignIn, "acme", &[44; 32], TOKEN_KEY).token).unwrap();
    assert_eq!(
        redeem_sign_in(&mut s, &unknown, T0),
        Err(SignInError::Unknown)
    );
    let access = read(&mint(TokenKind::Access, "acme", &[45; 32], TOKEN_KEY).token).unwrap();
    assert_eq!(
        redeem_sign_in(&mut s, &access, T0),
        Err(SignInError::Malformed)
    );
    assert!(SignInError::Expired.to_string().contains("expired"));
}

#[test]
fn families_list_with_the_client_name() {
    let (mut s, mut rng) = (store(), counter());
    let a = signed_in(&mut s, &mut rng, "ada");
    signed_in(&mut s, &mut rng, "bob");
    let mut statement = s.0.prepare(LIST_FAMILIES_SQL).unwrap();
    let ada: Vec<(String, String, String)> = statement
        .query_map(params!["ada"], |r| Ok((r.get(0)?, r.get(1)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        ada,
        vec![(a.family_id.clone(), "ada".into(), "Example App".into())]
    );
    let all = statement
        .query_map(params![Option::<String>::None], |r| r.get::<_, String>(1))
        .unwrap()
        .count();
    assert_eq!(all, 2);
}

/// A command as the roster object receives it: serialised by the shell, parsed by the object.
fn over_the_wire(s: &mut Sqlite, command: OAuthCommand) -> OAuthReply {
    let text = serde_json::to_string(&command).unwrap();
    let parsed: OAuthCommand = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed, command);
    let reply = run(s, parsed);
    let back: OAuthReply = serde_json::from_str(&serde_json::to_string(&reply).unwrap()).unwrap();
    assert_eq!(back, reply);
    reply
}

fn secrets(first: u8) -> Randomness {
    (0..SECRETS_PER_COMMAND as u8)
        .map(|i| [first.wrapping_add(i); SECRET_BYTES])
        .collect()
}

#[test]
fn the_roster_commands_run_the_whole_flow_over_the_wire() {
    let mut s = store();
    let OAuthReply::SignInIssued { code, expires_at } = over_the_wire(
        &mut s,
        OAuthCommand::IssueSignIn {
            tenant: "acme".into(),
            member: "ada".into(),
            random: secrets(1),
            now: T0,
        },
    ) else {
        panic!("no sign-in code")
    };
    assert_eq!(expires_at, T0 + SIGN_IN_CODE_TTL_MS);
    let redeem = OAuthCommand::RedeemSignIn {
        code: code.clone(),
        now: T0 + 1,
    };
    assert_eq!(
        over_the_wire(&mut s, redeem.clone()),
        OAuthReply::SignedIn {
            member: "ada".into()
        }
    );
    assert_eq!(
        over_the_wire(&mut s, redeem),
        OAuthReply::SignInRefused {
            error: SignInError::Used
        }
    );
    let OAuthReply::CodeIssued { code } = over_the_wire(
        &mut s,
        OAuthCommand::IssueCode {
            approval: approval("ada"),
            random: secrets(10),
            now: T0 + 2,
        },
    ) else {
        panic!("no authorization code")
    };
    let OAuthReply::Tokens { tokens } = over_the_wire(
        &mut s,
        OAuthCommand::Exchange {
            request: code_request(&code),
            resource: RESOURCE.into(),
            random: secrets(20),
            now: T0 + 3,
        },
    ) else {
        panic!("no tokens")
    };
    let authenticate = |bearer: &str| OAuthCommand::Authenticate {
        bearer: bearer.into(),
        resource: RESOURCE.into(),
        now: T0 + 4,
    };
    let OAuthReply::Authenticated { identity } =
        over_the_wire(&mut s, authenticate(&tokens.access_token))
    else {
        panic!("not authenticated")
    };
    assert_eq!(identity.member, "ada");
    assert_eq!(
        over_the_wire(
            &mut s,
            OAuthCommand::Revoke {
                token: tokens.refresh_token.clone(),
                client_id: Some(CLIENT.into()),
                now: T0 + 5,
            }
        ),
        OAuthReply::Revoked
    );
    assert_eq!(
        over_the_wire(&mut s, authenticate(&tokens.access_token)),
        OAuthReply::Challenge {
            challenge: BearerChallenge::InvalidToken("the access token was revoked".into())
        }
    );
}

#[test]
fn too_few_secrets_run_nothing() {
    let mut s = store();
    let reply = run(
        &mut s,
        OAuthCommand::IssueCode {
            approval: approval("ada"),
            random: secrets(1)[..1].to_vec(),
            now: T0,
        },
    );
    let OAuthReply::Refused { error } = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(error.code, ErrorCode::ServerError);
    let codes: i64 =
        s.0.query_row("SELECT COUNT(*) FROM oauth_codes", [], |r| r.get(0))
            .unwrap();
    assert_eq!(codes, 0, "nothing was written with a reused secret");
}

#[test]
fn a_roster_without_tables_answers_reads_and_writes_nothing() {
    let mut none = NoTables;
    assert_eq!(
        run(
            &mut none,
            OAuthCommand::Authenticate {
                bearer: format!("fga1.acme.{}", "A".repeat(43)),
                resource: RESOURCE.into(),
                now: T0,
            }
        ),
        OAuthReply::Challenge {
            challenge: BearerChallenge::InvalidToken("unknown access token".into())
        }
    );
    assert_eq!(
        run(
            &mut none,
            OAuthCommand::RedeemSignIn {
                code: format!("fgs1.acme.{}", "A".repeat(43)),
                now: T0
            }
        ),
        OAuthReply::SignInRefused {
            error: SignInError::Unknown
        }
    );
    let OAuthReply::Refused { error } = run(
        &mut none,
        OAuthCommand::Exchange {
            request: code_request(&format!("fgc1.acme.{}", "A".repeat(43))),
            resource: RESOURCE.into(),
            random: secrets(1),
            now: T0,
        },
    ) else {
        panic!("an unknown code was exchanged")
    };
    assert_eq!(error.code, ErrorCode::InvalidGrant);
    assert_eq!(
        run(
            &mut none,
            OAuthCommand::Revoke {
                token: format!("fgr1.acme.{}", "A".repeat(43)),
                client_id: None,
                now: T0
            }
        ),
        OAuthReply::Revoked
    );
}

#[test]
fn housekeeping_deletes_only_what_expired_a_day_ago() {
    let (mut s, mut rng) = (store(), counter());
    let tokens = signed_in(&mut s, &mut rng, "ada");
    issue_sign_in(&mut s, "acme", "bob", &rng(), T0).unwrap();
    let count =
        |s: &Sqlite| -> i64 { s.0.query_row(COUNT_EXPIRING_SQL, [], |r| r.get(0)).unwrap() };
    assert_eq!(
        count(&s),
        4,
        "the spent code, the sign-in code and the token pair"
    );
    let purge = |s: &Sqlite, now: i64| {
        for statement in PURGE_EXPIRED_SQL {
            s.0.execute(statement, [now - EXPIRED_KEPT_MS]).unwrap();
        }
    };
    // Two hours on: the code (60 s), the sign-in code (15 min) and the access token (1 h) have
    // expired, but less than a day ago; nothing goes.
    purge(&s, T0 + 2 * 3600 * 1000);
    assert_eq!(count(&s), 4);
    // A day and two hours on they go; the refresh token (30 days) stays and still works.
    let later = T0 + EXPIRED_KEPT_MS + 2 * 3600 * 1000;
    purge(&s, later);
    assert_eq!(count(&s), 1);
    let refreshed = exchange(
        &mut s,
        &refresh_request(&tokens.refresh_token),
        RESOURCE,
        &mut rng,
        later,
    );
    assert!(refreshed.is_ok(), "{refreshed:?}");
    let families: i64 =
        s.0.query_row("SELECT COUNT(*) FROM oauth_families", [], |r| r.get(0))
            .unwrap();
    assert_eq!(families, 1, "families stay for the grants listing");
}

#[test]
fn issued_tokens_carry_a_mac_that_the_shell_checks_before_any_lookup() {
    let (mut s, mut rng) = (store(), counter());
    let tokens = signed_in(&mut s, &mut rng, "ada");
    let claim = verify(&tokens.access_token, TokenKind::Access, TOKEN_KEY).unwrap();
    assert_eq!(claim.tenant, "acme");
    assert!(verify(&tokens.refresh_token, TokenKind::Refresh, TOKEN_KEY).is_ok());
    // Another deployment's key, or one changed character: refused as forged, no store needed.
    assert_eq!(
        verify(
            &tokens.access_token,
            TokenKind::Access,
            b"another deployment"
        ),
        Err(TokenFormatError::Forged)
    );
    let mut forged = tokens.access_token.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == 'A' { 'B' } else { 'A' });
    assert!(matches!(
        verify(&forged, TokenKind::Access, TOKEN_KEY),
        Err(TokenFormatError::Forged | TokenFormatError::NotAToken)
    ));
    // The right shape under the right prefix, random bytes: forged.
    let random = format!("fga1.acme.{}", "A".repeat(43));
    assert_eq!(
        verify(&random, TokenKind::Access, TOKEN_KEY),
        Err(TokenFormatError::Forged)
    );
    // A token request names its tenant only once the MAC verifies.
    let forged_refresh = refresh_request(&format!("fgr1.acme.{}", "A".repeat(43)));
    assert_eq!(
        forged_refresh.tenant(TOKEN_KEY).unwrap_err().code,
        ErrorCode::InvalidGrant
    );
    assert_eq!(
        refresh_request(&tokens.refresh_token)
            .tenant(TOKEN_KEY)
            .unwrap(),
        "acme"
    );
}

#[test]
fn a_listed_family_is_revoked_only_by_its_member_or_the_operator() {
    let (mut s, mut rng) = (store(), counter());
    let tokens = signed_in(&mut s, &mut rng, "ada");
    let family = authenticate(&mut s, &tokens.access_token, RESOURCE, T0 + 2000)
        .unwrap()
        .family_id;
    let revoke = |s: &Sqlite, member: Option<&str>| {
        s.0.execute(REVOKE_LISTED_FAMILY_SQL, params![T0 + 3000, family, member])
            .unwrap()
    };
    assert_eq!(revoke(&s, Some("bob")), 0, "not bob's");
    assert!(authenticate(&mut s, &tokens.access_token, RESOURCE, T0 + 4000).is_ok());
    assert_eq!(revoke(&s, Some("ada")), 1);
    assert_eq!(
        authenticate(&mut s, &tokens.access_token, RESOURCE, T0 + 5000),
        invalid_token("the access token was revoked")
    );
    assert_eq!(revoke(&s, None), 0, "already revoked");
}
