//! Which credential a connected call uses (issue 19), decided before anything is read or sent.
//!
//! A personal connection uses the caller's own account and nothing else: with none, the call
//! is a tool error that tells the model to call `connect_account`, never another member's or a
//! shared credential. A shared connection uses the account a tenant admin set, else the
//! operator-named Worker secret, as before accounts existed.

use std::fmt;

use crate::accounts::{AccountKind, STATUS_CONNECTED};
use crate::catalog::Connection;
use crate::names::ControlOpKind;
use crate::roster::StoredAccount;

/// The account row to read before a call: `Some(member column)`, or `None` when nothing is
/// to be read (the connector takes no credential).
pub fn account_to_read<'a>(connection: &Connection, member: &'a str) -> Option<Option<&'a str>> {
    match connection.account {
        AccountKind::Personal => Some(Some(member)),
        AccountKind::Shared if connection.credential.is_some() => Some(None),
        // A shared connection without a Worker secret is one whose connector uses no
        // credential (`auth: none`; the catalog refuses any other).
        AccountKind::Shared => None,
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

/// The credential of a call to `connection` by `member`, given the stored account that
/// [`account_to_read`] named (`None`: no row, or the member is not active).
pub fn choose<'a>(
    connection: &'a Connection,
    member: &'a str,
    stored: Option<&'a StoredAccount>,
) -> Result<Source<'a>, Missing> {
    let unusable = |status: &str, personal: bool| Missing::Unusable {
        connection: connection.id.clone(),
        status: status.to_owned(),
        personal,
    };
    match (account_to_read(connection, member), stored) {
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
        (Some(None), None) => Ok(connection
            .credential
            .as_deref()
            .map_or(Source::Nothing, Source::WorkerSecret)),
    }
}
