//! The keyspace and its tables, created or migrated at start (`gatehouse migrate` runs the same).
//! `schema_version` records which migrations ran; a database written by a newer Gatehouse is
//! refused rather than written into.
//!
//! ScyllaDB creates keyspaces with tablets by default, and lightweight transactions (which every
//! claim here is) are not supported in tablet keyspaces on ScyllaDB 2025.1–2025.3: the keyspace
//! is created with tablets off there. Cassandra does not know the option, so it is only added
//! when the cluster reports the TABLETS feature.
use super::{int, text, Cols, ScyllaStore};
use crate::{StoreError, StoreResult};

/// The schema this build writes.
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// Tables, by the access path each serves. Tables written with lightweight transactions are
/// marked LWT; the others only ever get plain, idempotent writes.
const MIGRATIONS: &[&[&str]] = &[
    &[
    // LWT. The user row; `version` is compare-and-set by decisions on the user.
    "CREATE TABLE IF NOT EXISTS {ks}.users (id text PRIMARY KEY, email text, \
     email_verified boolean, name text, image text, role text, banned boolean, ban_reason text, \
     ban_expires bigint, created_at bigint, updated_at bigint, version bigint)",
    // LWT. Email claims (unique, lowercased).
    "CREATE TABLE IF NOT EXISTS {ks}.users_by_email (email text PRIMARY KEY, user_id text, \
     claimed_at bigint)",
    // LWT. A user's linked accounts.
    "CREATE TABLE IF NOT EXISTS {ks}.accounts_by_user (user_id text, provider_id text, \
     account_id text, id text, password text, access_token text, refresh_token text, \
     id_token text, access_token_expires_at bigint, refresh_token_expires_at bigint, \
     scope text, created_at bigint, updated_at bigint, \
     PRIMARY KEY (user_id, provider_id, account_id))",
    // LWT. (provider, account) claims.
    "CREATE TABLE IF NOT EXISTS {ks}.accounts_by_provider (provider_id text, account_id text, \
     user_id text, PRIMARY KEY ((provider_id, account_id)))",
    // LWT, TTL. Sessions by token.
    "CREATE TABLE IF NOT EXISTS {ks}.sessions (session_token text PRIMARY KEY, id text, user_id text, \
     expires_at bigint, ip_address text, user_agent text, created_at bigint, updated_at bigint, \
     active_organization_id text, active_team_id text, impersonated_by text) \
     WITH gc_grace_seconds = 86400",
    // TTL. A user's session tokens.
    "CREATE TABLE IF NOT EXISTS {ks}.sessions_by_user (user_id text, session_token text, \
     expires_at bigint, PRIMARY KEY (user_id, session_token)) WITH gc_grace_seconds = 86400",
    // LWT, TTL. Single-use values by identifier.
    "CREATE TABLE IF NOT EXISTS {ks}.verifications (identifier text PRIMARY KEY, id text, \
     value text, expires_at bigint, created_at bigint, updated_at bigint) \
     WITH gc_grace_seconds = 86400",
    // TTL. Single-use values by the value they point at (a user id).
    "CREATE TABLE IF NOT EXISTS {ks}.verifications_by_value (value text, identifier text, \
     PRIMARY KEY (value, identifier)) WITH gc_grace_seconds = 86400",
    // LWT. One partition per organization: static columns are the organization, clustering
    // rows (kind, key) its members (key: user id), invitations (id), teams (id), team members
    // (team id/user id) and roles (name).
    "CREATE TABLE IF NOT EXISTS {ks}.org_rows (org_id text, kind text, key text, \
     o_name text STATIC, o_slug text STATIC, o_logo text STATIC, o_metadata text STATIC, \
     o_created_at bigint STATIC, version bigint STATIC, member_count int STATIC, \
     owner_count int STATIC, roles_version bigint STATIC, \
     id text, user_id text, role text, team_id text, email text, status text, \
     inviter_id text, permission text, name text, expires_at bigint, created_at bigint, \
     updated_at bigint, PRIMARY KEY (org_id, kind, key))",
    // LWT. Slug claims.
    "CREATE TABLE IF NOT EXISTS {ks}.orgs_by_slug (slug text PRIMARY KEY, org_id text, claimed_at bigint)",
    // Lookups (plain writes; a lookup pointing at nothing reads as nothing).
    // Written before the membership it lists (so a concurrent count sees it), with the time.
    "CREATE TABLE IF NOT EXISTS {ks}.orgs_by_user (user_id text, org_id text, since bigint, \
     PRIMARY KEY (user_id, org_id))",
    "CREATE TABLE IF NOT EXISTS {ks}.invitations_by_id (id text PRIMARY KEY, org_id text)",
    "CREATE TABLE IF NOT EXISTS {ks}.invitations_by_email (email text, id text, org_id text, \
     PRIMARY KEY (email, id))",
    "CREATE TABLE IF NOT EXISTS {ks}.teams_by_id (id text PRIMARY KEY, org_id text)",
    "CREATE TABLE IF NOT EXISTS {ks}.team_members_by_user (user_id text, team_id text, \
     org_id text, PRIMARY KEY (user_id, team_id))",
    // Signing keys: few, one partition.
    "CREATE TABLE IF NOT EXISTS {ks}.key_pairs (bucket text, id text, public_key text, \
     private_key text, created_at bigint, PRIMARY KEY (bucket, id))",
    ],
    // 2: the audit log, written with a TTL (the retention) to one table per access path, each
    // event in full: every event by hour, and the events of a user (as actor or subject) and
    // of an organization by day. Time-window compaction: rows expire a window at a time.
    &[
        "CREATE TABLE IF NOT EXISTS {ks}.audit_by_time (bucket text, at bigint, id text, \
         AUDIT_COLUMNS, PRIMARY KEY (bucket, at, id)) AUDIT_OPTIONS",
        "CREATE TABLE IF NOT EXISTS {ks}.audit_by_user (key text, bucket text, at bigint, \
         id text, AUDIT_COLUMNS, PRIMARY KEY ((key, bucket), at, id)) AUDIT_OPTIONS",
        "CREATE TABLE IF NOT EXISTS {ks}.audit_by_org (key text, bucket text, at bigint, \
         id text, AUDIT_COLUMNS, PRIMARY KEY ((key, bucket), at, id)) AUDIT_OPTIONS",
    ],
    // 3: rate-limit hits shared by every process (`rate_limit.storage = "store"`): a
    // partition per key (its SHA-256) and clock-aligned window, a row per hit, each with a TTL
    // to its window's end; a window is read up to the limit's cap, never in whole.
    &[
        "CREATE TABLE IF NOT EXISTS {ks}.rate_limit_hits (key text, slot bigint, id text, \
         PRIMARY KEY ((key, slot), id)) WITH compaction = \
         {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'HOURS', \
         'compaction_window_size': 1} AND gc_grace_seconds = 3600",
    ],
    // 4: the event stream (see `stream.rs`): a row per decision, in a partition per shard and
    // ten minutes, kept a week; each consumer's lease and progress per shard (LWT); and on
    // the versioned rows, which decision made each version (kept a day, written in the same
    // conditional batch as the version).
    &[
        "CREATE TABLE IF NOT EXISTS {ks}.event_log (shard int, bucket bigint, at bigint, \
         id text, state text, probe text, events text, PRIMARY KEY ((shard, bucket), at, id)) \
         WITH default_time_to_live = 604800 AND compaction = \
         {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'HOURS', \
         'compaction_window_size': 6} AND gc_grace_seconds = 3600",
        "CREATE TABLE IF NOT EXISTS {ks}.event_consumers (consumer text, shard int, \
         holder text, lease_until bigint, position text, PRIMARY KEY (consumer, shard))",
        "ALTER TABLE {ks}.users ADD decisions map<bigint, text>",
        "ALTER TABLE {ks}.org_rows ADD decisions map<bigint, text> STATIC",
    ],
    // 5: the two-factor plugin: whether a user's second factor is on (on the user row, written
    // with its version), and the factor (LWT on its own version, which decision made each
    // version kept as on the user row).
    &[
        "ALTER TABLE {ks}.users ADD two_factor_enabled boolean",
        "CREATE TABLE IF NOT EXISTS {ks}.two_factors (user_id text PRIMARY KEY, secret text, \
         backup_codes text, last_step bigint, created_at bigint, updated_at bigint, \
         version bigint, decisions map<bigint, text>)",
    ],
    // 6: the passkey plugin: a row per credential (LWT on it: a credential is registered
    // once; which decision made each version kept as on the user row), and the user's index.
    &[
        "CREATE TABLE IF NOT EXISTS {ks}.passkeys (credential_id text PRIMARY KEY, id text, \
         user_id text, name text, public_key text, credential text, counter bigint, \
         device_type text, backed_up boolean, transports text, aaguid text, created_at bigint, \
         updated_at bigint, last_used_at bigint, version bigint, decisions map<bigint, text>)",
        "CREATE TABLE IF NOT EXISTS {ks}.passkeys_by_user (user_id text, credential_id text, \
         PRIMARY KEY (user_id, credential_id))",
    ],
    // 7: the api-key plugin: a row per key (LWT on its version: uses and changes are
    // compare-and-set; which decision made each version kept), found by the hash of the key,
    // listed by what owns it, removed with its maker.
    &[
        "CREATE TABLE IF NOT EXISTS {ks}.api_keys (id text PRIMARY KEY, config_id text, \
         name text, start text, prefix text, key_hash text, user_id text, \
         organization_id text, enabled boolean, expires_at bigint, created_at bigint, \
         updated_at bigint, last_request bigint, request_count bigint, remaining bigint, \
         refill_amount bigint, refill_interval bigint, last_refill_at bigint, \
         rate_limit_enabled boolean, rate_limit_time_window bigint, rate_limit_max bigint, \
         permissions text, metadata text, version bigint, decisions map<bigint, text>)",
        "CREATE TABLE IF NOT EXISTS {ks}.api_keys_by_hash (key_hash text PRIMARY KEY, id text)",
        "CREATE TABLE IF NOT EXISTS {ks}.api_keys_by_reference (reference_id text, id text, \
         PRIMARY KEY (reference_id, id))",
        "CREATE TABLE IF NOT EXISTS {ks}.api_keys_by_user (user_id text, id text, \
         PRIMARY KEY (user_id, id))",
    ],
    // 8: webhooks: an endpoint's row (LWT on its version; which decision made each version
    // kept) listed by scope; deliveries by endpoint, newest first, and by id (which also makes
    // a delivery stored once), both expiring; the pending ones in a few due partitions with
    // their lease (LWT on holder and lease).
    &[
        "CREATE TABLE IF NOT EXISTS {ks}.webhooks (id text PRIMARY KEY, scope text, \
         version bigint, doc text, decisions map<bigint, text>)",
        "CREATE TABLE IF NOT EXISTS {ks}.webhooks_by_scope (scope text, id text, \
         PRIMARY KEY (scope, id))",
        "CREATE TABLE IF NOT EXISTS {ks}.webhook_deliveries (webhook_id text, seq bigint, \
         id text, doc text, PRIMARY KEY (webhook_id, seq, id)) \
         WITH CLUSTERING ORDER BY (seq DESC, id ASC)",
        "CREATE TABLE IF NOT EXISTS {ks}.webhook_delivery_ids (id text PRIMARY KEY, \
         webhook_id text, seq bigint)",
        "CREATE TABLE IF NOT EXISTS {ks}.webhook_due (shard int, id text, webhook_id text, \
         seq bigint, created_at bigint, next_at bigint, holder text, lease_until bigint, \
         PRIMARY KEY (shard, id))",
    ],
];

/// The columns of an audit event besides its place (`at`, `id`).
const AUDIT_COLUMNS: &str = "action text, outcome text, reason text, actor_id text, \
     user_id text, organization_id text, target text, ip_address text, user_agent text, \
     request_id text, details text";
const AUDIT_OPTIONS: &str = "WITH CLUSTERING ORDER BY (at DESC, id DESC) \
     AND compaction = {'class': 'TimeWindowCompactionStrategy', \
     'compaction_window_unit': 'DAYS', 'compaction_window_size': 1} \
     AND gc_grace_seconds = 86400";

pub(super) fn newer(ks: &str, at: i32) -> StoreError {
    StoreError::Internal(format!(
        "the keyspace {ks} holds schema version {at}, newer than this Gatehouse's \
         {SCHEMA_VERSION}: refusing to use it (upgrade Gatehouse)"
    ))
}

/// The version recorded in the keyspace (0: none yet).
pub(super) async fn current(store: &ScyllaStore) -> StoreResult<i32> {
    let exists = store
        .row(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? \
             AND table_name = 'schema_version'",
            vec![text(&store.ks)],
        )
        .await?
        .is_some();
    if !exists {
        return Ok(0);
    }
    Ok(store
        .row(
            &format!(
                "SELECT version FROM {}.schema_version WHERE id = ?",
                store.ks
            ),
            vec![text("gatehouse")],
        )
        .await?
        .and_then(|r| Cols(&r).obig(0))
        .unwrap_or(0) as i32)
}

/// The replicas `replication` asks of datacenter `dc`: its own entry, else the
/// `replication_factor` every datacenter gets (`None`: the map names neither).
pub(crate) fn replicas_asked(replication: &str, dc: &str) -> Option<u32> {
    let entries: Vec<(String, String)> = replication
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .split(',')
        .filter_map(|e| {
            let (k, v) = e.split_once(':')?;
            let unquote = |x: &str| x.trim().trim_matches('\'').trim_matches('"').to_owned();
            Some((unquote(k), unquote(v)))
        })
        .collect();
    let of = |key: &str| {
        entries
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.parse().ok())
    };
    of(dc).or_else(|| of("replication_factor"))
}

/// Refuses to create a keyspace whose replication asks a datacenter for more replicas than it
/// has nodes: every quorum read and write would then fail (the server would stop at its first
/// request). Says what to set instead.
async fn check_replication(store: &ScyllaStore, replication: &str) -> StoreResult<()> {
    let mut nodes: std::collections::BTreeMap<String, u32> = Default::default();
    for query in [
        "SELECT data_center FROM system.local",
        "SELECT data_center FROM system.peers",
    ] {
        for r in store.rows(query, vec![]).await? {
            if let Some(dc) = Cols(&r).otext(0) {
                *nodes.entry(dc).or_default() += 1;
            }
        }
    }
    for (dc, n) in &nodes {
        if let Some(asked) = replicas_asked(replication, dc) {
            if asked > *n {
                return Err(StoreError::Internal(format!(
                    "scylla.replication asks datacenter {dc:?} for {asked} replicas, but it has \
                     {n} node(s): quorum reads and writes could never succeed. Set \
                     scylla.replication = \"{{'class': 'NetworkTopologyStrategy', '{dc}': {n}}}\" \
                     (GATEHOUSE_SCYLLA__REPLICATION), or add nodes"
                )));
            }
        }
    }
    Ok(())
}

/// Creates the keyspace if needed and applies the migrations this database has not had.
pub(super) async fn migrate(store: &ScyllaStore, replication: &str) -> StoreResult<()> {
    let keyspace_exists = store
        .row(
            "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?",
            vec![text(&store.ks)],
        )
        .await?
        .is_some();
    if !keyspace_exists {
        check_replication(store, replication).await?;
    }
    let tablets = store
        .row(
            "SELECT supported_features FROM system.local WHERE key = 'local'",
            vec![],
        )
        .await
        .ok()
        .flatten()
        .and_then(|r| Cols(&r).otext(0))
        .is_some_and(|f| f.split(',').any(|x| x.trim() == "TABLETS"));
    let mut ddl = format!(
        "CREATE KEYSPACE IF NOT EXISTS {} WITH replication = {replication}",
        store.ks
    );
    if tablets {
        // ScyllaDB: claims are lightweight transactions, which need vnode keyspaces.
        ddl.push_str(" AND tablets = {'enabled': false}");
    }
    store.ddl(&ddl).await?;
    store
        .ddl(&format!(
            "CREATE TABLE IF NOT EXISTS {}.schema_version (id text PRIMARY KEY, version int)",
            store.ks
        ))
        .await?;
    let current = current(store).await?;
    if current > SCHEMA_VERSION {
        return Err(newer(&store.ks, current));
    }
    for (i, statements) in MIGRATIONS.iter().enumerate().skip(current.max(0) as usize) {
        for s in *statements {
            let ddl = s
                .replace("{ks}", &store.ks)
                .replace("AUDIT_COLUMNS", AUDIT_COLUMNS)
                .replace("AUDIT_OPTIONS", AUDIT_OPTIONS);
            match store.ddl(&ddl).await {
                // A migration that stopped half-way runs again: a column it added is there.
                Err(StoreError::Unavailable(m))
                    if ddl.starts_with("ALTER TABLE") && already_there(&m) => {}
                other => other?,
            }
        }
        store
            .exec(
                &format!(
                    "INSERT INTO {}.schema_version (id, version) VALUES (?, ?)",
                    store.ks
                ),
                vec![text("gatehouse"), int(i as i32 + 1)],
            )
            .await?;
        tracing::info!(migration = i + 1, keyspace = %store.ks, "applied CQL schema migration");
    }
    Ok(())
}

/// Whether a schema error says the column to add exists (Cassandra's and ScyllaDB's words).
fn already_there(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("already exist") || m.contains("conflicts with an existing column")
}

#[cfg(test)]
mod tests {
    use super::replicas_asked;

    #[test]
    fn the_replicas_a_replication_map_asks_of_a_datacenter() {
        let default = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}";
        assert_eq!(replicas_asked(default, "datacenter1"), Some(3));
        let per_dc = "{'class': 'NetworkTopologyStrategy', 'dc1': 1, 'dc2': 3}";
        assert_eq!(replicas_asked(per_dc, "dc1"), Some(1));
        assert_eq!(replicas_asked(per_dc, "dc2"), Some(3));
        assert_eq!(replicas_asked(per_dc, "dc3"), None);
        let simple = "{'class': 'SimpleStrategy', 'replication_factor': 1}";
        assert_eq!(replicas_asked(simple, "anything"), Some(1));
    }
}
