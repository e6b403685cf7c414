//! The gateway's own control-plane operations, as tools.

/// Names no connector may use: the control operations and the two meta-tools.
pub const RESERVED_TOOL_NAMES: &[&str] = &[
    "whoami",
    "list_connectors",
    "list_connections",
    "describe_tool",
    "list_my_grants",
    "revoke_my_grant",
    "list_members",
    "suspend_member",
    "reinstate_member",
    "remove_member",
    "view_policy",
    "search_tools",
    "execute_tool",
];
