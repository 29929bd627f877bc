//! The storage contract on the ScyllaDB backend, against a real CQL node: `SCYLLA_URI`
//! (`host:port[,host:port…]`) names it; `storage/cql-test-node/start.sh` starts one (Apache
//! Cassandra 5, which `.ci/run` starts before the tests). Each test gets its own keyspace.
//! Without `SCYLLA_URI` the tests say so and pass, unless `REQUIRE_SCYLLA=1` (CI sets it).
mod contract;

use std::sync::Arc;
use storage::scylla::testing::{throwaway_keyspace, DropKeyspace};
use storage::scylla::{ScyllaOptions, ScyllaStore};

/// A store on a keyspace of its own, migrated, dropped with the guard.
async fn migrated(opts: &ScyllaOptions) -> ScyllaStore {
    ScyllaStore::migrate(opts).await.unwrap()
}

async fn fresh() -> Option<(contract::S, DropKeyspace)> {
    let (opts, guard) = throwaway_keyspace("gh_test")?;
    Some((Arc::new(migrated(&opts).await), guard))
}

contract_tests!(fresh);

#[tokio::test]
async fn servers_connect_only_to_a_migrated_keyspace_and_keep_its_data() {
    use storage::UserStore;
    let Some((opts, _drop)) = throwaway_keyspace("gh_test") else {
        return;
    };
    let err = ScyllaStore::connect(&opts)
        .await
        .err()
        .expect("not migrated");
    assert!(err.to_string().contains("gatehouse migrate"), "{err}");
    let u = contract::user("keep@example.com");
    {
        let s = ScyllaStore::migrate(&opts).await.unwrap();
        s.create_user(&u, None, &[]).await.unwrap();
    }
    // Migrating again changes nothing; connecting sees the data.
    migrated(&opts).await;
    let s = ScyllaStore::connect(&opts).await.unwrap();
    assert_eq!(s.get_user(&u.id).await.unwrap(), Some(u));
    assert_eq!(
        s.schema_version().await.unwrap(),
        storage::scylla::SCHEMA_VERSION
    );
}

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let Some((opts, _drop)) = throwaway_keyspace("gh_test") else {
        return;
    };
    let ks = opts.keyspace.clone();
    migrated(&opts).await;
    // A newer Gatehouse migrated this keyspace further.
    let raw = scylla::client::session_builder::SessionBuilder::new()
        .known_nodes(&opts.nodes)
        .build()
        .await
        .unwrap();
    raw.query_unpaged(
        format!("UPDATE {ks}.schema_version SET version = ? WHERE id = 'gatehouse'"),
        (storage::scylla::SCHEMA_VERSION + 1,),
    )
    .await
    .unwrap();
    for err in [
        ScyllaStore::connect(&opts).await.err().expect("refused"),
        ScyllaStore::migrate(&opts).await.err().expect("refused"),
    ] {
        assert!(err.to_string().contains("newer"), "{err}");
    }
}

/// A keyspace asking more replicas than the datacenter has nodes (the default 3 on a one-node
/// cluster) is not made: every quorum request would fail later. The error says what to set.
#[tokio::test]
async fn more_replicas_than_nodes_are_refused_with_what_to_set() {
    let Some((mut opts, _drop)) = throwaway_keyspace("gh_test") else {
        return;
    };
    opts.replication = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}".into();
    let err = ScyllaStore::migrate(&opts).await.err().expect("refused");
    let text = err.to_string();
    assert!(text.contains("scylla.replication"), "{text}");
    assert!(text.contains("1 node"), "{text}");
    // What it says to set works.
    let dc = text
        .split('"')
        .nth(1)
        .expect("the datacenter's name")
        .to_owned();
    opts.replication = format!("{{'class': 'NetworkTopologyStrategy', '{dc}': 1}}");
    migrated(&opts).await;
}

#[tokio::test]
async fn an_unreachable_cluster_is_unavailable_not_a_panic() {
    let mut opts = ScyllaOptions::new(vec!["127.0.0.1:1".into()], "gh_none");
    opts.connect_timeout = std::time::Duration::from_millis(500);
    let err = ScyllaStore::connect(&opts)
        .await
        .err()
        .expect("cannot connect");
    assert!(matches!(err, storage::StoreError::Unavailable(_)), "{err}");
}

#[tokio::test]
async fn audit_events_expire_with_their_retention() {
    use storage::{AuditEvent, AuditQuery};
    let Some((s, _drop)) = fresh().await else {
        return;
    };
    // Stored to the millisecond.
    let now =
        chrono::DateTime::from_timestamp_millis(chrono::Utc::now().timestamp_millis()).unwrap();
    let user = storage::UserId::generate();
    let mut e = AuditEvent::new("user.sign-in", now);
    e.actor_id = Some(user.clone());
    e.user_id = Some(user.clone());
    e.organization_id = Some(storage::OrgId::generate());
    s.append_audit(&e, std::time::Duration::from_secs(1))
        .await
        .unwrap();
    let range = AuditQuery::range(
        now - chrono::Duration::hours(1),
        now + chrono::Duration::hours(1),
        10,
    );
    let by_user = AuditQuery {
        user: Some(user),
        ..range.clone()
    };
    assert_eq!(s.list_audit(&by_user).await.unwrap().items, vec![e]);
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    assert!(s.list_audit(&range).await.unwrap().items.is_empty());
    assert!(s.list_audit(&by_user).await.unwrap().items.is_empty());
}
