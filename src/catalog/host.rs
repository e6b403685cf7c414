//! Which hosts an origin may name: public DNS names and public addresses, never a private,
//! link-local, loopback (unless the deployment allows it), mapped or unspecified address, and
//! never an IPv4 address in a form other than four decimal numbers.
//!
//! URL parsers read `2130706433`, `0x7f.0.0.1` and `017700000001` as 127.0.0.1, so a host whose
//! last label is a number in any base is an IPv4 address and must be written canonically to be
//! judged at all. A DNS name cannot be resolved here; what it points at is the platform's affair.

use std::net::{Ipv4Addr, Ipv6Addr};

/// What a host is, for the origin rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostClass {
    /// A DNS name other than `localhost`, or a public address.
    Public,
    /// `localhost`, `*.localhost`, 127.0.0.0/8 or `[::1]`.
    Loopback,
    /// An address no connector may use, with what it is.
    Refused(&'static str),
    /// A number that URL parsers read as IPv4 but is not four decimal numbers.
    NonCanonicalIpv4,
}

/// Classifies a host as `split_host_port` returns it (IPv6 in brackets, lowercase).
pub fn classify(host: &str) -> HostClass {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return match inner.parse::<Ipv6Addr>() {
            Ok(address) => classify_v6(address),
            Err(_) => HostClass::Refused("not a valid IPv6 address"),
        };
    }
    if host == "localhost" || host.ends_with(".localhost") {
        return HostClass::Loopback;
    }
    let last = host.rsplit('.').next().unwrap_or(host);
    if !is_number_label(last) {
        return HostClass::Public;
    }
    match canonical_ipv4(host) {
        Some(address) => classify_v4(address),
        None => HostClass::NonCanonicalIpv4,
    }
}

/// Decimal, octal (leading 0) or hex (`0x`) digits: what a URL parser takes for an IPv4 part.
fn is_number_label(label: &str) -> bool {
    match label
        .strip_prefix("0x")
        .or_else(|| label.strip_prefix("0X"))
    {
        Some(hex) => hex.bytes().all(|b| b.is_ascii_hexdigit()),
        None => !label.is_empty() && label.bytes().all(|b| b.is_ascii_digit()),
    }
}

/// `a.b.c.d` in decimal with no leading zeros, each at most 255; nothing else.
fn canonical_ipv4(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (octet, part) in octets.iter_mut().zip(&parts) {
        let canonical = !part.is_empty()
            && part.len() <= 3
            && part.bytes().all(|b| b.is_ascii_digit())
            && (*part == "0" || !part.starts_with('0'));
        if !canonical {
            return None;
        }
        *octet = part.parse().ok()?;
    }
    Some(Ipv4Addr::from(octets))
}

fn in_v4(address: Ipv4Addr, network: [u8; 4], bits: u32) -> bool {
    let mask = if bits == 0 {
        0
    } else {
        u32::MAX << (32 - bits)
    };
    u32::from(address) & mask == u32::from(Ipv4Addr::from(network)) & mask
}

fn classify_v4(address: Ipv4Addr) -> HostClass {
    const REFUSED: [([u8; 4], u32, &str); 14] = [
        ([0, 0, 0, 0], 8, "an unspecified (\"this network\") address"),
        ([10, 0, 0, 0], 8, "a private address"),
        ([100, 64, 0, 0], 10, "a shared (carrier-grade NAT) address"),
        ([169, 254, 0, 0], 16, "a link-local address"),
        ([172, 16, 0, 0], 12, "a private address"),
        ([192, 0, 0, 0], 24, "an IETF protocol address"),
        ([192, 0, 2, 0], 24, "a documentation address"),
        ([192, 88, 99, 0], 24, "a 6to4 relay address"),
        ([192, 168, 0, 0], 16, "a private address"),
        ([198, 18, 0, 0], 15, "a benchmarking address"),
        ([198, 51, 100, 0], 24, "a documentation address"),
        ([203, 0, 113, 0], 24, "a documentation address"),
        ([224, 0, 0, 0], 4, "a multicast address"),
        ([240, 0, 0, 0], 4, "a reserved or broadcast address"),
    ];
    if in_v4(address, [127, 0, 0, 0], 8) {
        return HostClass::Loopback;
    }
    REFUSED
        .iter()
        .find(|(network, bits, _)| in_v4(address, *network, *bits))
        .map_or(HostClass::Public, |(_, _, what)| HostClass::Refused(what))
}

fn in_v6(address: Ipv6Addr, network: [u16; 8], bits: u32) -> bool {
    let mask = if bits == 0 {
        0
    } else {
        u128::MAX << (128 - bits)
    };
    u128::from(address) & mask == u128::from(Ipv6Addr::from(network)) & mask
}

fn classify_v6(address: Ipv6Addr) -> HostClass {
    const REFUSED: [([u16; 8], u32, &str); 11] = [
        ([0, 0, 0, 0, 0, 0xffff, 0, 0], 96, "an IPv4-mapped address"),
        (
            [0, 0, 0, 0, 0, 0, 0, 0],
            96,
            "an IPv4-compatible or unspecified address",
        ),
        ([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96, "a NAT64 address"),
        ([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, "a NAT64 address"),
        ([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "a discard address"),
        (
            [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0],
            32,
            "a documentation address",
        ),
        ([0x2001, 0, 0, 0, 0, 0, 0, 0], 32, "a Teredo address"),
        ([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, "a 6to4 address"),
        ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "a unique-local address"),
        ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "a link-local address"),
        ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "a site-local address"),
    ];
    if address == Ipv6Addr::LOCALHOST {
        return HostClass::Loopback;
    }
    if in_v6(address, [0xff00, 0, 0, 0, 0, 0, 0, 0], 8) {
        return HostClass::Refused("a multicast address");
    }
    REFUSED
        .iter()
        .find(|(network, bits, _)| in_v6(address, *network, *bits))
        .map_or(HostClass::Public, |(_, _, what)| HostClass::Refused(what))
}

/// Why an origin may not name `host`, or `None`. Loopback passes only with `allow_loopback`
/// (the deployment's `ALLOW_LOOPBACK_HTTP`, for local tests against a stand-in API).
pub fn host_problem(host: &str, allow_loopback: bool) -> Option<String> {
    match classify(host) {
        HostClass::Public => None,
        HostClass::Loopback if allow_loopback => None,
        HostClass::Loopback => Some(format!(
            "host {host} is a loopback address, allowed only on a deployment that sets {}",
            crate::binding::ALLOW_LOOPBACK_HTTP
        )),
        HostClass::Refused(what) => Some(format!(
            "host {host} is {what}; connectors may only reach public hosts"
        )),
        HostClass::NonCanonicalIpv4 => Some(format!(
            "host {host} is read as an IPv4 address: write it as four decimal numbers (like 93.184.215.14), never as one number, hex or octal"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_forms_other_than_dotted_decimal() {
        for host in [
            "2130706433",
            "0x7f.0.0.1",
            "0x7f000001",
            "017700000001",
            "0177.0.0.1",
            "127.1",
            "127.0.1",
            "127.000.000.001",
            "1.2.3.04",
            "256.1.1.1",
            "1.2.3.4.5",
            "8.8.8.0x8",
            "example.123",
            "example.0x1f",
            "0x",
        ] {
            assert_eq!(classify(host), HostClass::NonCanonicalIpv4, "{host}");
        }
    }

    #[test]
    fn private_and_special_ipv4() {
        for host in ["127.0.0.1", "127.255.255.254", "localhost", "api.localhost"] {
            assert_eq!(classify(host), HostClass::Loopback, "{host}");
        }
        for host in [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "192.0.0.8",
            "198.18.0.1",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(matches!(classify(host), HostClass::Refused(_)), "{host}");
        }
        for host in [
            "93.184.215.14",
            "8.8.8.8",
            "172.15.255.255",
            "172.32.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "169.253.0.1",
            "1.1.1.1",
            "api.example.com",
            "0x7f.example.com",
            "10.example",
            "localhost.example",
        ] {
            assert_eq!(classify(host), HostClass::Public, "{host}");
        }
    }

    #[test]
    fn private_mapped_and_special_ipv6() {
        assert_eq!(classify("[::1]"), HostClass::Loopback);
        assert_eq!(classify("[0:0:0:0:0:0:0:1]"), HostClass::Loopback);
        for host in [
            "[::]",
            "[::ffff:127.0.0.1]",
            "[::ffff:7f00:1]",
            "[::ffff:10.0.0.1]",
            "[::ffff:8.8.8.8]",
            "[::127.0.0.1]",
            "[::7f00:1]",
            "[fc00::1]",
            "[fd12:3456:789a::1]",
            "[fe80::1]",
            "[febf::1]",
            "[fec0::1]",
            "[ff02::1]",
            "[64:ff9b::7f00:1]",
            "[2002:7f00:1::]",
            "[2001::1]",
            "[2001:db8::1]",
            "[100::1]",
            "[not:an:address::g]",
            "[1::2::3]",
        ] {
            assert!(matches!(classify(host), HostClass::Refused(_)), "{host}");
        }
        for host in [
            "[2606:4700::1111]",
            "[2a00:1450:4001::200e]",
            "[2001:4860::8888]",
        ] {
            assert_eq!(classify(host), HostClass::Public, "{host}");
        }
    }

    #[test]
    fn loopback_only_when_the_deployment_allows_it() {
        assert_eq!(host_problem("127.0.0.1", true), None);
        assert_eq!(host_problem("[::1]", true), None);
        assert_eq!(
            host_problem("127.0.0.1", false).unwrap(),
            "host 127.0.0.1 is a loopback address, allowed only on a deployment that sets ALLOW_LOOPBACK_HTTP"
        );
        // The flag never opens anything else.
        for host in [
            "10.0.0.1",
            "[::ffff:127.0.0.1]",
            "2130706433",
            "169.254.169.254",
        ] {
            assert!(host_problem(host, true).is_some(), "{host}");
        }
        assert_eq!(
            host_problem("0x7f.0.0.1", true).unwrap(),
            "host 0x7f.0.0.1 is read as an IPv4 address: write it as four decimal numbers (like 93.184.215.14), never as one number, hex or octal"
        );
    }
}
