//! The gateway's own names: its tools, its meta-tools and the argument it adds.
//!
//! Like `mcp::method` for the protocol's names, this is the ground floor: the catalog refuses a
//! connector that takes one of these names, the policy names control operations in its rules,
//! and the resolver and the control operations answer to them. Nothing here imports the rest of
//! the crate.

/// The argument a merged tool gains to pick one of the member's visible accounts.
pub const CONNECTION_ARGUMENT: &str = "connection";

/// The control-plane operations. Admin ones are only visible to roles that allow them by name
/// or by a glob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ControlOpKind {
    Whoami,
    ListConnectors,
    ListConnections,
    ConnectAccount,
    DisconnectAccount,
    DescribeTool,
    ListMyGrants,
    RevokeMyGrant,
    ListMembers,
    SuspendMember,
    ReinstateMember,
    RemoveMember,
    ViewPolicy,
    IssueSignInCode,
}

impl ControlOpKind {
    pub const ALL: [ControlOpKind; 14] = [
        ControlOpKind::Whoami,
        ControlOpKind::ListConnectors,
        ControlOpKind::ListConnections,
        ControlOpKind::ConnectAccount,
        ControlOpKind::DisconnectAccount,
        ControlOpKind::DescribeTool,
        ControlOpKind::ListMyGrants,
        ControlOpKind::RevokeMyGrant,
        ControlOpKind::ListMembers,
        ControlOpKind::SuspendMember,
        ControlOpKind::ReinstateMember,
        ControlOpKind::RemoveMember,
        ControlOpKind::ViewPolicy,
        ControlOpKind::IssueSignInCode,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ControlOpKind::Whoami => "whoami",
            ControlOpKind::ListConnectors => "list_connectors",
            ControlOpKind::ListConnections => "list_connections",
            ControlOpKind::ConnectAccount => "connect_account",
            ControlOpKind::DisconnectAccount => "disconnect_account",
            ControlOpKind::DescribeTool => "describe_tool",
            ControlOpKind::ListMyGrants => "list_my_grants",
            ControlOpKind::RevokeMyGrant => "revoke_my_grant",
            ControlOpKind::ListMembers => "list_members",
            ControlOpKind::SuspendMember => "suspend_member",
            ControlOpKind::ReinstateMember => "reinstate_member",
            ControlOpKind::RemoveMember => "remove_member",
            ControlOpKind::ViewPolicy => "view_policy",
            ControlOpKind::IssueSignInCode => "issue_sign_in_code",
        }
    }

    pub fn from_name(name: &str) -> Option<ControlOpKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Operations on the caller's own accounts of personal connections.
    pub fn is_about_personal_accounts(self) -> bool {
        matches!(
            self,
            ControlOpKind::ConnectAccount | ControlOpKind::DisconnectAccount
        )
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
                | ControlOpKind::IssueSignInCode
        )
    }
}

/// The meta-tool that ranks the caller's connected tools.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The meta-tool that runs a connected tool by name.
pub const EXECUTE_TOOL: &str = "execute_tool";

/// Whether a name is taken by the gateway itself (a control operation or a meta-tool), so no
/// connector may use it.
pub fn is_reserved_tool_name(name: &str) -> bool {
    ControlOpKind::from_name(name).is_some() || name == SEARCH_TOOLS || name == EXECUTE_TOOL
}
