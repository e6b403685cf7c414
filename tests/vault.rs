//! Sealed credentials open only for the tenant, connection and member they were sealed for,
//! under a key version the deployment holds, and not after a single changed byte.

use floorgate::oauth::encoding::b64url_decode;
use floorgate::vault::{Owner, Vault, VaultError, MIN_MASTER_BYTES, NONCE_BYTES};

const ADA: Owner<'static> = Owner {
    tenant: "acme",
    connection: "jira-eng",
    member: Some("ada"),
};

fn vault(versions: &[(u32, u8)]) -> Vault {
    Vault::new(
        versions
            .iter()
            .map(|(v, fill)| (*v, vec![*fill; MIN_MASTER_BYTES]))
            .collect(),
    )
    .unwrap()
}

fn nonce(n: u8) -> [u8; NONCE_BYTES] {
    [n; NONCE_BYTES]
}

#[test]
fn a_sealed_credential_opens_for_its_owner() {
    let v = vault(&[(1, 7)]);
    let sealed = v.seal(ADA, "jira-token-123", nonce(1));
    assert!(sealed.starts_with("fgv1.1."));
    assert!(!sealed.contains("jira-token-123"));
    assert_eq!(v.open(ADA, &sealed).unwrap(), "jira-token-123");
}

#[test]
fn copied_into_another_row_it_does_not_open() {
    let v = vault(&[(1, 7)]);
    let sealed = v.seal(ADA, "jira-token-123", nonce(1));
    for other in [
        Owner {
            tenant: "globex",
            ..ADA
        },
        Owner {
            connection: "jira-sales",
            ..ADA
        },
        Owner {
            member: Some("bob"),
            ..ADA
        },
        Owner {
            member: None,
            ..ADA
        },
        // Parts that run together differently are still other owners.
        Owner {
            tenant: "acmej",
            connection: "ira-eng",
            member: Some("ada"),
        },
    ] {
        assert_eq!(
            v.open(other, &sealed),
            Err(VaultError::DoesNotOpen),
            "{other:?}"
        );
    }
}

#[test]
fn a_changed_byte_does_not_open_and_a_malformed_value_says_so() {
    let v = vault(&[(1, 7)]);
    let sealed = v.seal(ADA, "jira-token-123", nonce(1));
    let mut bytes = sealed.clone().into_bytes();
    let last = bytes.len() - 2;
    bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
    assert_eq!(
        v.open(ADA, &String::from_utf8(bytes).unwrap()),
        Err(VaultError::DoesNotOpen)
    );
    for bad in [
        "",
        "fgv1",
        "fgv1.x.a.b",
        "fgv2.1.AAAA.AAAA",
        "fgv1.1.AAAA.AAAA",
    ] {
        assert_eq!(v.open(ADA, bad), Err(VaultError::Malformed), "{bad:?}");
    }
}

#[test]
fn rotation_opens_old_versions_and_seals_with_the_newest() {
    let old = vault(&[(1, 7)]);
    let sealed_v1 = old.seal(ADA, "old-token", nonce(1));
    let rotated = vault(&[(1, 7), (2, 9)]);
    assert_eq!(rotated.open(ADA, &sealed_v1).unwrap(), "old-token");
    assert!(rotated.is_stale(&sealed_v1));
    let resealed = rotated.seal(ADA, "old-token", nonce(2));
    assert!(resealed.starts_with("fgv1.2."));
    assert!(!rotated.is_stale(&resealed));
    // A deployment that dropped version 1 says which version it lacks.
    let only_new = vault(&[(2, 9)]);
    assert_eq!(
        only_new.open(ADA, &sealed_v1),
        Err(VaultError::UnknownVersion(1))
    );
    // Another master under the same version number does not open it.
    assert_eq!(
        vault(&[(1, 8)]).open(ADA, &sealed_v1),
        Err(VaultError::DoesNotOpen)
    );
}

#[test]
fn a_weak_master_is_refused() {
    assert!(matches!(
        Vault::new(vec![(1, vec![1; MIN_MASTER_BYTES - 1])]),
        Err(VaultError::WeakMaster)
    ));
    assert!(matches!(
        Vault::new(Vec::new()),
        Err(VaultError::WeakMaster)
    ));
}

#[test]
fn tenants_get_different_keys_from_one_master() {
    // GCM's tag covers the associated data, which names the tenant, so whole sealed values
    // differ even under one key. The encrypted bytes before the tag differ only when the key
    // does: same master, message and nonce, so only the per-tenant derivation can tell them apart.
    let body = |sealed: &str| {
        let ciphertext = b64url_decode(sealed.rsplit('.').next().unwrap()).unwrap();
        ciphertext[..ciphertext.len() - 16].to_vec()
    };
    let v = vault(&[(1, 7)]);
    let globex = Owner {
        tenant: "globex",
        ..ADA
    };
    let for_acme = v.seal(ADA, "same secret", nonce(3));
    let for_globex = v.seal(globex, "same secret", nonce(3));
    assert_ne!(body(&for_acme), body(&for_globex));
    // And the same tenant under the same key gives the same bytes: the comparison can tell.
    let other_member = Owner {
        member: Some("bob"),
        ..ADA
    };
    assert_eq!(
        body(&for_acme),
        body(&v.seal(other_member, "same secret", nonce(3)))
    );
}
