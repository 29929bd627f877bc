//! For tests (and anyone who wants a throwaway keyspace): which CQL node to use, and a keyspace
//! that is dropped when its guard is.
use super::{ScyllaOptions, ScyllaStore};

/// The CQL node named by `SCYLLA_URI` (`host:port[,host:port…]`), or `None` — said on stderr —
/// when there is none, so a test can skip. With `REQUIRE_SCYLLA=1` a missing node is a panic:
/// CI sets it, so the ScyllaDB tests can never be skipped there by accident.
pub fn nodes_from_env() -> Option<Vec<String>> {
    match std::env::var("SCYLLA_URI") {
        Ok(uri) if !uri.trim().is_empty() => Some(
            uri.split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect(),
        ),
        _ => {
            #[allow(clippy::panic)]
            if std::env::var("REQUIRE_SCYLLA").as_deref() == Ok("1") {
                panic!("REQUIRE_SCYLLA=1 but SCYLLA_URI is not set");
            }
            eprintln!(
                "SCYLLA_URI is not set: skipping (storage/cql-test-node/start.sh starts a node)"
            );
            None
        }
    }
}

/// A fresh keyspace on the node from the environment (`prefix` + random), single-replica, and
/// its guard; `None` when there is no node (see [`nodes_from_env`]).
pub fn throwaway_keyspace(prefix: &str) -> Option<(ScyllaOptions, DropKeyspace)> {
    let nodes = nodes_from_env()?;
    let name = format!("{prefix}_{}", crate::random_lower_alnum(12));
    let opts = ScyllaOptions::new(nodes, &name);
    Some((opts.clone(), DropKeyspace(opts)))
}

/// Drops its keyspace when dropped.
pub struct DropKeyspace(ScyllaOptions);

impl Drop for DropKeyspace {
    fn drop(&mut self) {
        let opts = self.0.clone();
        // Drop may run on a runtime's only thread: use a thread, a runtime and a connection of
        // its own.
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                let dropped = match ScyllaStore::session(&opts).await {
                    Ok(s) => s.drop_keyspace().await,
                    Err(e) => Err(e),
                };
                if let Err(e) = dropped {
                    eprintln!("could not drop keyspace {}: {e}", opts.keyspace);
                }
            })
        })
        .join();
    }
}
