//! Names of the Worker bindings, secrets and variables the gateway itself reads.
//!
//! They live here, in the core, so the catalog can refuse them as connection credentials: a
//! catalog that named `ADMIN_SECRET` would send the operator secret to an origin of its choice.

pub const ADMIN_SECRET: &str = "ADMIN_SECRET";
/// The key of the MAC inside every grant (`grant::GrantKey`).
pub const GRANT_MAC_KEY: &str = "GRANT_MAC_KEY";
pub const KV: &str = "FLOORGATE_KV";
pub const ROSTER: &str = "ROSTER";
pub const ALLOWED_ORIGINS: &str = "ALLOWED_ORIGINS";
pub const TOOLS_PAGE_SIZE: &str = "TOOLS_PAGE_SIZE";
pub const COLLAPSE_THRESHOLD: &str = "COLLAPSE_THRESHOLD";
pub const ALLOW_LOOPBACK_HTTP: &str = "ALLOW_LOOPBACK_HTTP";
pub const UPSTREAM_TIMEOUT_MS: &str = "UPSTREAM_TIMEOUT_MS";
pub const TEST_CLOCK: &str = "TEST_CLOCK";
/// The origin clients use, when the gateway sits behind a proxy (OAuth issuer and resource).
pub const PUBLIC_ORIGIN: &str = "PUBLIC_ORIGIN";
/// Client registrations one address may make per minute (default `oauth::client`'s).
pub const REGISTRATIONS_PER_MINUTE: &str = "REGISTRATIONS_PER_MINUTE";

/// The deployment's master secret the vault derives each tenant's key from (issue 19); a
/// rotation adds `VAULT_MASTER_KEY_V<n>` (n ≥ 2), and the newest version seals.
pub const VAULT_MASTER_KEY: &str = "VAULT_MASTER_KEY";

/// Every name above: never a connection's credential.
pub const RESERVED: [&str; 13] = [
    ADMIN_SECRET,
    GRANT_MAC_KEY,
    KV,
    ROSTER,
    ALLOWED_ORIGINS,
    TOOLS_PAGE_SIZE,
    COLLAPSE_THRESHOLD,
    ALLOW_LOOPBACK_HTTP,
    UPSTREAM_TIMEOUT_MS,
    TEST_CLOCK,
    PUBLIC_ORIGIN,
    REGISTRATIONS_PER_MINUTE,
    VAULT_MASTER_KEY,
];

/// Whether `name` is one of the gateway's own bindings (compared without case, so a
/// look-alike such as `admin_secret` is refused too).
pub fn is_reserved(name: &str) -> bool {
    RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name)) || vault_version_of(name).is_some()
}

/// The key version a binding name holds: `VAULT_MASTER_KEY` is version 1,
/// `VAULT_MASTER_KEY_V<n>` version n (any case, so no look-alike is a credential either).
pub fn vault_version_of(name: &str) -> Option<u32> {
    let upper = name.to_ascii_uppercase();
    if upper == VAULT_MASTER_KEY {
        return Some(1);
    }
    let digits = upper.strip_prefix(VAULT_MASTER_KEY)?.strip_prefix("_V")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.starts_with('0') {
        return None;
    }
    digits.parse().ok()
}

/// The highest `VAULT_MASTER_KEY_V<n>` the shell looks for.
pub const MAX_VAULT_VERSION: u32 = 16;
