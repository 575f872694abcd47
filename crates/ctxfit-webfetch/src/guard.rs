//! The SSRF guard: which addresses a page may be fetched from.
//!
//! An agent chooses the URLs it fetches, and the text of earlier pages can steer that choice, so a URL is
//! untrusted input. Without a guard, `http://169.254.169.254/latest/meta-data/` hands cloud credentials to the
//! model, and `http://localhost:8080/admin` reaches services that trust the local network. The guard sits in
//! the HTTP client's resolver: every connection — the first and every redirect — is made only to addresses
//! that were checked, so a public name that resolves to a private address (DNS rebinding) is refused too.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// Which addresses may be connected to. The default refuses every address that is not public.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    /// Allow loopback, private, link-local and other non-public addresses (for fetching from a local network) —
    /// but not the cloud metadata services, which need `allow_metadata`.
    pub allow_private: bool,
    /// Allow the cloud metadata services (`169.254.169.254` and the like), which hand out credentials.
    pub allow_metadata: bool,
    /// Addresses allowed even though they are not public (a test server on 127.0.0.1, say).
    pub allowed: Vec<IpAddr>,
}

impl AddressPolicy {
    /// Why connecting to `ip` is refused, or `None` if it is allowed.
    pub fn refusal(&self, ip: IpAddr) -> Option<&'static str> {
        if self.allowed.contains(&ip) {
            return None;
        }
        let kind = non_public(ip)?;
        let allowed = if kind == METADATA {
            self.allow_metadata
        } else {
            self.allow_private
        };
        (!allowed).then_some(kind)
    }
}

/// How [`non_public`] names the cloud metadata services' addresses: AWS, GCP, Azure, OpenStack and Oracle
/// (`169.254.169.254`), AWS ECS task metadata (`169.254.170.2`), AWS over IPv6 (`fd00:ec2::254`) and Alibaba
/// Cloud (`100.100.100.200`), also inside IPv4-mapped and NAT64 IPv6 addresses.
pub const METADATA: &str = "a cloud metadata address";

const METADATA_V4: [Ipv4Addr; 3] = [
    Ipv4Addr::new(169, 254, 169, 254),
    Ipv4Addr::new(169, 254, 170, 2),
    Ipv4Addr::new(100, 100, 100, 200),
];

/// What kind of non-public address `ip` is, or `None` for a public address.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if METADATA_V4.contains(&ip) => METADATA,
        (0, _, _) => "an unspecified (\"this network\") address",
        (127, _, _) => "a loopback address",
        (10, _, _) => "a private address",
        (172, 16..=31, _) => "a private address",
        (192, 168, _) => "a private address",
        (169, 254, _) => "a link-local address",
        (100, 64..=127, _) => "a shared (carrier-grade NAT) address",
        (192, 0, 0) => "an IETF protocol address",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation address",
        (198, 18..=19, _) => "a benchmarking address",
        (224..=239, _, _) => "a multicast address",
        (240..=255, _, _) => "a reserved or broadcast address",
        _ => return None,
    })
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return non_public_v4(v4);
    }
    let s = ip.segments();
    Some(match s[0] {
        _ if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) => METADATA,
        _ if ip.is_unspecified() => "an unspecified address",
        _ if ip.is_loopback() => "a loopback address",
        // NAT64 (64:ff9b::/96) carries an IPv4 address: judge that
        0x64 if s[1] == 0xff9b && s[2..6] == [0; 4] => {
            let [_, _, _, _, _, _, hi, lo] = s;
            return non_public_v4(Ipv4Addr::new(
                (hi >> 8) as u8,
                hi as u8,
                (lo >> 8) as u8,
                lo as u8,
            ));
        }
        // IPv4-compatible (::a.b.c.d, deprecated but still routed by some stacks)
        0 if s[1..6] == [0; 5] => "an IPv4-compatible address",
        x if x & 0xfe00 == 0xfc00 => "a unique local (private) address",
        x if x & 0xffc0 == 0xfe80 => "a link-local address",
        x if x & 0xffc0 == 0xfec0 => "a site-local address",
        x if x & 0xff00 == 0xff00 => "a multicast address",
        0x2001 if s[1] == 0x0db8 => "a documentation address",
        _ => return None,
    })
}

/// A connection the guard refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused to connect to {host} ({ip}): {kind}; pages are fetched only from public addresses unless the caller allows others")]
pub struct Refused {
    pub host: String,
    pub ip: IpAddr,
    pub kind: &'static str,
}

/// The resolver the HTTP client connects through: the system resolver, then the policy on every address.
#[derive(Debug)]
pub(crate) struct GuardedResolver {
    pub(crate) policy: AddressPolicy,
}

impl Resolver for GuardedResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let addrs = DefaultResolver::default().resolve(uri, config, timeout)?;
        // refuse the name if any of its addresses is refused: the client may try them all
        for addr in addrs.iter() {
            if let Some(kind) = self.policy.refusal(addr.ip()) {
                return Err(ureq::Error::Other(Box::new(Refused {
                    host: uri.host().unwrap_or_default().to_owned(),
                    ip: addr.ip(),
                    kind,
                })));
            }
        }
        Ok(addrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_public_addresses_are_named_and_public_ones_pass() {
        let refused = [
            ("127.0.0.1", "a loopback address"),
            ("127.8.9.10", "a loopback address"),
            ("0.0.0.0", "an unspecified (\"this network\") address"),
            ("10.1.2.3", "a private address"),
            ("172.16.0.1", "a private address"),
            ("172.31.255.255", "a private address"),
            ("192.168.1.1", "a private address"),
            ("169.254.169.254", "a cloud metadata address"),
            ("169.254.1.1", "a link-local address"),
            ("100.64.0.1", "a shared (carrier-grade NAT) address"),
            ("224.0.0.1", "a multicast address"),
            ("255.255.255.255", "a reserved or broadcast address"),
            ("::1", "a loopback address"),
            ("::", "an unspecified address"),
            ("::ffff:127.0.0.1", "a loopback address"),
            ("::ffff:169.254.169.254", "a cloud metadata address"),
            ("64:ff9b::a9fe:a9fe", "a cloud metadata address"),
            ("::7f00:1", "an IPv4-compatible address"),
            ("fd00:ec2::254", "a cloud metadata address"),
            ("fd00:ec2::1", "a unique local (private) address"),
            ("fe80::1", "a link-local address"),
            ("ff02::1", "a multicast address"),
            ("2001:db8::1", "a documentation address"),
        ];
        for (ip, kind) in refused {
            assert_eq!(non_public(ip.parse().unwrap()), Some(kind), "{ip}");
        }
        for ip in [
            "93.184.215.14",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::6810:84e5",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert_eq!(non_public(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn the_policy_allows_what_the_caller_names() {
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let other: IpAddr = "127.0.0.2".parse().unwrap();
        let policy = AddressPolicy {
            allowed: vec![loopback],
            ..AddressPolicy::default()
        };
        assert_eq!(policy.refusal(loopback), None);
        assert_eq!(policy.refusal(other), Some("a loopback address"));
        let open = AddressPolicy {
            allow_private: true,
            ..AddressPolicy::default()
        };
        assert_eq!(open.refusal("10.0.0.1".parse().unwrap()), None);
        // the metadata services need their own allowance
        for ip in [
            "169.254.169.254",
            "169.254.170.2",
            "100.100.100.200",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(open.refusal(ip), Some("a cloud metadata address"), "{ip}");
            let metadata = AddressPolicy {
                allow_metadata: true,
                ..AddressPolicy::default()
            };
            assert_eq!(metadata.refusal(ip), None, "{ip}");
        }
        assert_eq!(
            AddressPolicy::default().refusal("10.0.0.1".parse().unwrap()),
            Some("a private address")
        );
    }
}
