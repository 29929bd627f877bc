//! Webhooks: endpoints listed by scope and changed by compare-and-set; deliveries stored once,
//! leased to one holder at a time, settled only by their holder, listed newest first.
use super::*;

fn hook(scope: &str, created: chrono::DateTime<Utc>) -> Webhook {
    let mut w = Webhook::new(
        random_string(16),
        scope.into(),
        "https://hooks.example.com/in".into(),
        vec!["member.*".into()],
        "sealed".into(),
        created,
    );
    w.description = Some("crm".into());
    w
}

fn delivery(w: &Webhook, event: &str, seq: i64) -> WebhookDelivery {
    WebhookDelivery {
        id: WebhookDelivery::id_for(
            event,
            chrono::DateTime::from_timestamp_millis(1_700_000_000_000 + seq).unwrap(),
            &w.id,
        ),
        webhook_id: w.id.clone(),
        scope: w.scope.clone(),
        event_id: event.into(),
        event_type: "member.added".into(),
        body: format!(r#"{{"type":"member.added","n":{seq}}}"#),
        seq,
        created_at: now(),
        status: DeliveryStatus::Pending,
        attempts: vec![],
        tries: 0,
        next_at: Some(now() - Duration::seconds(1)),
        holder: None,
        lease_until: None,
    }
}

async fn settle(s: &S, d: &WebhookDelivery, holder: &str) -> bool {
    s.settle_deliveries(std::slice::from_ref(d), holder)
        .await
        .unwrap()[0]
}

pub async fn webhooks_are_listed_by_scope_changed_by_version_and_go(s: S) {
    let t = now();
    let a = hook("org:wh1", t);
    let b = hook("org:wh1", t + Duration::milliseconds(1));
    let g = hook(GLOBAL_SCOPE, t);
    let agg = "org:wh1";
    s.create_webhook(&a, &[domain(agg, "webhook.created", 1)])
        .await
        .unwrap();
    s.create_webhook(&b, &[]).await.unwrap();
    s.create_webhook(&g, &[]).await.unwrap();
    let r = s
        .create_webhook(&a, &[domain(agg, "webhook.again", 2)])
        .await;
    assert!(matches!(r, Err(StoreError::Conflict(_))), "{r:?}");
    assert_eq!(s.get_webhook(&a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(s.get_webhook("nope").await.unwrap(), None);
    assert_eq!(
        s.list_webhooks("org:wh1").await.unwrap(),
        vec![a.clone(), b.clone()]
    );
    assert_eq!(
        s.list_webhooks(GLOBAL_SCOPE).await.unwrap(),
        vec![g.clone()]
    );
    assert!(s.list_webhooks("org:other").await.unwrap().is_empty());

    let mut next = a.clone();
    next.enabled = false;
    next.version = 2;
    let r = s
        .update_webhook(&next, 5, &[domain(agg, "webhook.stale", 3)])
        .await;
    assert!(
        matches!(r, Err(StoreError::ConcurrentModification)),
        "{r:?}"
    );
    s.update_webhook(&next, 1, &[domain(agg, "webhook.updated", 4)])
        .await
        .unwrap();
    assert_eq!(s.get_webhook(&a.id).await.unwrap(), Some(next.clone()));

    // Eight writers on one version: one wins.
    let writes = (0..8).map(|i| {
        let (s, mut w) = (s.clone(), next.clone());
        w.version = 3;
        w.description = Some(format!("w{i}"));
        async move { s.update_webhook(&w, 2, &[]).await }
    });
    let results = join_all(writes).await;
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );

    s.enqueue_deliveries(&[delivery(&a, "e1", 1)])
        .await
        .unwrap();
    assert!(s
        .delete_webhook(&a.id, &[domain(agg, "webhook.deleted", 5)])
        .await
        .unwrap());
    assert!(!s
        .delete_webhook(&a.id, &[domain(agg, "webhook.gone", 6)])
        .await
        .unwrap());
    assert_eq!(s.list_webhooks("org:wh1").await.unwrap(), vec![b.clone()]);
    assert!(s.list_deliveries(&a.id, None, 10).await.unwrap().is_empty());
    let r = s.update_webhook(&next, 3, &[]).await;
    assert!(matches!(r, Err(StoreError::NotFound)), "{r:?}");
    let seen: Vec<String> = names(&all_of(&s, Topic::Domain).await)
        .into_iter()
        .filter(|n| n.starts_with("webhook."))
        .collect();
    assert_eq!(
        seen,
        ["webhook.created", "webhook.updated", "webhook.deleted"]
    );
}

pub async fn deliveries_are_stored_once_leased_settled_and_listed(s: S) {
    let w = hook("org:wh2", now());
    s.create_webhook(&w, &[]).await.unwrap();
    let (d1, d2, d3) = (
        delivery(&w, "e1", 10),
        delivery(&w, "e2", 20),
        delivery(&w, "e3", 30),
    );
    assert_eq!(
        s.enqueue_deliveries(&[d1.clone(), d2.clone()])
            .await
            .unwrap(),
        [true, true]
    );
    // Made again (a consumer read its events twice): stored once.
    assert_eq!(
        s.enqueue_deliveries(&[d1.clone(), d3.clone()])
            .await
            .unwrap(),
        [false, true]
    );
    // For an endpoint that is gone: not stored.
    let gone = hook("org:wh2", now());
    assert_eq!(
        s.enqueue_deliveries(&[delivery(&gone, "e1", 5)])
            .await
            .unwrap(),
        [false]
    );
    let oldest = s.oldest_pending_delivery().await.unwrap().unwrap();
    assert!((oldest - d1.created_at).num_seconds().abs() <= 1);

    let t = now();
    let lease = t + Duration::seconds(30);
    let got = s.claim_deliveries("p1", t, lease, 2).await.unwrap();
    let ids: Vec<&str> = got.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, [d1.id.as_str(), d2.id.as_str()], "oldest first");
    assert!(got.iter().all(|d| d.holder.as_deref() == Some("p1")));
    // Another process sees the endpoint busy: nothing for it, not even the third.
    assert!(s
        .claim_deliveries("p2", t, lease, 10)
        .await
        .unwrap()
        .is_empty());

    // The holder settles: a success, and a retry in the future.
    let mut ok = got[0].clone();
    ok.status = DeliveryStatus::Succeeded;
    ok.next_at = None;
    ok.push_attempt(Attempt {
        at: t,
        status_code: Some(200),
        error: None,
        duration_ms: 12,
    });
    assert!(!settle(&s, &ok, "p2").await, "not p2's lease");
    assert!(settle(&s, &ok, "p1").await);
    let mut later = got[1].clone();
    later.next_at = Some(t + Duration::minutes(5));
    later.push_attempt(Attempt {
        at: t,
        status_code: None,
        error: Some("timed out".into()),
        duration_ms: 10_000,
    });
    assert!(settle(&s, &later, "p1").await);
    let read = s.get_delivery(&ok.id).await.unwrap().unwrap();
    assert_eq!(read.status, DeliveryStatus::Succeeded);
    assert_eq!(read.attempts.len(), 1);
    assert_eq!(read.body, d1.body);

    // Free again: p2 takes the third (the second waits for its time).
    let got = s.claim_deliveries("p2", t, lease, 10).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].id, d3.id);
    // A lease that ran out is taken over.
    let after = lease + Duration::seconds(1);
    let took = s
        .claim_deliveries("p3", after, after + Duration::seconds(30), 10)
        .await
        .unwrap();
    assert_eq!(took.len(), 1);
    assert_eq!(took[0].id, d3.id);
    assert!(!settle(&s, &got[0], "p2").await, "lease lost");

    let list = s.list_deliveries(&w.id, None, 2).await.unwrap();
    let seqs: Vec<i64> = list.iter().map(|d| d.seq).collect();
    assert_eq!(seqs, [30, 20], "newest first");
    let rest = s.list_deliveries(&w.id, Some(20), 10).await.unwrap();
    assert_eq!(rest.iter().map(|d| d.seq).collect::<Vec<_>>(), [10]);

    // Redeliver: a finished one only, once.
    assert!(!s.redeliver(&d3.id, t).await.unwrap(), "still pending");
    assert!(s.redeliver(&d1.id, t).await.unwrap());
    assert!(!s.redeliver(&d1.id, t).await.unwrap());
    assert!(!s.redeliver("msg_none", t).await.unwrap());
    let again = s.get_delivery(&d1.id).await.unwrap().unwrap();
    assert_eq!(again.status, DeliveryStatus::Pending);
    assert_eq!(again.attempts.len(), 1, "its attempts stay");
}

/// Eight processes claim one backlog at once: each delivery goes to one of them.
pub async fn concurrent_claims_lease_each_delivery_once(s: S) {
    let mut all = Vec::new();
    for i in 0..4 {
        let w = hook(&format!("org:wh3-{i}"), now());
        s.create_webhook(&w, &[]).await.unwrap();
        for e in 0..12 {
            all.push(delivery(&w, &format!("e{e}"), e));
        }
    }
    // More than one store writes at once (ScyllaDB: 32).
    assert_eq!(s.enqueue_deliveries(&all).await.unwrap(), vec![true; 48]);
    let t = now();
    let claims = (0..8).map(|i| {
        let s = s.clone();
        async move {
            s.claim_deliveries(&format!("p{i}"), t, t + Duration::seconds(30), 100)
                .await
                .unwrap()
        }
    });
    let got: Vec<String> = join_all(claims)
        .await
        .into_iter()
        .flatten()
        .map(|d| d.id)
        .collect();
    let mut unique = got.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), got.len(), "a delivery leased twice: {got:?}");
    assert!(!got.is_empty());
}

/// A delivery stored with its maker's lease (sent at once by the process that made it) is
/// that process's until the lease ends: others do not take it, its maker settles it.
pub async fn deliveries_made_leased_are_their_makers(s: S) {
    let w = hook("org:wh4", now());
    s.create_webhook(&w, &[]).await.unwrap();
    let t = now();
    let mut d = delivery(&w, "e1", 1);
    d.holder = Some("maker".into());
    d.lease_until = Some(t + Duration::seconds(30));
    assert_eq!(s.enqueue_deliveries(&[d.clone()]).await.unwrap(), [true]);
    let other = s
        .claim_deliveries("other", t, t + Duration::seconds(30), 10)
        .await
        .unwrap();
    assert!(other.is_empty(), "{other:?}");
    // Unsettled when its lease ends: another process takes it.
    let later = t + Duration::seconds(31);
    let taken = s
        .claim_deliveries("other", later, later + Duration::seconds(30), 10)
        .await
        .unwrap();
    assert_eq!(taken.len(), 1);
    assert!(!settle(&s, &d, "maker").await, "its lease is gone");
    let mut done = taken[0].clone();
    done.status = DeliveryStatus::Succeeded;
    assert!(settle(&s, &done, "other").await);
}

/// A delivery stored after its first try (the maker sent it before storing it): stored as it
/// ended, no holder's to take — succeeded and failed ones not due, one waiting for a retry due
/// at its time; a redelivery of the succeeded one makes it due again; made again, stored once.
pub async fn deliveries_stored_after_their_first_try(s: S) {
    let w = hook("org:wh5", now());
    s.create_webhook(&w, &[]).await.unwrap();
    let t = now();
    let tried = |event: &str, seq: i64, status: DeliveryStatus, next: Option<i64>| {
        let mut d = delivery(&w, event, seq);
        d.status = status;
        d.tries = u32::from(next.is_some() || status == DeliveryStatus::Failed);
        d.next_at = next.map(|secs| t + Duration::seconds(secs));
        d.push_attempt(Attempt {
            at: t,
            status_code: Some(if status == DeliveryStatus::Succeeded {
                200
            } else {
                503
            }),
            error: None,
            duration_ms: 3,
        });
        d
    };
    let ok = tried("e1", 1, DeliveryStatus::Succeeded, None);
    let failed = tried("e2", 2, DeliveryStatus::Failed, None);
    let retry = tried("e3", 3, DeliveryStatus::Pending, Some(60));
    let all = [ok.clone(), failed.clone(), retry.clone()];
    assert_eq!(s.enqueue_deliveries(&all).await.unwrap(), [true; 3]);
    assert_eq!(s.enqueue_deliveries(&all).await.unwrap(), [false; 3]);
    // A delivery given twice in one call is stored once, as its first.
    let twice = tried("e4", 4, DeliveryStatus::Succeeded, None);
    let mut again = twice.clone();
    again.status = DeliveryStatus::Failed;
    assert_eq!(
        s.enqueue_deliveries(&[twice.clone(), again]).await.unwrap(),
        [true, false]
    );
    assert_eq!(
        s.get_delivery(&twice.id).await.unwrap().unwrap().status,
        DeliveryStatus::Succeeded
    );
    let stored = s.get_delivery(&ok.id).await.unwrap().unwrap();
    assert_eq!(stored.status, DeliveryStatus::Succeeded);
    assert_eq!(stored.attempts.len(), 1);
    assert_eq!(stored.attempts[0].status_code, Some(200));
    assert_eq!(
        s.get_delivery(&failed.id).await.unwrap().unwrap().status,
        DeliveryStatus::Failed
    );
    let lease = |at: chrono::DateTime<Utc>| at + Duration::seconds(30);
    assert!(s
        .claim_deliveries("p", t, lease(t), 10)
        .await
        .unwrap()
        .is_empty());
    let later = t + Duration::seconds(61);
    let due = s
        .claim_deliveries("p", later, lease(later), 10)
        .await
        .unwrap();
    let ids: Vec<&str> = due.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, [retry.id.as_str()]);
    assert_eq!(due[0].attempts.len(), 1);
    assert!(s.redeliver(&ok.id, later).await.unwrap());
    let again = s
        .claim_deliveries("p", later, lease(later), 10)
        .await
        .unwrap();
    let ids: Vec<&str> = again.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, [ok.id.as_str()]);
}
