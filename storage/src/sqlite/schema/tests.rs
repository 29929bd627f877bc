//! The migrations on files made by older schemas.
use super::*;
use crate::{AuditEvent, AuditQuery, AuditStore, StoreError};
use chrono::{TimeZone, Utc};

/// A file at schema 6 keeps its audit events through migrations 7 (the audit log without
/// the index on `id`) and 14 (its indexed events in a file of their own): listed in order,
/// filtered by user through its index, still refusing the same event twice, and purged by
/// time.
#[tokio::test]
async fn the_audit_log_survives_migration_7() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    // As the store's own connections do (the process's settings before any connection).
    super::super::configure_sqlite();
    {
        let mut c = Connection::open(&path).unwrap();
        let tx = c.transaction().unwrap();
        for sql in &MIGRATIONS[..6] {
            tx.execute_batch(sql).unwrap();
        }
        tx.execute_batch("PRAGMA user_version = 6").unwrap();
        for (i, user) in [(3, "u1"), (1, "u2"), (2, "u1")] {
            tx.execute(
                "INSERT INTO audit_events (id, at, action, outcome, user_id) \
                 VALUES (?1, ?2, 'user.sign-in', 'success', ?3)",
                rusqlite::params![format!("e{i}"), 1_000 * i, user],
            )
            .unwrap();
        }
        tx.commit().unwrap();
    }
    let store = super::super::SqliteStore::open(&path).await.unwrap();
    let all = |user: Option<&str>| {
        let mut q = AuditQuery::range(
            Utc.timestamp_millis_opt(0).unwrap(),
            Utc.timestamp_millis_opt(10_000).unwrap(),
            10,
        );
        q.oldest_first = true;
        q.user = user.map(|u| crate::UserId(u.into()));
        q
    };
    let ids = |page: crate::Page<AuditEvent>| -> Vec<String> {
        page.items.into_iter().map(|e| e.id).collect()
    };
    assert_eq!(
        ids(store.list_audit(&all(None)).await.unwrap()),
        ["e1", "e2", "e3"]
    );
    assert_eq!(
        ids(store.list_audit(&all(Some("u1"))).await.unwrap()),
        ["e2", "e3"]
    );
    let mut again = AuditEvent::new("user.sign-in", Utc.timestamp_millis_opt(2_000).unwrap());
    again.id = "e2".into();
    let r = store
        .append_audit(&again, std::time::Duration::from_secs(60))
        .await;
    assert!(matches!(r, Err(StoreError::Conflict(_))), "{r:?}");
    let purged = store
        .purge_audit(Utc.timestamp_millis_opt(2_500).unwrap())
        .await
        .unwrap();
    assert_eq!(purged, 2);
    assert_eq!(ids(store.list_audit(&all(None)).await.unwrap()), ["e3"]);
    // The indexed events live in the audit log's own file now (migration 14).
    let tables: i64 = Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'audit_events'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(tables, 0);
    let indexes: Vec<String> = {
        let c = Connection::open(super::super::audit::file_of(&path)).unwrap();
        let mut st = c
            .prepare("SELECT name FROM sqlite_master WHERE tbl_name = 'audit_events' AND type = 'index' ORDER BY name")
            .unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert_eq!(
        indexes,
        ["audit_actor", "audit_at", "audit_org", "audit_user"]
    );
}

/// Migration 14 on a file at schema 13 with events in both tables, whose previous try
/// crashed after copying part of them into the audit file: each event is there once, the
/// waiting ones still wait (and move), and the main file keeps no indexed table.
#[tokio::test]
async fn migration_14_moves_the_indexed_events_once_even_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    super::super::configure_sqlite();
    let insert = |c: &Connection, table: &str, i: i64| {
        c.execute(
            &format!(
                "INSERT INTO {table} (id, at, action, outcome, organization_id) \
                 VALUES (?1, ?2, 'member.added', 'success', 'o1')"
            ),
            rusqlite::params![format!("e{i}"), 1_000 * i],
        )
        .unwrap();
    };
    {
        let mut c = Connection::open(&path).unwrap();
        let tx = c.transaction().unwrap();
        for sql in &MIGRATIONS[..13] {
            tx.execute_batch(sql).unwrap();
        }
        tx.execute_batch("PRAGMA user_version = 13").unwrap();
        for i in 1..=4 {
            insert(&tx, "audit_events", i);
        }
        for i in 5..=6 {
            insert(&tx, "audit_recent", i);
        }
        tx.commit().unwrap();
        // The crashed try: two of the four copied into the audit file.
        let audit = Connection::open(super::super::audit::file_of(&path)).unwrap();
        audit
            .execute_batch(&AUDIT_FILE_SCHEMA.replace("audit.", "main."))
            .unwrap();
        for i in [2, 3] {
            insert(&audit, "audit_events", i);
        }
    }
    let store = super::super::SqliteStore::open(&path).await.unwrap();
    let mut q = AuditQuery::range(
        Utc.timestamp_millis_opt(0).unwrap(),
        Utc.timestamp_millis_opt(10_000).unwrap(),
        10,
    );
    q.oldest_first = true;
    q.organization = Some(crate::OrgId("o1".into()));
    let ids = |page: crate::Page<AuditEvent>| -> Vec<String> {
        page.items.into_iter().map(|e| e.id).collect()
    };
    let all = ["e1", "e2", "e3", "e4", "e5", "e6"];
    assert_eq!(ids(store.list_audit(&q).await.unwrap()), all);
    store
        .purge_audit(Utc.timestamp_millis_opt(0).unwrap())
        .await
        .unwrap();
    assert_eq!(ids(store.list_audit(&q).await.unwrap()), all);
    let count = |file: &std::path::Path, table: &str| -> i64 {
        Connection::open(file)
            .unwrap()
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(count(&path, "audit_recent"), 0);
    assert_eq!(
        count(&super::super::audit::file_of(&path), "audit_events"),
        6
    );
    assert_eq!(count(&path, "sqlite_master WHERE name = 'audit_events'"), 0);
}

/// Migration 15 on a file at schema 13 holding a delivery in the old form (its body in its
/// document): the body moves to its own column, read back the same; a settle keeps it.
#[tokio::test]
async fn migration_15_moves_a_deliverys_body_out_of_its_document() {
    use crate::{Webhook, WebhookDelivery, WebhookStore};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    super::super::configure_sqlite();
    let now = Utc.timestamp_millis_opt(1_700_000_000_000).unwrap();
    let w = Webhook::new(
        "w1".into(),
        "global".into(),
        "https://h".into(),
        vec![],
        "s".into(),
        now,
    );
    let body = r#"{"type":"user.created","data":{"name":"A \"B\""}}"#;
    let mut d = WebhookDelivery {
        id: "msg_1".into(),
        webhook_id: w.id.clone(),
        scope: w.scope.clone(),
        event_id: "e1".into(),
        event_type: "user.created".into(),
        body: body.into(),
        seq: 1,
        created_at: now,
        status: crate::DeliveryStatus::Pending,
        attempts: vec![],
        tries: 0,
        next_at: Some(now),
        holder: Some("p1".into()),
        lease_until: Some(now),
    };
    {
        let mut c = Connection::open(&path).unwrap();
        let tx = c.transaction().unwrap();
        for sql in &MIGRATIONS[..13] {
            tx.execute_batch(sql).unwrap();
        }
        tx.execute_batch("PRAGMA user_version = 13").unwrap();
        tx.execute(
            "INSERT INTO webhooks (id, scope, created_at, version, doc) VALUES ('w1', 'global', 0, 1, ?1)",
            [serde_json::to_string(&w).unwrap()],
        )
        .unwrap();
        tx.execute(
            "INSERT INTO webhook_deliveries (id, webhook_id, seq, created_at, status, next_at, holder, lease_until, doc) \
             VALUES ('msg_1', 'w1', 1, 0, 'pending', 0, 'p1', 0, ?1)",
            [serde_json::to_string(&d).unwrap()],
        )
        .unwrap();
        tx.commit().unwrap();
    }
    let store = super::super::SqliteStore::open(&path).await.unwrap();
    assert_eq!(
        store.get_delivery("msg_1").await.unwrap().unwrap().body,
        body
    );
    let doc: String = Connection::open(&path)
        .unwrap()
        .query_row("SELECT doc FROM webhook_deliveries", [], |r| r.get(0))
        .unwrap();
    assert!(!doc.contains("\"body\""), "{doc}");
    d.status = crate::DeliveryStatus::Succeeded;
    assert_eq!(store.settle_deliveries(&[d], "p1").await.unwrap(), [true]);
    let got = store.get_delivery("msg_1").await.unwrap().unwrap();
    assert_eq!(
        (got.body.as_str(), got.status),
        (body, crate::DeliveryStatus::Succeeded)
    );
}
