//! Which credential a connected call uses (issue 19), decided before anything is read or sent.
//!
//! A personal connection uses the caller's own account and nothing else: with none, the call
//! is a tool error that tells the model to call `connect_account`, never another member's or a
//! shared credential. A shared connection uses the account a tenant admin set, else the
//! operator-named Worker secret, as before accounts existed; with neither, the call is a tool
//! error that says a tenant administrator must set the account.

use std::fmt;

use crate::accounts::{AccountKind, STATUS_CONNECTED};
use crate::catalog::{AuthScheme, Connection};
use crate::names::ControlOpKind;
use crate::roster::StoredAccount;

/// The account row to read before a call to `connection`, whose connector sends credentials
/// as `auth`: `Some(member column)`, or `None` when nothing is to be read (the connector takes
/// no credential).
pub fn account_to_read<'a>(
    connection: &Connection,
    auth: &AuthScheme,
    member: &'a str,
) -> Option<Option<&'a str>> {
    match connection.account {
        _ if !auth.takes_credential() => None,
        AccountKind::Personal => Some(Some(member)),
        AccountKind::Shared => Some(None),
    }
}

/// Where the call's credential comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source<'a> {
    /// The connector uses no credential.
    Nothing,
    /// Open this stored (sealed) account: the member's own (`Some`) or the shared one.
    Stored {
        member: Option<&'a str>,
        sealed: &'a str,
    },
    /// The operator-named Worker secret.
    WorkerSecret(&'a str),
}

/// Why a call has no credential to use; the call is not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// The caller has not connected their account to a personal connection.
    NotConnected { connection: String },
    /// A shared connection with no Worker secret whose account no tenant admin has set yet.
    NoSharedAccount { connection: String },
    /// The caller's (or the shared) account is stored but expired or needs a reconnect.
    Unusable {
        connection: String,
        status: String,
        personal: bool,
    },
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let connect = ControlOpKind::ConnectAccount.name();
        match self {
            Missing::NotConnected { connection } => write!(
                f,
                "you have not connected your own account to connection {connection:?}, which uses each member's own account: call {connect} with {{\"connection\": {connection:?}}} and give the user the link it returns to paste their key; then call this tool again"
            ),
            Missing::NoSharedAccount { connection } => write!(
                f,
                "connection {connection:?} uses an account shared by the organization, and none is set yet: ask a tenant administrator to set it"
            ),
            Missing::Unusable {
                connection,
                status,
                personal: true,
            } => write!(
                f,
                "your account for connection {connection:?} is {status}: call {connect} with {{\"connection\": {connection:?}}} to connect it again"
            ),
            Missing::Unusable {
                connection, status, ..
            } => write!(
                f,
                "the shared account of connection {connection:?} is {status}; ask a tenant administrator to set it again"
            ),
        }
    }
}

/// The credential of a call to `connection` (its connector sending credentials as `auth`) by
/// `member`, given the stored account that [`account_to_read`] named (`None`: no row, or the
/// member is not active).
pub fn choose<'a>(
    connection: &'a Connection,
    auth: &AuthScheme,
    member: &'a str,
    stored: Option<&'a StoredAccount>,
) -> Result<Source<'a>, Missing> {
    let unusable = |status: &str, personal: bool| unusable(&connection.id, status, personal);
    match (account_to_read(connection, auth, member), stored) {
        (None, _) => Ok(Source::Nothing),
        (Some(Some(member)), Some(row)) if row.status == STATUS_CONNECTED => Ok(Source::Stored {
            member: Some(member),
            sealed: &row.sealed,
        }),
        (Some(Some(_)), Some(row)) => Err(unusable(&row.status, true)),
        (Some(Some(_)), None) => Err(Missing::NotConnected {
            connection: connection.id.clone(),
        }),
        (Some(None), Some(row)) if row.status == STATUS_CONNECTED => Ok(Source::Stored {
            member: None,
            sealed: &row.sealed,
        }),
        (Some(None), Some(row)) => Err(unusable(&row.status, false)),
        (Some(None), None) => connection
            .credential
            .as_deref()
            .map(Source::WorkerSecret)
            .ok_or_else(|| Missing::NoSharedAccount {
                connection: connection.id.clone(),
            }),
    }
}

/// What the credential sent with a call was, as far as an upstream 401 matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// An OAuth access token from a stored account; `refreshable` when a refresh token is held.
    AccessToken { refreshable: bool },
    /// A key pasted into a stored account (a member's own or the shared one).
    StoredKey,
    /// A Worker secret, or nothing: a 401 is the API's answer to pass on (the operator's
    /// secret is not the gateway's to mark).
    Other,
}

/// What the shell does after the upstream answered a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterUpstream {
    /// Hand the answer to the caller as it is.
    Answer,
    /// Refresh the account's tokens even though they look fresh (the provider may have
    /// revoked the access token early), then send the call once more.
    RefreshAndRetry,
    /// Set the stored account's status (`needs_reconnect`) and answer the caller's
    /// reconnect error instead of the upstream's 401.
    MarkAccount { status: &'static str },
}

/// Decides after the upstream answered `status` (`None`: no answer) to a call sent with `sent`;
/// `retried` when this answer is to the one retry after a forced refresh. Only a 401 to a
/// stored account acts: an access token gets one refresh and one retry, then the account needs
/// a reconnect; a pasted key needs one at once (the API no longer accepts it: revoked, rotated
/// or mistyped). A 403 is about what the account may do, not who it is: passed on.
pub fn after_upstream(status: Option<u16>, sent: Sent, retried: bool) -> AfterUpstream {
    let mark = AfterUpstream::MarkAccount {
        status: crate::accounts::STATUS_NEEDS_RECONNECT,
    };
    match (status, sent) {
        (Some(401), Sent::AccessToken { refreshable }) if refreshable && !retried => {
            AfterUpstream::RefreshAndRetry
        }
        (Some(401), Sent::AccessToken { .. } | Sent::StoredKey) => mark,
        _ => AfterUpstream::Answer,
    }
}

/// The caller's tool error for a stored account that cannot be used (expired, refused by the
/// provider or the API): one message for every path, naming how to reconnect, never a value.
pub fn unusable(connection: &str, status: &str, personal: bool) -> Missing {
    Missing::Unusable {
        connection: connection.to_owned(),
        status: status.to_owned(),
        personal,
    }
}
