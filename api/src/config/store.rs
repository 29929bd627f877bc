//! Where the data lives: the embedded SQLite file or a ScyllaDB cluster.
use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    Sqlite,
    Scylla,
}

/// The ScyllaDB backend (`store = "scylla"`); see README, "Running on ScyllaDB".
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScyllaConfig {
    /// Contact points, `host:port`, comma-separated (the driver discovers the other nodes).
    pub uri: String,
    pub keyspace: String,
    /// The keyspace's replication as a CQL map, used when `gatehouse migrate` creates it.
    pub replication: String,
    /// The datacenter this process runs in: its nodes are preferred, and `LOCAL_*`
    /// consistency levels count replicas there.
    pub local_datacenter: Option<String>,
    /// Reads and plain writes (`LOCAL_QUORUM`: a majority of the local replicas).
    pub consistency: String,
    /// Lightweight transactions (`LOCAL_SERIAL`, or `SERIAL` across datacenters).
    pub serial_consistency: String,
    /// One request's time limit, milliseconds.
    pub request_timeout_ms: u64,
    /// Connecting to a node, milliseconds.
    pub connect_timeout_ms: u64,
}

impl Default for ScyllaConfig {
    fn default() -> Self {
        Self {
            uri: String::new(),
            keyspace: "gatehouse".into(),
            replication: "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}".into(),
            local_datacenter: None,
            consistency: "LOCAL_QUORUM".into(),
            serial_consistency: "LOCAL_SERIAL".into(),
            request_timeout_ms: 5_000,
            connect_timeout_ms: 5_000,
        }
    }
}

impl ScyllaConfig {
    /// The backend's options, or what is wrong with them.
    pub fn options(&self) -> Result<storage::scylla::ScyllaOptions, ConfigError> {
        use storage::scylla::{consistency_named, serial_consistency_named, ScyllaOptions};
        let bad = |m: String| ConfigError::Invalid(m);
        let nodes: Vec<String> = self
            .uri
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if nodes.is_empty() {
            return Err(bad(
                "store = \"scylla\" needs scylla.uri (host:port[,host:port…])".into(),
            ));
        }
        if let Some(n) = nodes.iter().find(|n| !n.contains(':')) {
            return Err(bad(format!("scylla.uri: {n:?} is not host:port")));
        }
        let keyspace_ok = !self.keyspace.is_empty()
            && self.keyspace.len() <= 48
            && self.keyspace.starts_with(|c: char| c.is_ascii_alphabetic())
            && self
                .keyspace
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !keyspace_ok {
            return Err(bad(format!(
                "scylla.keyspace {:?}: a letter, then letters, digits or _ (48 at most)",
                self.keyspace
            )));
        }
        let r = self.replication.trim();
        if !(r.starts_with('{') && r.ends_with('}')) || r.contains(';') {
            return Err(bad(format!(
                "scylla.replication {:?} must be a CQL map, e.g. \
                 {{'class': 'NetworkTopologyStrategy', 'dc1': 3}}",
                self.replication
            )));
        }
        let mut opts = ScyllaOptions::new(nodes, &self.keyspace);
        opts.replication = r.to_owned();
        opts.local_datacenter = self.local_datacenter.clone().filter(|d| !d.is_empty());
        opts.consistency = consistency_named(&self.consistency)
            .ok_or_else(|| bad(format!("scylla.consistency {:?} unknown", self.consistency)))?;
        opts.serial_consistency =
            serial_consistency_named(&self.serial_consistency).ok_or_else(|| {
                bad(format!(
                    "scylla.serial_consistency {:?}: SERIAL or LOCAL_SERIAL",
                    self.serial_consistency
                ))
            })?;
        if self.request_timeout_ms == 0 || self.connect_timeout_ms == 0 {
            return Err(bad("scylla timeouts must be positive".into()));
        }
        opts.request_timeout = std::time::Duration::from_millis(self.request_timeout_ms);
        opts.connect_timeout = std::time::Duration::from_millis(self.connect_timeout_ms);
        Ok(opts)
    }
}
