//! (to be written)

/// The argument a merged tool gains to pick one of the member's visible accounts.
pub const CONNECTION_ARGUMENT: &str = "connection";
