//! The OAuth commands a tenant's roster object runs, and their replies.
//!
//! The shell decides which command a request needs and supplies the clock and the randomness;
//! the roster object runs it over its storage in one synchronous step (no `await` between a
//! select and the update that spends), so a code or refresh token is spent exactly once. The
//! logic is the token module's; this is its wire form and one function that runs it over any
//! [`TokenStore`], so the host's tests and the object run the same code.

use serde::{Deserialize, Serialize};

use super::metadata::BearerChallenge;
use super::token::{
    self, AccessIdentity, Approval, SignInError, StoredCode, StoredSignIn, StoredToken,
    TokenRequest, TokenResponse, TokenStore, SECRET_BYTES,
};
use super::{ErrorCode, OAuthError};

/// Fresh secrets a command may consume, drawn by the shell.
pub type Randomness = Vec<[u8; SECRET_BYTES]>;

/// How many secrets the shell draws for any command (issuing a code takes two, a token pair
/// two).
pub const SECRETS_PER_COMMAND: usize = 4;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "oauth", rename_all = "snake_case")]
pub enum OAuthCommand {
    /// A one-time sign-in code for an active member (admin API or control operation).
    IssueSignIn {
        tenant: String,
        member: String,
        random: Randomness,
        now: i64,
    },
    /// Spends a sign-in code: the member it signs in.
    RedeemSignIn { code: String, now: i64 },
    /// The consent page approved: an authorization code for exactly this.
    IssueCode {
        approval: Approval,
        random: Randomness,
        now: i64,
    },
    /// `POST /token`.
    Exchange {
        request: TokenRequest,
        resource: String,
        random: Randomness,
        now: i64,
    },
    /// The bearer of an MCP request.
    Authenticate {
        bearer: String,
        resource: String,
        now: i64,
    },
    /// `POST /revoke` (RFC 7009).
    Revoke {
        token: String,
        client_id: Option<String>,
        now: i64,
    },
}

impl OAuthCommand {
    /// The member who must be active before the command runs, where the command creates
    /// something for them.
    pub fn member_must_be_active(&self) -> Option<&str> {
        match self {
            OAuthCommand::IssueSignIn { member, .. } => Some(member),
            OAuthCommand::IssueCode { approval, .. } => Some(&approval.member),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum OAuthReply {
    SignInIssued {
        code: String,
        expires_at: i64,
    },
    SignedIn {
        member: String,
    },
    SignInRefused {
        error: SignInError,
    },
    CodeIssued {
        code: String,
    },
    Tokens {
        tokens: TokenResponse,
    },
    Authenticated {
        identity: AccessIdentity,
    },
    Challenge {
        challenge: BearerChallenge,
    },
    Revoked,
    Refused {
        error: OAuthError,
    },
    /// The member a command needs is unknown or not active.
    MemberNotActive {
        member: String,
    },
}

impl OAuthReply {
    /// Whether the command stored a code or a token, which the housekeeping will delete once
    /// it has long expired.
    pub fn stored_something(&self) -> bool {
        matches!(
            self,
            OAuthReply::SignInIssued { .. }
                | OAuthReply::CodeIssued { .. }
                | OAuthReply::Tokens { .. }
        )
    }
}

/// Runs one command over a tenant's token storage.
pub fn run<S: TokenStore>(store: &mut S, command: OAuthCommand) -> OAuthReply {
    match command {
        OAuthCommand::IssueSignIn {
            tenant,
            member,
            random,
            now,
        } => {
            let Some(mut draw) = drawer(random) else {
                return refused_for_randomness();
            };
            match token::issue_sign_in(store, &tenant, &member, &draw(), now) {
                Ok((code, expires_at)) => OAuthReply::SignInIssued { code, expires_at },
                Err(e) => OAuthReply::Refused {
                    error: OAuthError::new(ErrorCode::ServerError, e.to_string()),
                },
            }
        }
        OAuthCommand::RedeemSignIn { code, now } => {
            let claim = match token::read_kind(&code, token::TokenKind::SignIn) {
                Ok(claim) => claim,
                Err(_) => {
                    return OAuthReply::SignInRefused {
                        error: SignInError::Malformed,
                    }
                }
            };
            match token::redeem_sign_in(store, &claim, now) {
                Ok(member) => OAuthReply::SignedIn { member },
                Err(error) => OAuthReply::SignInRefused { error },
            }
        }
        OAuthCommand::IssueCode {
            approval,
            random,
            now,
        } => {
            let Some(mut draw) = drawer(random) else {
                return refused_for_randomness();
            };
            match token::issue_code(store, &approval, &mut draw, now) {
                Ok(code) => OAuthReply::CodeIssued { code },
                Err(error) => OAuthReply::Refused { error },
            }
        }
        OAuthCommand::Exchange {
            request,
            resource,
            random,
            now,
        } => {
            let Some(mut draw) = drawer(random) else {
                return refused_for_randomness();
            };
            match token::exchange(store, &request, &resource, &mut draw, now) {
                Ok(tokens) => OAuthReply::Tokens { tokens },
                Err(error) => OAuthReply::Refused { error },
            }
        }
        OAuthCommand::Authenticate {
            bearer,
            resource,
            now,
        } => match token::authenticate(store, &bearer, &resource, now) {
            Ok(identity) => OAuthReply::Authenticated { identity },
            Err(challenge) => OAuthReply::Challenge { challenge },
        },
        OAuthCommand::Revoke {
            token: text,
            client_id,
            now,
        } => match token::revoke(store, &text, client_id.as_deref(), now) {
            Ok(()) => OAuthReply::Revoked,
            Err(error) => OAuthReply::Refused { error },
        },
    }
}

fn refused_for_randomness() -> OAuthReply {
    OAuthReply::Refused {
        error: OAuthError::new(
            ErrorCode::ServerError,
            format!("the command needs {SECRETS_PER_COMMAND} fresh secrets"),
        ),
    }
}

/// A source that hands out the shell's secrets in turn; `None` when there are too few for any
/// command (so no command can run short and reuse one).
fn drawer(random: Randomness) -> Option<impl FnMut() -> [u8; SECRET_BYTES]> {
    if random.len() < SECRETS_PER_COMMAND {
        return None;
    }
    let mut secrets = random.into_iter();
    Some(move || secrets.next().unwrap_or([0; SECRET_BYTES]))
}

/// Token storage of a roster that has no tables yet: nothing is found, nothing can be written.
/// Reads against a tenant nobody wrote to answer from it and create nothing.
pub struct NoTables;

/// Why a write to [`NoTables`] failed.
#[derive(Debug)]
pub struct NoTablesError;

impl std::fmt::Display for NoTablesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the tenant has no members yet")
    }
}

impl TokenStore for NoTables {
    type Error = NoTablesError;
    fn token_key(&self) -> &[u8] {
        // Nothing is minted without tables: every insert fails first.
        &[]
    }
    fn insert_code(&mut self, _: &token::CodeRecord) -> Result<(), NoTablesError> {
        Err(NoTablesError)
    }
    fn select_code(&mut self, _: &str) -> Result<Option<StoredCode>, NoTablesError> {
        Ok(None)
    }
    fn use_code(&mut self, _: &str, _: i64) -> Result<bool, NoTablesError> {
        Ok(false)
    }
    fn insert_family(&mut self, _: &token::FamilyRecord) -> Result<(), NoTablesError> {
        Err(NoTablesError)
    }
    fn insert_token(&mut self, _: &token::TokenRecord) -> Result<(), NoTablesError> {
        Err(NoTablesError)
    }
    fn select_token(&mut self, _: &str) -> Result<Option<StoredToken>, NoTablesError> {
        Ok(None)
    }
    fn use_token(&mut self, _: &str, _: i64) -> Result<bool, NoTablesError> {
        Ok(false)
    }
    fn revoke_family(&mut self, _: &str, _: i64, _: &str) -> Result<(), NoTablesError> {
        Ok(())
    }
    fn revoke_token(&mut self, _: &str, _: i64, _: &str) -> Result<(), NoTablesError> {
        Ok(())
    }
    fn insert_sign_in(&mut self, _: &token::SignInRecord) -> Result<(), NoTablesError> {
        Err(NoTablesError)
    }
    fn select_sign_in(&mut self, _: &str) -> Result<Option<StoredSignIn>, NoTablesError> {
        Ok(None)
    }
    fn use_sign_in(&mut self, _: &str, _: i64) -> Result<bool, NoTablesError> {
        Ok(false)
    }
}
