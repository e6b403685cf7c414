//! The OAuth token storage of a tenant's roster object: `oauth::token::TokenStore` over the
//! object's SQLite, one method per statement the core spells. The host's tests run the same
//! statements on rusqlite (`tests/oauth_tokens.rs`).

use serde::Deserialize;
use serde_json::Value;
use worker::{SqlStorage, SqlStorageValue};

use crate::oauth::token::{
    CodeRecord, FamilyRecord, SignInRecord, StoredCode, StoredSignIn, StoredToken, TokenKind,
    TokenRecord, TokenStore, INSERT_CODE_SQL, INSERT_FAMILY_SQL, INSERT_SIGN_IN_SQL,
    INSERT_TOKEN_SQL, REVOKE_FAMILY_SQL, REVOKE_TOKEN_SQL, SELECT_CODE_SQL, SELECT_SIGN_IN_SQL,
    SELECT_TOKEN_SQL, USE_CODE_SQL, USE_SIGN_IN_SQL, USE_TOKEN_SQL,
};

pub struct SqlTokens<'a> {
    pub sql: &'a SqlStorage,
    /// The deployment's token key (`oauth::OAuthKeys::tokens`).
    pub key: &'a [u8],
}

fn text(value: &str) -> SqlStorageValue {
    value.to_owned().into()
}

fn number(value: i64) -> SqlStorageValue {
    (value as f64).into()
}

fn when(value: Option<f64>) -> Option<i64> {
    value.map(|v| v as i64)
}

#[derive(Deserialize)]
struct CodeRow {
    family_id: String,
    member_id: String,
    client_id: String,
    client_name: String,
    redirect_uri: String,
    code_challenge: String,
    scope: String,
    resource: String,
    created_at: f64,
    expires_at: f64,
    used_at: Option<f64>,
    revoked_at: Option<f64>,
    member_active: f64,
}

#[derive(Deserialize)]
struct TokenRow {
    kind: String,
    family_id: String,
    expires_at: f64,
    used_at: Option<f64>,
    revoked_at: Option<f64>,
    family_revoked_at: Option<f64>,
    member_id: String,
    role: String,
    member_active: f64,
    client_id: String,
    scope: String,
    resource: String,
}

#[derive(Deserialize)]
struct SignInRow {
    member_id: String,
    expires_at: f64,
    used_at: Option<f64>,
    revoked_at: Option<f64>,
    member_active: f64,
}

impl SqlTokens<'_> {
    fn write(&self, sql: &str, values: Vec<SqlStorageValue>) -> worker::Result<usize> {
        let cursor = self.sql.exec(sql, values)?;
        // Reading the cursor to its end runs the statement to completion before counting.
        let _: Vec<Value> = cursor.to_array()?;
        Ok(cursor.rows_written())
    }

    fn first<T: for<'de> Deserialize<'de>>(
        &self,
        sql: &str,
        key: &str,
    ) -> worker::Result<Option<T>> {
        let rows: Vec<T> = self.sql.exec(sql, vec![text(key)])?.to_array()?;
        Ok(rows.into_iter().next())
    }
}

impl TokenStore for SqlTokens<'_> {
    type Error = worker::Error;

    fn token_key(&self) -> &[u8] {
        self.key
    }

    fn insert_code(&mut self, c: &CodeRecord) -> worker::Result<()> {
        self.write(
            INSERT_CODE_SQL,
            vec![
                text(&c.hash),
                text(&c.family_id),
                text(&c.member),
                text(&c.client_id),
                text(&c.client_name),
                text(&c.redirect_uri),
                text(&c.code_challenge),
                text(&c.scope),
                text(&c.resource),
                number(c.created_at),
                number(c.expires_at),
            ],
        )
        .map(drop)
    }

    fn select_code(&mut self, hash: &str) -> worker::Result<Option<StoredCode>> {
        Ok(self
            .first::<CodeRow>(SELECT_CODE_SQL, hash)?
            .map(|r| StoredCode {
                record: CodeRecord {
                    hash: hash.to_owned(),
                    family_id: r.family_id,
                    member: r.member_id,
                    client_id: r.client_id,
                    client_name: r.client_name,
                    redirect_uri: r.redirect_uri,
                    code_challenge: r.code_challenge,
                    scope: r.scope,
                    resource: r.resource,
                    created_at: r.created_at as i64,
                    expires_at: r.expires_at as i64,
                },
                used_at: when(r.used_at),
                revoked_at: when(r.revoked_at),
                member_active: r.member_active != 0.0,
            }))
    }

    fn use_code(&mut self, hash: &str, now: i64) -> worker::Result<bool> {
        Ok(self.write(USE_CODE_SQL, vec![number(now), text(hash)])? > 0)
    }

    fn insert_family(&mut self, f: &FamilyRecord) -> worker::Result<()> {
        self.write(
            INSERT_FAMILY_SQL,
            vec![
                text(&f.id),
                text(&f.member),
                text(&f.client_id),
                text(&f.client_name),
                text(&f.scope),
                text(&f.resource),
                number(f.created_at),
            ],
        )
        .map(drop)
    }

    fn insert_token(&mut self, t: &TokenRecord) -> worker::Result<()> {
        self.write(
            INSERT_TOKEN_SQL,
            vec![
                text(&t.hash),
                text(t.kind.column()),
                text(&t.family_id),
                number(t.created_at),
                number(t.expires_at),
            ],
        )
        .map(drop)
    }

    fn select_token(&mut self, hash: &str) -> worker::Result<Option<StoredToken>> {
        let Some(r) = self.first::<TokenRow>(SELECT_TOKEN_SQL, hash)? else {
            return Ok(None);
        };
        let Some(kind) = TokenKind::from_column(&r.kind) else {
            return Err(worker::Error::RustError(format!(
                "token row of unknown kind {:?}",
                r.kind
            )));
        };
        Ok(Some(StoredToken {
            kind,
            family_id: r.family_id,
            expires_at: r.expires_at as i64,
            used_at: when(r.used_at),
            revoked_at: when(r.revoked_at),
            family_revoked_at: when(r.family_revoked_at),
            member: r.member_id,
            role: r.role,
            member_active: r.member_active != 0.0,
            client_id: r.client_id,
            scope: r.scope,
            resource: r.resource,
        }))
    }

    fn use_token(&mut self, hash: &str, now: i64) -> worker::Result<bool> {
        Ok(self.write(USE_TOKEN_SQL, vec![number(now), text(hash)])? > 0)
    }

    fn revoke_family(&mut self, id: &str, now: i64, reason: &str) -> worker::Result<()> {
        self.write(REVOKE_FAMILY_SQL, vec![number(now), text(reason), text(id)])
            .map(drop)
    }

    fn revoke_token(&mut self, hash: &str, now: i64, reason: &str) -> worker::Result<()> {
        self.write(
            REVOKE_TOKEN_SQL,
            vec![number(now), text(reason), text(hash)],
        )
        .map(drop)
    }

    fn insert_sign_in(&mut self, s: &SignInRecord) -> worker::Result<()> {
        self.write(
            INSERT_SIGN_IN_SQL,
            vec![
                text(&s.hash),
                text(&s.member),
                number(s.created_at),
                number(s.expires_at),
            ],
        )
        .map(drop)
    }

    fn select_sign_in(&mut self, hash: &str) -> worker::Result<Option<StoredSignIn>> {
        Ok(self
            .first::<SignInRow>(SELECT_SIGN_IN_SQL, hash)?
            .map(|r| StoredSignIn {
                member: r.member_id,
                expires_at: r.expires_at as i64,
                used_at: when(r.used_at),
                revoked_at: when(r.revoked_at),
                member_active: r.member_active != 0.0,
            }))
    }

    fn use_sign_in(&mut self, hash: &str, now: i64) -> worker::Result<bool> {
        Ok(self.write(USE_SIGN_IN_SQL, vec![number(now), text(hash)])? > 0)
    }
}
