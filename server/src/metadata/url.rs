//! `StoreUrl`: which provider a metadata-store URL names (`memory:<name>`, `zk:<hosts>[/chroot]`).

use crate::metadata::error::MetadataStoreError;
use crate::metadata::path;

/// A parsed metadata-store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoreUrl {
    /// `memory:<name>`: the in-process tree shared by every store opened with this name.
    Memory { name: String },
    /// `zk:<host:port>[,<host:port>...][/chroot]`: a ZooKeeper ensemble, optionally rooted.
    ZooKeeper {
        /// `host:port[,host:port...]`.
        hosts: String,
        /// The chroot (`/` when none).
        chroot: String,
    },
}

impl StoreUrl {
    /// Parses `url`; `memory://name` and `zk://hosts` are accepted too.
    pub(crate) fn parse(url: &str) -> Result<Self, MetadataStoreError> {
        let invalid = |reason: &str| MetadataStoreError::InvalidUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let (scheme, rest) = url
            .split_once(':')
            .ok_or_else(|| invalid("expected `memory:<name>` or `zk:<host:port>[/chroot]`"))?;
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        match scheme {
            "memory" => {
                if rest.is_empty() {
                    return Err(invalid("`memory:` needs a name"));
                }
                Ok(StoreUrl::Memory {
                    name: rest.to_owned(),
                })
            }
            "zk" | "zookeeper" => {
                let (hosts, chroot) = match rest.find('/') {
                    Some(index) => (&rest[..index], &rest[index..]),
                    None => (rest, "/"),
                };
                if hosts.is_empty() {
                    return Err(invalid("`zk:` needs at least one host:port"));
                }
                for host in hosts.split(',') {
                    let valid = host.rsplit_once(':').is_some_and(|(name, port)| {
                        !name.is_empty() && port.parse::<u16>().is_ok()
                    });
                    if !valid {
                        return Err(invalid("each ZooKeeper host is `host:port`"));
                    }
                }
                path::validate(chroot).map_err(|_| invalid("the chroot must be a valid path"))?;
                Ok(StoreUrl::ZooKeeper {
                    hosts: hosts.to_owned(),
                    chroot: chroot.to_owned(),
                })
            }
            _ => Err(invalid("unknown provider; expected `memory:` or `zk:`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_urls_name_a_shared_tree() {
        assert_eq!(
            StoreUrl::parse("memory:local").unwrap(),
            StoreUrl::Memory {
                name: "local".into()
            }
        );
        assert_eq!(
            StoreUrl::parse("memory://local").unwrap(),
            StoreUrl::Memory {
                name: "local".into()
            }
        );
        assert!(StoreUrl::parse("memory:").is_err());
    }

    #[test]
    fn zookeeper_urls_name_hosts_and_an_optional_chroot() {
        assert_eq!(
            StoreUrl::parse("zk:127.0.0.1:2181").unwrap(),
            StoreUrl::ZooKeeper {
                hosts: "127.0.0.1:2181".into(),
                chroot: "/".into()
            }
        );
        assert_eq!(
            StoreUrl::parse("zk://a:1,b:2/pulsar/test").unwrap(),
            StoreUrl::ZooKeeper {
                hosts: "a:1,b:2".into(),
                chroot: "/pulsar/test".into()
            }
        );
        for url in [
            "zk:",
            "zk:host",
            "zk:host:port",
            "zk:a:1/bad/",
            "etcd:x",
            "nothing",
        ] {
            assert!(
                matches!(
                    StoreUrl::parse(url),
                    Err(MetadataStoreError::InvalidUrl { .. })
                ),
                "{url}"
            );
        }
    }
}
