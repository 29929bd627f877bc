//! The event stream's contract: a decision's events are stored with its change and only with
//! it; consumers read them in order with leases and their own progress.
use super::*;

/// A read "now" late enough for a backend that waits before it serves recent events.
fn later() -> chrono::DateTime<Utc> {
    now() + Duration::seconds(60)
}

pub fn domain(aggregate: &str, name: &str, n: u32) -> Event {
    Event::new(
        aggregate,
        now(),
        Payload::Domain {
            name: name.into(),
            data: serde_json::json!({ "n": n }).into(),
        },
    )
}

fn audited(aggregate: &str, action: &str, user: &User) -> Event {
    let mut record = AuditEvent::new(action, now());
    record.user_id = Some(user.id.clone());
    Event::audit(aggregate, record, 3600)
}

/// Every event of `topic` from the start, over every shard.
pub async fn all_of(s: &S, topic: Topic) -> Vec<Event> {
    let mut out = Vec::new();
    for shard in 0..s.event_shards() {
        let mut after: Option<String> = None;
        loop {
            let read = s
                .read_events(topic, shard, after.as_deref(), 100, later())
                .await
                .unwrap();
            out.extend(read.events.into_iter().map(|d| d.event));
            match read.upto {
                Some(p) if Some(&p) != after.as_ref() => after = Some(p),
                _ => break,
            }
        }
    }
    out
}

async fn audit_of(s: &S, user: &User) -> Vec<String> {
    let mut q = AuditQuery::range(now() - Duration::hours(1), later(), 100);
    q.user = Some(user.id.clone());
    q.oldest_first = true;
    s.list_audit(&q)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| e.action)
        .collect()
}

pub fn names(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| match &e.payload {
            Payload::Domain { name, .. } => name.clone(),
            Payload::Mail { data } => data["kind"].as_str().unwrap_or_default().to_owned(),
            Payload::Audit { record, .. } => record.action.clone(),
        })
        .collect()
}

pub async fn events_are_stored_with_their_change_and_only_with_it(s: S) {
    let u = user("events@example.com");
    let agg = format!("user:{}", u.id);
    s.create_user(
        &u,
        None,
        &[
            domain(&agg, "user.created", 1),
            audited(&agg, "user.sign-up", &u),
        ],
    )
    .await
    .unwrap();
    let x = session(&u);
    s.create_session(&x, &[domain(&agg, "session.created", 2)])
        .await
        .unwrap();
    // A write that does not apply keeps none of its events.
    let mut stale = u.clone();
    stale.name = "Stale".into();
    let refused = s
        .update_user(
            &stale,
            &[
                domain(&agg, "user.updated", 3),
                audited(&agg, "user.updated", &u),
            ],
        )
        .await;
    assert!(refused.is_err(), "version 0 is not a change: {refused:?}");
    let dup = user("events@example.com");
    assert!(s
        .create_user(&dup, None, &[audited("user:dup", "user.sign-up", &dup)])
        .await
        .is_err());
    // Deleting a session that is not there changes nothing: no event.
    assert!(!s
        .delete_session("no-such-token", &[domain(&agg, "session.revoked", 4)])
        .await
        .unwrap());
    assert!(s
        .delete_session(&x.token, &[domain(&agg, "session.revoked", 5)])
        .await
        .unwrap());
    let mut next = u.clone();
    next.version += 1;
    next.name = "Next".into();
    s.update_user(&next, &[audited(&agg, "user.updated", &u)])
        .await
        .unwrap();
    assert_eq!(
        names(&all_of(&s, Topic::Domain).await),
        ["user.created", "session.created", "session.revoked"]
    );
    // Both records (made within one millisecond they may list in either order).
    let mut kept = audit_of(&s, &u).await;
    kept.sort();
    assert_eq!(kept, ["user.sign-up", "user.updated"]);
    assert!(audit_of(&s, &dup).await.is_empty());
    // Audit records are not in the stream, domain events not in the audit log.
    assert!(all_of(&s, Topic::Mail).await.is_empty());
}

pub async fn organization_decisions_carry_their_events(s: S) {
    let u = user("org-events@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    let o = org("evented");
    let agg = format!("org:{}", o.id);
    s.create_organization(
        &o,
        &member(&o, &u, "owner"),
        None,
        &[domain(&agg, "organization.created", 1)],
    )
    .await
    .unwrap();
    let v = user("joiner@example.com");
    s.create_user(&v, None, &[]).await.unwrap();
    let mut next = stored(&s, &o.id).await;
    next.version += 1;
    next.member_count += 1;
    let joined = member(&next, &v, "member");
    s.change_organization(
        &next,
        &[OrgChange::AddMember(joined.clone())],
        &[
            domain(&agg, "member.added", 2),
            audited(&agg, "member.added", &v),
        ],
    )
    .await
    .unwrap();
    // The same version again: refused, and its events with it.
    let again = s
        .change_organization(
            &next,
            &[OrgChange::SetMemberRole {
                member: joined.id.clone(),
                role: "admin".into(),
            }],
            &[domain(&agg, "member.role_changed", 3)],
        )
        .await;
    assert!(
        matches!(again, Err(StoreError::ConcurrentModification)),
        "{again:?}"
    );
    // A change that cannot apply (a member twice) keeps none.
    let mut twice = stored(&s, &o.id).await;
    twice.version += 1;
    assert!(s
        .change_organization(
            &twice,
            &[OrgChange::AddMember(member(&twice, &v, "member"))],
            &[domain(&agg, "member.added", 4)],
        )
        .await
        .is_err());
    let current = stored(&s, &o.id).await;
    s.delete_organization(
        &o.id,
        current.version,
        &[domain(&agg, "organization.deleted", 5)],
    )
    .await
    .unwrap();
    let got = all_of(&s, Topic::Domain).await;
    assert_eq!(
        names(&got),
        [
            "organization.created",
            "member.added",
            "organization.deleted"
        ]
    );
    assert_eq!(got[1].payload, domain(&agg, "member.added", 2).payload);
    assert_eq!(audit_of(&s, &v).await, ["member.added"]);
}

pub async fn events_alone_and_mail(s: S) {
    let u = user("mail-events@example.com");
    let mail = Event::new(
        "server",
        now(),
        Payload::Mail {
            data: serde_json::json!({"kind": "verify-email", "to": "a@example.com"}),
        },
    );
    s.append_events(&[mail.clone(), audited("server", "rate-limit.hit", &u)])
        .await
        .unwrap();
    let v = Verification {
        id: VerificationId::generate(),
        identifier: format!("reset-password:{}", random_string(24)),
        value: u.id.0.clone(),
        expires_at: now() + Duration::hours(1),
        created_at: now(),
        updated_at: now(),
    };
    let reset = Event::new(
        format!("user:{}", u.id),
        now(),
        Payload::Mail {
            data: serde_json::json!({"kind": "reset-password", "to": u.email}),
        },
    );
    s.create_verification(&v, std::slice::from_ref(&reset))
        .await
        .unwrap();
    // The same identifier again: refused, no second mail.
    assert!(s
        .create_verification(&v, std::slice::from_ref(&reset))
        .await
        .is_err());
    // Two aggregates, so possibly two shards: in order per aggregate only.
    let mut got = all_of(&s, Topic::Mail).await;
    got.sort_by(|a, b| a.id.cmp(&b.id));
    let mut want = vec![mail, reset];
    want.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(got, want);
    assert_eq!(audit_of(&s, &u).await, ["rate-limit.hit"]);
    assert!(all_of(&s, Topic::Domain).await.is_empty());
}

pub async fn consumers_hold_leases_and_keep_their_progress(s: S) {
    let t = now();
    let lease = |holder: &str, at: chrono::DateTime<Utc>| Lease {
        consumer: "test".into(),
        shard: 0,
        holder: holder.into(),
        now: at,
        until: at + Duration::seconds(10),
    };
    assert_eq!(s.claim_events(&lease("a", t)).await.unwrap(), Some(None));
    // Held by a: b waits; a renews.
    assert_eq!(s.claim_events(&lease("b", t)).await.unwrap(), None);
    assert_eq!(s.claim_events(&lease("a", t)).await.unwrap(), Some(None));
    assert!(s.advance_events(&lease("a", t), "p1").await.unwrap());
    // b cannot record progress it does not hold.
    assert!(!s.advance_events(&lease("b", t), "p2").await.unwrap());
    // Once a's lease expired, b takes over where a was.
    let expired = t + Duration::seconds(11);
    assert_eq!(
        s.claim_events(&lease("b", expired)).await.unwrap(),
        Some(Some("p1".into()))
    );
    assert!(!s.advance_events(&lease("a", expired), "p3").await.unwrap());
    assert_eq!(s.claim_events(&lease("a", expired)).await.unwrap(), None);
    // Another consumer of the same shard has its own progress.
    let other = Lease {
        consumer: "other".into(),
        ..lease("a", expired)
    };
    assert_eq!(s.claim_events(&other).await.unwrap(), Some(None));
}

/// Events read in pages, each page after the last one's position, come once each in order;
/// two consumers each see all of them.
pub async fn reading_in_pages_sees_each_event_once_in_order(s: S) {
    let agg = "org:paged";
    for n in 0..25 {
        s.append_events(&[domain(agg, "team.created", n)])
            .await
            .unwrap();
    }
    let shard = storage::events::shard_of(agg, s.event_shards());
    for _consumer in 0..2 {
        let mut after: Option<String> = None;
        let mut seen = Vec::new();
        loop {
            let read = s
                .read_events(Topic::Domain, shard, after.as_deref(), 7, later())
                .await
                .unwrap();
            // The same page for a consumer of names: the same events and positions, their
            // objects left out or whole.
            let named = s
                .read_event_names(Topic::Domain, shard, after.as_deref(), 7, later())
                .await
                .unwrap();
            assert_eq!(named.upto, read.upto);
            assert_eq!(named.events.len(), read.events.len());
            for (n, d) in named.events.iter().zip(&read.events) {
                assert_eq!(n.position, d.position);
                assert_eq!((&n.event.id, n.event.at), (&d.event.id, d.event.at));
                assert_eq!(n.event.aggregate, d.event.aggregate);
                match (&n.event.payload, &d.event.payload) {
                    (
                        Payload::Domain { name, data },
                        Payload::Domain {
                            name: whole,
                            data: object,
                        },
                    ) => assert!(name == whole && (data.value().is_null() || data == object)),
                    other => panic!("domain events: {other:?}"),
                }
            }
            seen.extend(read.events.iter().map(|d| match &d.event.payload {
                Payload::Domain { data, .. } => data.value()["n"].as_u64().unwrap(),
                _ => panic!("a domain event"),
            }));
            match read.upto {
                Some(p) if Some(&p) != after.as_ref() => after = Some(p),
                _ => break,
            }
        }
        assert_eq!(seen, (0..25).collect::<Vec<u64>>());
    }
}
