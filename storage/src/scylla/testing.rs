//! For tests (and anyone who wants a throwaway keyspace): which CQL node to use, and a keyspace
//! that is dropped when its guard is.
use super::{ScyllaOptions, ScyllaStore};

/// The CQL node named by `SCYLLA_URI` (`host:port[,host:port…]`), or `None` — said on stderr —
/// when there is none, so a test can skip. With `REQUIRE_SCYLLA=1` a missing node is a panic:
/// CI sets it, so the ScyllaDB tests can never be skipped there by accident.
pub fn nodes_from_env() -> Option<Vec<String>> {
    nodes_named_by(
        "SCYLLA_URI",
        "REQUIRE_SCYLLA",
        "storage/cql-test-node/start.sh starts a node",
    )
}

/// The three-node cluster named by `CQL_CLUSTER_URI` (storage/cql-test-node/cluster.sh), as
/// [`nodes_from_env`] (`REQUIRE_CQL_CLUSTER=1` makes its absence a panic).
pub fn cluster_nodes_from_env() -> Option<Vec<String>> {
    nodes_named_by(
        "CQL_CLUSTER_URI",
        "REQUIRE_CQL_CLUSTER",
        "storage/cql-test-node/cluster.sh start starts one",
    )
}

fn nodes_named_by(var: &str, require: &str, hint: &str) -> Option<Vec<String>> {
    match std::env::var(var) {
        Ok(uri) if !uri.trim().is_empty() => Some(
            uri.split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect(),
        ),
        _ => {
            #[allow(clippy::panic)]
            if std::env::var(require).as_deref() == Ok("1") {
                panic!("{require}=1 but {var} is not set");
            }
            eprintln!("{var} is not set: skipping ({hint})");
            None
        }
    }
}

/// A fresh keyspace on the node from the environment (`prefix` + random), single-replica, and
/// its guard; `None` when there is no node (see [`nodes_from_env`]).
pub fn throwaway_keyspace(prefix: &str) -> Option<(ScyllaOptions, DropKeyspace)> {
    Some(throwaway_keyspace_on(nodes_from_env()?, prefix))
}

/// A fresh keyspace on `nodes` (`prefix` + random), single-replica (set `replication` before the
/// first connection for more), and its guard.
pub fn throwaway_keyspace_on(nodes: Vec<String>, prefix: &str) -> (ScyllaOptions, DropKeyspace) {
    let name = format!("{prefix}_{}", crate::random_lower_alnum(12));
    let opts = ScyllaOptions::new(nodes, &name);
    (opts.clone(), DropKeyspace(opts))
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
