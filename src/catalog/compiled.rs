//! A validated catalog compiled at the admin write and read back by an isolate without parsing
//! or validating any JSON.
//!
//! Reading a 10,000-tool catalog's JSON, validating it and building its values costs an isolate
//! more than a cold request may spend. The admin write has done all of that already, so it
//! stores the result: every field of the validated types, with each tool's input schema and
//! annotations kept as the JSON text they validated as, parsed only when a tool is listed,
//! returned or called ([`LazyJson`]). A directory connector is stored as its id and taken from
//! the deployment's directory (the snapshot is stamped with the directory's version).
//!
//! Layout ([`crate::packed`]): the tenant; the connectors, each a tag (directory id, or a
//! private connector in full: id, label, origin, base path, auth, OAuth client, tools); the
//! connections; the tools' places in name order (the by-name lookup, checked in one pass).
//! Reading checks every length, tag and reference; damaged bytes are an error, never a panic.

use std::sync::Arc;

use super::connector::OperationForm;
use super::oauth_client::{ClientAuth, Endpoint, OAuthClient};
use super::{
    AccountKind, ArgPlace, AuthScheme, Catalog, Connection, ConnectionStatus, Connector,
    ConnectorSource, Directory, Method, Operation, Origin, PathPart, Scheme, ToolDef,
    ToolOperation, ToolRef, ToolsByName,
};
use crate::lazy_json::LazyJson;
use crate::packed::{Corrupt, Reader, Writer};

/// Why a compiled catalog cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompiledCatalogError {
    /// It names a directory connector the deployment's directory does not have.
    UnknownDirectoryConnector(String),
    /// The bytes end early, run on, or hold an impossible value.
    Corrupt(&'static str),
}

impl std::fmt::Display for CompiledCatalogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompiledCatalogError::UnknownDirectoryConnector(id) => write!(
                f,
                "compiled catalog names directory connector \"{id}\", which the directory does not have"
            ),
            CompiledCatalogError::Corrupt(what) => write!(f, "compiled catalog damaged: {what}"),
        }
    }
}

impl std::error::Error for CompiledCatalogError {}

impl From<Corrupt> for CompiledCatalogError {
    fn from(Corrupt(what): Corrupt) -> CompiledCatalogError {
        CompiledCatalogError::Corrupt(what)
    }
}

const DIRECTORY_CONNECTOR: u8 = 0;
const PRIVATE_CONNECTOR: u8 = 1;

impl Catalog {
    /// Appends this catalog's compiled form.
    pub fn compile_into(&self, w: &mut Writer) {
        w.str(&self.tenant);
        w.len(self.connectors.len());
        for connector in &self.connectors {
            match connector.source {
                ConnectorSource::Directory => {
                    w.u8(DIRECTORY_CONNECTOR);
                    w.str(&connector.id);
                }
                ConnectorSource::Private => {
                    w.u8(PRIVATE_CONNECTOR);
                    put_connector(w, connector);
                }
            }
        }
        w.len(self.connections.len());
        for c in &self.connections {
            w.str(&c.id);
            w.str(&c.connector);
            w.str(&c.label);
            put_optional(w, c.credential.as_deref());
            w.u8(match c.status {
                ConnectionStatus::Active => 0,
                ConnectionStatus::Disabled => 1,
            });
            w.u8(match c.account {
                AccountKind::Shared => 0,
                AccountKind::Personal => 1,
            });
        }
        // The tools in name order: a cold copy checks it in one pass instead of sorting.
        w.len(self.tools.places().len());
        for r in self.tools.places() {
            w.len(r.connector);
            w.len(r.tool);
        }
    }

    /// Reads a compiled catalog back, its directory connectors taken from `directory`.
    pub fn read_compiled(
        r: &mut Reader<'_>,
        directory: &Directory,
    ) -> Result<Catalog, CompiledCatalogError> {
        let tenant = r.str()?.to_owned();
        let count = r.count()?;
        let mut connectors: Vec<Arc<Connector>> = Vec::with_capacity(count);
        for _ in 0..count {
            let connector = match r.u8()? {
                DIRECTORY_CONNECTOR => {
                    let id = r.str()?;
                    directory.connector(id).cloned().ok_or_else(|| {
                        CompiledCatalogError::UnknownDirectoryConnector(id.to_owned())
                    })?
                }
                PRIVATE_CONNECTOR => Arc::new(read_connector(r)?),
                _ => return Err(Corrupt("an unknown connector tag").into()),
            };
            connectors.push(connector);
        }
        let count = r.count()?;
        let mut connections = Vec::with_capacity(count);
        for _ in 0..count {
            let id = r.str()?.to_owned();
            let connector = r.str()?.to_owned();
            if !connectors.iter().any(|c| c.id == connector) {
                return Err(Corrupt("a connection names no connector of the catalog").into());
            }
            connections.push(Connection {
                id,
                connector,
                label: r.str()?.to_owned(),
                credential: read_optional(r)?.map(str::to_owned),
                status: match r.u8()? {
                    0 => ConnectionStatus::Active,
                    1 => ConnectionStatus::Disabled,
                    _ => return Err(Corrupt("an unknown connection status").into()),
                },
                account: match r.u8()? {
                    0 => AccountKind::Shared,
                    1 => AccountKind::Personal,
                    _ => return Err(Corrupt("an unknown account kind").into()),
                },
            });
        }
        let count = r.count()?;
        let mut places = Vec::with_capacity(count);
        for _ in 0..count {
            // Positions, not counts: `from_sorted` checks them against the connectors.
            places.push(ToolRef {
                connector: r.varint()? as usize,
                tool: r.varint()? as usize,
            });
        }
        let tools = ToolsByName::from_sorted(&connectors, places).ok_or(Corrupt(
            "the tools' name order is not every tool once, in order",
        ))?;
        Ok(Catalog {
            tenant,
            connectors,
            connections,
            tools,
        })
    }
}

fn put_optional(w: &mut Writer, s: Option<&str>) {
    match s {
        None => w.u8(0),
        Some(s) => {
            w.u8(1);
            w.str(s);
        }
    }
}

fn read_optional<'a>(r: &mut Reader<'a>) -> Result<Option<&'a str>, Corrupt> {
    Ok(if r.bool()? { Some(r.str()?) } else { None })
}

fn put_strings(w: &mut Writer, list: &[String]) {
    w.len(list.len());
    for s in list {
        w.str(s);
    }
}

fn read_strings(r: &mut Reader<'_>) -> Result<Vec<String>, Corrupt> {
    let n = r.count()?;
    (0..n).map(|_| r.str().map(str::to_owned)).collect()
}

fn put_connector(w: &mut Writer, c: &Connector) {
    w.str(&c.id);
    w.str(&c.label);
    put_origin(w, &c.origin);
    w.str(&c.base_path);
    match &c.auth {
        AuthScheme::Bearer => w.u8(0),
        AuthScheme::Basic => w.u8(1),
        AuthScheme::Header(name) => {
            w.u8(2);
            w.str(name);
        }
        AuthScheme::None => w.u8(3),
    }
    match &c.oauth {
        None => w.u8(0),
        Some(client) => {
            w.u8(1);
            put_oauth_client(w, client);
        }
    }
    w.len(c.tools.len());
    for tool in &c.tools {
        w.str(&tool.name);
        w.str(&tool.description);
        w.str(tool.input_schema.text());
        w.str(tool.annotations.text());
        w.u8(hint_bits(tool.destructive, tool.read_only));
        match tool.operation.as_ref().map(|op| &op.0) {
            None => w.u8(0),
            Some(OperationForm::Decoded(op)) => {
                w.u8(1);
                put_operation(w, op);
            }
            Some(OperationForm::Compiled(bytes)) => {
                w.u8(1);
                w.out.extend_from_slice(bytes);
            }
        }
    }
}

/// A tool's annotation hints in one byte: bit 0 `destructiveHint: true`, bit 1 a
/// `readOnlyHint` is given, bit 2 its value. Snapshots written before the read-only bits hold
/// 0 or 1 and read the same.
fn hint_bits(destructive: bool, read_only: Option<bool>) -> u8 {
    u8::from(destructive) | read_only.map_or(0, |r| 2 | u8::from(r) << 2)
}

fn read_hint_bits(b: u8) -> Result<(bool, Option<bool>), Corrupt> {
    match b {
        0..=7 if b & 6 != 4 => Ok((b & 1 != 0, (b & 2 != 0).then_some(b & 4 != 0))),
        _ => Err(Corrupt("impossible annotation hints")),
    }
}

fn read_connector(r: &mut Reader<'_>) -> Result<Connector, Corrupt> {
    let id = r.str()?.to_owned();
    let label = r.str()?.to_owned();
    let origin = read_origin(r)?;
    let base_path = r.str()?.to_owned();
    let auth = match r.u8()? {
        0 => AuthScheme::Bearer,
        1 => AuthScheme::Basic,
        2 => AuthScheme::Header(r.str()?.to_owned()),
        3 => AuthScheme::None,
        _ => return Err(Corrupt("an unknown auth scheme")),
    };
    let oauth = if r.bool()? {
        Some(Arc::new(read_oauth_client(r)?))
    } else {
        None
    };
    let n = r.count()?;
    let mut tools = Vec::with_capacity(n);
    // Most tools have no annotations, or their neighbours' (`{}`): one copy for a run of them.
    let mut last_annotations: Option<LazyJson> = None;
    for _ in 0..n {
        // Schemas and annotations stay bytes until used (`LazyJson::from_stored`): most of a
        // snapshot, and a cold copy uses few of them.
        let (name, description) = (r.str()?, r.str()?);
        let (schema, annotations) = (r.bytes()?, r.bytes()?);
        let annotations = match last_annotations {
            Some(last) if last.is_stored(annotations) => last,
            _ => LazyJson::from_stored(annotations),
        };
        last_annotations = Some(annotations.clone());
        let hints = read_hint_bits(r.u8()?)?;
        tools.push(ToolDef {
            name: name.into(),
            description: description.into(),
            input_schema: LazyJson::from_stored(schema),
            annotations,
            destructive: hints.0,
            read_only: hints.1,
            operation: if r.bool()? {
                let start = r.position();
                check_operation(r)?;
                Some(ToolOperation(OperationForm::Compiled(
                    r.since(start).into(),
                )))
            } else {
                None
            },
        });
    }
    Ok(Connector {
        id,
        label: label.into(),
        origin,
        base_path,
        auth,
        oauth,
        tools,
        source: ConnectorSource::Private,
    })
}

fn put_origin(w: &mut Writer, origin: &Origin) {
    w.u8(match origin.scheme {
        Scheme::Http => 0,
        Scheme::Https => 1,
    });
    w.str(&origin.host);
    w.varint(u32::from(origin.port));
}

fn read_origin(r: &mut Reader<'_>) -> Result<Origin, Corrupt> {
    let scheme = match r.u8()? {
        0 => Scheme::Http,
        1 => Scheme::Https,
        _ => return Err(Corrupt("an unknown origin scheme")),
    };
    let host = r.str()?.to_owned();
    let port = u16::try_from(r.varint()?).map_err(|_| Corrupt("a port past 65535"))?;
    Ok(Origin { scheme, host, port })
}

fn put_endpoint(w: &mut Writer, endpoint: &Endpoint) {
    put_origin(w, &endpoint.origin);
    w.str(&endpoint.path);
}

fn read_endpoint(r: &mut Reader<'_>) -> Result<Endpoint, Corrupt> {
    Ok(Endpoint {
        origin: read_origin(r)?,
        path: r.str()?.to_owned(),
    })
}

fn put_oauth_client(w: &mut Writer, client: &OAuthClient) {
    put_endpoint(w, &client.authorization_endpoint);
    put_endpoint(w, &client.token_endpoint);
    match &client.revocation_endpoint {
        None => w.u8(0),
        Some(endpoint) => {
            w.u8(1);
            put_endpoint(w, endpoint);
        }
    }
    put_strings(w, &client.scopes);
    w.str(&client.client);
    w.u8(match client.client_auth {
        ClientAuth::SecretBasic => 0,
        ClientAuth::SecretPost => 1,
    });
}

fn read_oauth_client(r: &mut Reader<'_>) -> Result<OAuthClient, Corrupt> {
    Ok(OAuthClient {
        authorization_endpoint: read_endpoint(r)?,
        token_endpoint: read_endpoint(r)?,
        revocation_endpoint: if r.bool()? {
            Some(read_endpoint(r)?)
        } else {
            None
        },
        scopes: read_strings(r)?,
        client: r.str()?.to_owned(),
        client_auth: match r.u8()? {
            0 => ClientAuth::SecretBasic,
            1 => ClientAuth::SecretPost,
            _ => return Err(Corrupt("an unknown client authentication")),
        },
    })
}

fn put_operation(w: &mut Writer, op: &Operation) {
    w.u8(match op.method {
        Method::Get => 0,
        Method::Post => 1,
        Method::Put => 2,
        Method::Patch => 3,
        Method::Delete => 4,
    });
    w.str(&op.path);
    w.len(op.path_parts.len());
    for part in &op.path_parts {
        match part {
            PathPart::Literal(s) => {
                w.u8(0);
                w.str(s);
            }
            PathPart::Param(s) => {
                w.u8(1);
                w.str(s);
            }
        }
    }
    put_strings(w, &op.query);
    put_strings(w, &op.body);
    put_strings(w, &op.headers);
    w.u8(match op.rest {
        ArgPlace::Query => 0,
        ArgPlace::Body => 1,
    });
    put_strings(w, &op.multi_segment);
}

impl ToolOperation {
    /// The operation, decoded now if a snapshot stored it. Its bytes were checked when the
    /// snapshot was read ([`check_operation`]), so this fails only if the check and the decoder
    /// ever disagreed: a fault of the gateway's own.
    pub fn get(&self) -> Result<Operation, Corrupt> {
        match &self.0 {
            OperationForm::Decoded(op) => Ok(Operation::clone(op)),
            OperationForm::Compiled(bytes) => {
                let mut r = Reader::new(bytes);
                let op = read_operation(&mut r)?;
                if !r.at_end() {
                    return Err(Corrupt("bytes past an operation"));
                }
                Ok(op)
            }
        }
    }
}

/// Equal when they decode to the same operation (an unreadable one equals nothing).
impl PartialEq for ToolOperation {
    fn eq(&self, other: &ToolOperation) -> bool {
        matches!((self.get(), other.get()), (Ok(a), Ok(b)) if a == b)
    }
}

/// What [`read_operation`] reads, checked and skipped without building it: every length, text
/// and tag [`read_operation`] would refuse is refused here.
fn check_operation(r: &mut Reader<'_>) -> Result<(), Corrupt> {
    method_of(r.u8()?)?;
    r.str()?;
    for _ in 0..r.count()? {
        is_param_part(r.u8()?)?;
        r.str()?;
    }
    for _ in 0..3 {
        check_strings(r)?;
    }
    arg_place_of(r.u8()?)?;
    check_strings(r)
}

/// The tags of an operation's bytes, shared by [`read_operation`] and [`check_operation`] (and
/// written by [`put_operation`]).
fn method_of(tag: u8) -> Result<Method, Corrupt> {
    Ok(match tag {
        0 => Method::Get,
        1 => Method::Post,
        2 => Method::Put,
        3 => Method::Patch,
        4 => Method::Delete,
        _ => return Err(Corrupt("an unknown HTTP method")),
    })
}

fn is_param_part(tag: u8) -> Result<bool, Corrupt> {
    match tag {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Corrupt("an unknown path part")),
    }
}

fn arg_place_of(tag: u8) -> Result<ArgPlace, Corrupt> {
    match tag {
        0 => Ok(ArgPlace::Query),
        1 => Ok(ArgPlace::Body),
        _ => Err(Corrupt("an unknown argument place")),
    }
}

fn check_strings(r: &mut Reader<'_>) -> Result<(), Corrupt> {
    for _ in 0..r.count()? {
        r.str()?;
    }
    Ok(())
}

fn read_operation(r: &mut Reader<'_>) -> Result<Operation, Corrupt> {
    let method = method_of(r.u8()?)?;
    let path = r.str()?.to_owned();
    let n = r.count()?;
    let mut path_parts = Vec::with_capacity(n);
    for _ in 0..n {
        let param = is_param_part(r.u8()?)?;
        let text = r.str()?.to_owned();
        path_parts.push(if param {
            PathPart::Param(text)
        } else {
            PathPart::Literal(text)
        });
    }
    Ok(Operation {
        method,
        path,
        path_parts,
        query: read_strings(r)?,
        body: read_strings(r)?,
        headers: read_strings(r)?,
        rest: arg_place_of(r.u8()?)?,
        multi_segment: read_strings(r)?,
    })
}

#[cfg(test)]
mod tests {
    use super::{check_operation, hint_bits, put_operation, read_hint_bits};
    use super::{ArgPlace, Method, Operation, OperationForm, PathPart, ToolOperation};
    use crate::packed::{Reader, Writer};

    fn operations() -> Vec<Operation> {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        vec![
            Operation {
                method: Method::Get,
                path: "/items".into(),
                path_parts: vec![PathPart::Literal("/items".into())],
                query: vec![],
                body: vec![],
                headers: vec![],
                rest: ArgPlace::Query,
                multi_segment: vec![],
            },
            Operation {
                method: Method::Delete,
                path: "/folders/{path}/notes/{id}".into(),
                path_parts: vec![
                    PathPart::Literal("/folders/".into()),
                    PathPart::Param("path".into()),
                    PathPart::Literal("/notes/".into()),
                    PathPart::Param("id".into()),
                ],
                query: strings(&["draft", "vérifié"]),
                body: strings(&["title", "tags"]),
                headers: strings(&["X-Trace"]),
                rest: ArgPlace::Body,
                multi_segment: strings(&["path"]),
            },
        ]
    }

    #[test]
    fn a_stored_operation_is_checked_whole_and_decodes_to_what_was_written() {
        for op in operations() {
            let mut w = Writer::default();
            put_operation(&mut w, &op);
            let mut r = Reader::new(&w.out);
            assert_eq!(check_operation(&mut r), Ok(()));
            assert!(r.at_end(), "the check reads exactly what was written");
            let stored = ToolOperation(OperationForm::Compiled(w.out.clone().into()));
            assert_eq!(stored.get(), Ok(op.clone()));
            assert_eq!(stored, ToolOperation::new(op.clone()));
            for len in 0..w.out.len() {
                assert!(check_operation(&mut Reader::new(&w.out[..len])).is_err());
            }
            let mut other_method = w.out.clone();
            other_method[0] = 9;
            assert!(check_operation(&mut Reader::new(&other_method)).is_err());
        }
    }

    #[test]
    fn annotation_hints_read_back_and_old_bytes_read_the_same() {
        for destructive in [false, true] {
            for read_only in [None, Some(false), Some(true)] {
                let b = hint_bits(destructive, read_only);
                assert_eq!(read_hint_bits(b), Ok((destructive, read_only)));
            }
        }
        // Written before the read-only bits: 0 or 1, destructive only.
        assert_eq!(read_hint_bits(1), Ok((true, None)));
        // A read-only value without its presence bit, or bits past the third, are damage.
        assert!(read_hint_bits(4).is_err());
        assert!(read_hint_bits(8).is_err());
    }
}
