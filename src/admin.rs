//! The operator API's routes and request bodies, parsed once at the boundary.
//!
//! Every path is under `/admin/v1/` and is authenticated by the deployment's admin secret
//! before it reaches this module. Ids are checked here so storage never sees a malformed one.

use serde::Deserialize;
use std::fmt;

use crate::grant::valid_id;
use crate::roster::MemberStatus;

/// Shortest admin secret the API accepts: 32 bytes is 256 bits when the secret is random
/// bytes, and still far beyond guessing when it is hex or base64 of 24 random bytes.
pub const MIN_ADMIN_SECRET_BYTES: usize = 32;

/// Why the admin API is off; it answers 503 with this message and logs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminDisabled {
    Missing,
    TooShort { bytes: usize },
}

impl fmt::Display for AdminDisabled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = crate::binding::ADMIN_SECRET;
        match self {
            AdminDisabled::Missing => write!(f, "the admin API is disabled: set the {name} secret"),
            AdminDisabled::TooShort { bytes } => write!(
                f,
                "the admin API is disabled: {name} is {bytes} bytes long and must be at least {MIN_ADMIN_SECRET_BYTES} (for example 24 random bytes as 48 hex digits)"
            ),
        }
    }
}

/// The admin secret if it may be used: present and at least [`MIN_ADMIN_SECRET_BYTES`] long.
pub fn usable_admin_secret(secret: Option<&str>) -> Result<&str, AdminDisabled> {
    match secret {
        None | Some("") => Err(AdminDisabled::Missing),
        Some(s) if s.len() < MIN_ADMIN_SECRET_BYTES => {
            Err(AdminDisabled::TooShort { bytes: s.len() })
        }
        Some(s) => Ok(s),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    ListMembers {
        tenant: String,
    },
    PutMember {
        tenant: String,
        member: String,
    },
    SetStatus {
        tenant: String,
        member: String,
        status: MemberStatus,
    },
    IssueGrant {
        tenant: String,
        member: String,
    },
    ListGrants {
        tenant: String,
        member: Option<String>,
    },
    RevokeGrant {
        tenant: String,
        grant: String,
    },
    GetDocument {
        tenant: String,
        document: Document,
    },
    PutDocument {
        tenant: String,
        document: Document,
    },
    GetDirectory,
    PutDirectory,
    ListExecutions {
        tenant: String,
    },
    /// A tenant's audit of changes, or (`None`) the deployment's own (directory writes).
    ListAudit {
        tenant: Option<String>,
    },
}

/// The per-tenant documents kept in KV.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Document {
    Catalog,
    Policy,
}

impl Document {
    pub fn name(self) -> &'static str {
        match self {
            Document::Catalog => "catalog",
            Document::Policy => "policy",
        }
    }

    /// The KV key the document lives under.
    /// The tenant of a stored document's KV key (`tenant/acme/catalog` → `acme`).
    pub fn tenant_of_key(self, key: &str) -> Option<&str> {
        key.strip_prefix(TENANT_KEY_PREFIX)?
            .strip_suffix(self.name())?
            .strip_suffix('/')
            .filter(|t| !t.is_empty() && !t.contains('/'))
    }

    pub fn kv_key(self, tenant: &str) -> String {
        format!("{TENANT_KEY_PREFIX}{tenant}/{}", self.name())
    }
}

/// The KV key of the deployment's connector directory.
pub const DIRECTORY_KEY: &str = "directory";
/// Every tenant document's KV key starts with this.
pub const TENANT_KEY_PREFIX: &str = "tenant/";
/// A directory update checks at most this many tenants' stored documents against itself (two KV
/// reads each) and says whether it left any unchecked.
pub const MAX_TENANTS_CHECKED: usize = 200;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteError {
    NotFound,
    MethodNotAllowed(&'static str),
    BadId(&'static str, String),
}

impl RouteError {
    pub fn status(&self) -> u16 {
        match self {
            RouteError::NotFound => 404,
            RouteError::MethodNotAllowed(_) => 405,
            RouteError::BadId(..) => 400,
        }
    }
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteError::NotFound => write!(f, "no such admin route"),
            RouteError::MethodNotAllowed(allowed) => {
                write!(f, "method not allowed here; use {allowed}")
            }
            RouteError::BadId(which, id) => write!(
                f,
                "{which} id \"{id}\" is invalid: use 1-64 lowercase letters, digits or '-'"
            ),
        }
    }
}

fn id(which: &'static str, raw: &str) -> Result<String, RouteError> {
    if valid_id(raw) {
        Ok(raw.to_owned())
    } else {
        Err(RouteError::BadId(which, raw.chars().take(80).collect()))
    }
}

/// Maps a method and a path (without query) to a route.
pub fn route(method: &str, path: &str) -> Result<Route, RouteError> {
    let rest = path
        .strip_prefix("/admin/v1/")
        .ok_or(RouteError::NotFound)?;
    let segments: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    let only = |allowed: &'static str, route: Route| {
        if method == allowed {
            Ok(route)
        } else {
            Err(RouteError::MethodNotAllowed(allowed))
        }
    };
    match segments.as_slice() {
        ["directory"] => match method {
            "GET" => Ok(Route::GetDirectory),
            "PUT" => Ok(Route::PutDirectory),
            _ => Err(RouteError::MethodNotAllowed("GET or PUT")),
        },
        ["tenants", t, "members"] => only(
            "GET",
            Route::ListMembers {
                tenant: id("tenant", t)?,
            },
        ),
        ["tenants", t, "members", m] => only(
            "PUT",
            Route::PutMember {
                tenant: id("tenant", t)?,
                member: id("member", m)?,
            },
        ),
        ["tenants", t, "members", m, action @ ("suspend" | "reinstate" | "remove")] => {
            let status = match *action {
                "suspend" => MemberStatus::Suspended,
                "reinstate" => MemberStatus::Active,
                _ => MemberStatus::Removed,
            };
            only(
                "POST",
                Route::SetStatus {
                    tenant: id("tenant", t)?,
                    member: id("member", m)?,
                    status,
                },
            )
        }
        ["tenants", t, "members", m, "grants"] => {
            let (tenant, member) = (id("tenant", t)?, id("member", m)?);
            match method {
                "POST" => Ok(Route::IssueGrant { tenant, member }),
                "GET" => Ok(Route::ListGrants {
                    tenant,
                    member: Some(member),
                }),
                _ => Err(RouteError::MethodNotAllowed("GET or POST")),
            }
        }
        ["tenants", t, "grants"] => only(
            "GET",
            Route::ListGrants {
                tenant: id("tenant", t)?,
                member: None,
            },
        ),
        ["tenants", t, "grants", g] => only(
            "DELETE",
            Route::RevokeGrant {
                tenant: id("tenant", t)?,
                grant: (*g).to_owned(),
            },
        ),
        ["audit"] => only("GET", Route::ListAudit { tenant: None }),
        ["tenants", t, "audit"] => only(
            "GET",
            Route::ListAudit {
                tenant: Some(id("tenant", t)?),
            },
        ),
        ["tenants", t, "executions"] => only(
            "GET",
            Route::ListExecutions {
                tenant: id("tenant", t)?,
            },
        ),
        ["tenants", t, doc @ ("catalog" | "policy")] => {
            let tenant = id("tenant", t)?;
            let document = if *doc == "catalog" {
                Document::Catalog
            } else {
                Document::Policy
            };
            match method {
                "GET" => Ok(Route::GetDocument { tenant, document }),
                "PUT" => Ok(Route::PutDocument { tenant, document }),
                _ => Err(RouteError::MethodNotAllowed("GET or PUT")),
            }
        }
        _ => Err(RouteError::NotFound),
    }
}

/// Body of `PUT …/members/{m}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutMemberBody {
    pub role: String,
}

/// Body of `POST …/members/{m}/grants` (optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssueGrantBody {
    #[serde(default)]
    pub label: Option<String>,
}

/// Parses a small JSON admin body with a message that names what is wrong.
pub fn parse_body<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("invalid request body: {e}"))
}

/// A role name: what policies key their restrictions by.
pub fn valid_role(role: &str) -> bool {
    valid_id(role)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_or_missing_admin_secret_disables_the_api() {
        assert_eq!(usable_admin_secret(None), Err(AdminDisabled::Missing));
        assert_eq!(usable_admin_secret(Some("")), Err(AdminDisabled::Missing));
        let short = "x".repeat(MIN_ADMIN_SECRET_BYTES - 1);
        assert_eq!(
            usable_admin_secret(Some(&short)),
            Err(AdminDisabled::TooShort { bytes: 31 })
        );
        assert_eq!(
            AdminDisabled::TooShort { bytes: 31 }.to_string(),
            "the admin API is disabled: ADMIN_SECRET is 31 bytes long and must be at least 32 (for example 24 random bytes as 48 hex digits)"
        );
        let ok = "x".repeat(MIN_ADMIN_SECRET_BYTES);
        assert_eq!(usable_admin_secret(Some(&ok)), Ok(ok.as_str()));
    }

    #[test]
    fn routes() {
        assert_eq!(
            route("POST", "/admin/v1/tenants/acme/members/ada/suspend"),
            Ok(Route::SetStatus {
                tenant: "acme".into(),
                member: "ada".into(),
                status: MemberStatus::Suspended
            })
        );
        assert_eq!(
            route("PUT", "/admin/v1/tenants/acme/policy"),
            Ok(Route::PutDocument {
                tenant: "acme".into(),
                document: Document::Policy
            })
        );
        assert_eq!(
            route("GET", "/admin/v1/tenants/acme/members/ada"),
            Err(RouteError::MethodNotAllowed("PUT"))
        );
        assert_eq!(route("GET", "/admin/v1/nothing"), Err(RouteError::NotFound));
        assert_eq!(
            route("GET", "/admin/v1/tenants/acme/audit"),
            Ok(Route::ListAudit {
                tenant: Some("acme".into())
            })
        );
        assert_eq!(
            route("GET", "/admin/v1/audit"),
            Ok(Route::ListAudit { tenant: None })
        );
        // The deployment's audit object is not reachable as a tenant.
        assert!(matches!(
            route("GET", "/admin/v1/tenants/_deployment/audit"),
            Err(RouteError::BadId("tenant", _))
        ));
        assert!(matches!(
            route("GET", "/admin/v1/tenants/Acme/members"),
            Err(RouteError::BadId("tenant", _))
        ));
        assert_eq!(Document::Catalog.kv_key("acme"), "tenant/acme/catalog");
        assert_eq!(
            Document::Catalog.tenant_of_key("tenant/acme/catalog"),
            Some("acme")
        );
        assert_eq!(Document::Catalog.tenant_of_key("tenant/acme/policy"), None);
        assert_eq!(Document::Policy.tenant_of_key("tenant/a/b/policy"), None);
        assert_eq!(Document::Catalog.tenant_of_key("tenant//catalog"), None);
    }

    #[test]
    fn bodies_name_their_problem() {
        let err = parse_body::<PutMemberBody>(br#"{"rol":"admin"}"#).unwrap_err();
        assert!(err.contains("unknown field `rol`"), "{err}");
        assert_eq!(
            parse_body::<PutMemberBody>(br#"{"role":"admin"}"#)
                .unwrap()
                .role,
            "admin"
        );
    }
}
