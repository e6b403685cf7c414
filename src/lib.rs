//! floorgate: a multi-tenant MCP gateway for the edge.
//!
//! Everything outside [`edge`] is the pure core: synchronous, target-independent and tested
//! on the host. Time, randomness and I/O are handed in by the caller (the Worker shell or the
//! CLI), never fetched here, so the same code ranks, resolves and dispatches in both.

pub mod account_link;
pub mod accounts;
pub mod admin;
pub mod binding;
pub mod cache;
pub mod call_error;
pub mod catalog;
pub mod control;
pub mod credential;
pub mod gateway;
pub mod grant;
pub mod lazy_json;
pub mod mcp;
pub mod names;
pub mod oauth;
pub mod outbound;
pub mod packed;
pub mod policy;
pub mod provider_oauth;
pub mod rank;
pub mod reseal;
pub mod resolver;
pub mod roster;
pub mod scaffold;
pub mod schema;
pub mod tenant;
pub mod tokenize;
pub mod upstream;
pub mod vault;

#[cfg(target_arch = "wasm32")]
mod edge;
