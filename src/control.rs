//! The gateway's own control-plane operations, as tools.

/// The control-plane operations. Admin ones are only visible to roles that allow them by name
/// or by a glob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ControlOpKind {
    Whoami,
    ListConnectors,
    ListConnections,
    DescribeTool,
    ListMyGrants,
    RevokeMyGrant,
    ListMembers,
    SuspendMember,
    ReinstateMember,
    RemoveMember,
    ViewPolicy,
}

impl ControlOpKind {
    pub const ALL: [ControlOpKind; 11] = [
        ControlOpKind::Whoami,
        ControlOpKind::ListConnectors,
        ControlOpKind::ListConnections,
        ControlOpKind::DescribeTool,
        ControlOpKind::ListMyGrants,
        ControlOpKind::RevokeMyGrant,
        ControlOpKind::ListMembers,
        ControlOpKind::SuspendMember,
        ControlOpKind::ReinstateMember,
        ControlOpKind::RemoveMember,
        ControlOpKind::ViewPolicy,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ControlOpKind::Whoami => "whoami",
            ControlOpKind::ListConnectors => "list_connectors",
            ControlOpKind::ListConnections => "list_connections",
            ControlOpKind::DescribeTool => "describe_tool",
            ControlOpKind::ListMyGrants => "list_my_grants",
            ControlOpKind::RevokeMyGrant => "revoke_my_grant",
            ControlOpKind::ListMembers => "list_members",
            ControlOpKind::SuspendMember => "suspend_member",
            ControlOpKind::ReinstateMember => "reinstate_member",
            ControlOpKind::RemoveMember => "remove_member",
            ControlOpKind::ViewPolicy => "view_policy",
        }
    }

    pub fn from_name(name: &str) -> Option<ControlOpKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Operations on other members or on the tenant's policy.
    pub fn is_admin(self) -> bool {
        matches!(
            self,
            ControlOpKind::ListMembers
                | ControlOpKind::SuspendMember
                | ControlOpKind::ReinstateMember
                | ControlOpKind::RemoveMember
                | ControlOpKind::ViewPolicy
        )
    }
}

/// The meta-tool that ranks the caller's connected tools.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The meta-tool that runs a connected tool by name.
pub const EXECUTE_TOOL: &str = "execute_tool";

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
    SEARCH_TOOLS,
    EXECUTE_TOOL,
];
