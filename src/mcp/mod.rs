//! The MCP protocol surface: JSON-RPC message types, method names, error codes and the
//! revision rules of Streamable HTTP, kept free of any platform so the host tests it whole.
//!
//! The dispatcher is sans-I/O: [`dispatch::handle`] answers what it can on its own (handshake,
//! listing, pure tools) and hands back the calls that need I/O as pending effects, which the
//! Worker shell performs and feeds back through [`dispatch::Exchange::finish`].

pub mod dispatch;
pub mod wire;

pub use dispatch::{handle, Exchange, HostCall, HttpIn, HttpReply, ToolHost};
pub use wire::{CallToolResult, Content, Tool};

/// JSON-RPC method names this server knows.
pub mod method {
    pub const INITIALIZE: &str = "initialize";
    pub const INITIALIZED: &str = "notifications/initialized";
    pub const PING: &str = "ping";
    pub const TOOLS_LIST: &str = "tools/list";
    pub const TOOLS_CALL: &str = "tools/call";
    pub const SERVER_DISCOVER: &str = "server/discover";
}

/// JSON-RPC and MCP error codes.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// 2026-07-28: a routing header disagrees with the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28: the envelope names a protocol version this server does not serve.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// HTTP header names of the Streamable HTTP transport (lowercase, as looked up).
pub mod header {
    pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
    pub const METHOD: &str = "mcp-method";
    pub const NAME: &str = "mcp-name";
    pub const SESSION_ID: &str = "mcp-session-id";
}

/// Keys of the 2026-07-28 per-request `_meta` envelope.
pub mod meta {
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
}

/// Revisions with the `initialize` handshake, newest first.
pub const HANDSHAKE_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// Stateless revisions: every request carries its version in `_meta`.
pub const STATELESS_VERSIONS: [&str; 1] = ["2026-07-28"];
/// What a request without `MCP-Protocol-Version` is taken to speak (the transport spec's rule).
pub const HEADERLESS_VERSION: &str = "2025-03-26";
/// The only revision that allows JSON-RPC batches.
pub const BATCH_VERSION: &str = "2025-03-26";
/// Most messages one batch may hold; a longer batch is refused whole, before anything runs.
/// The calls of a batch run one after another inside one Worker request: 32 keeps the worst
/// case to 32 upstream fetches (each at most `upstream::TIMEOUT_MS` and
/// `upstream::MAX_TEXT_BYTES`) plus their audit writes, well inside a request's subrequest
/// limit, and still far above what any client batches (the SDKs that batch send a handful).
pub const MAX_BATCH_MESSAGES: usize = 32;
/// Most bytes of the JSON answer to one POST. An answer that would pass it is replaced by an
/// error for that call, so no request can make the isolate hold an unbounded reply. 4 MiB holds
/// a full batch of maximal upstream results (64 KiB text, also as structured content).
pub const MAX_ANSWER_BYTES: usize = 4 << 20;

/// Every revision served, newest first.
/// Longest member-chosen string (a method or tool name) a log line carries; a longer one is cut
/// and marked, so one request cannot write megabytes into the logs.
pub const MAX_LOG_FIELD_CHARS: usize = 128;

/// `text` as a log field: at most [`MAX_LOG_FIELD_CHARS`] characters, `…` marking a cut.
pub fn log_field(text: &str) -> String {
    match text.char_indices().nth(MAX_LOG_FIELD_CHARS) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

pub fn supported_versions() -> Vec<&'static str> {
    STATELESS_VERSIONS
        .iter()
        .chain(HANDSHAKE_VERSIONS.iter())
        .copied()
        .collect()
}
