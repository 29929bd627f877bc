//! The audit log: appends, pages, filters, long ranges.
use super::*;

fn audit_event(action: &str, at: chrono::DateTime<Utc>) -> AuditEvent {
    let mut e = AuditEvent::new(action, at);
    e.ip_address = Some("192.0.2.7".into());
    e.user_agent = Some("contract".into());
    e.request_id = Some(random_string(8));
    e.details = [("role".to_owned(), "admin".to_owned())].into();
    e
}

/// Every page of `q`, in order.
async fn audit_pages(s: &S, mut q: AuditQuery) -> Vec<AuditEvent> {
    let mut all = Vec::new();
    loop {
        let page = s.list_audit(&q).await.unwrap();
        assert!(page.items.len() <= q.limit as usize);
        all.extend(page.items);
        match page.next {
            Some(n) => q.after = Some(n),
            None => return all,
        }
    }
}

pub async fn audit_log(s: S) {
    let t = now();
    let keep = std::time::Duration::from_secs(30 * 86_400);
    let (alice, bob) = (UserId::generate(), UserId::generate());
    let (acme, other) = (OrgId::generate(), OrgId::generate());
    let mut events = Vec::new();
    // Spread over several days (and hours), two users, two organizations.
    for (i, (action, actor, subject, org)) in [
        ("user.sign-in", Some(&alice), Some(&alice), None),
        ("organization.created", Some(&alice), None, Some(&acme)),
        ("member.added", Some(&alice), Some(&bob), Some(&acme)),
        ("user.sign-in", Some(&bob), Some(&bob), None),
        ("member.role-changed", Some(&bob), Some(&alice), Some(&acme)),
        ("members.odd", Some(&bob), None, Some(&other)),
        ("member.removed", None, Some(&bob), Some(&other)),
        ("user.sign-up", None, None, None),
    ]
    .into_iter()
    .enumerate()
    {
        let mut e = audit_event(
            action,
            t - Duration::hours(70) + Duration::minutes(557 * i as i64),
        );
        e.actor_id = actor.cloned();
        e.user_id = subject.cloned();
        e.organization_id = org.cloned();
        if i == 3 {
            e.outcome = AuditOutcome::Failure;
            e.reason = Some("INVALID_EMAIL_OR_PASSWORD".into());
        }
        s.append_audit(&e, keep).await.unwrap();
        events.push(e);
    }
    // Two in one millisecond: ordered by id.
    let same = t - Duration::hours(1);
    for _ in 0..2 {
        let e = audit_event("session.revoked", same);
        s.append_audit(&e, keep).await.unwrap();
        events.push(e);
    }
    let sorted = |mut v: Vec<AuditEvent>, newest: bool| {
        v.sort_by(|a, b| (a.at, &a.id).cmp(&(b.at, &b.id)));
        if newest {
            v.reverse();
        }
        v
    };
    let range = AuditQuery::range(t - Duration::days(5), t + Duration::minutes(1), 3);
    // Everything, newest first, three a page; and oldest first.
    assert_eq!(
        audit_pages(&s, range.clone()).await,
        sorted(events.clone(), true)
    );
    let asc = AuditQuery {
        oldest_first: true,
        ..range.clone()
    };
    assert_eq!(audit_pages(&s, asc).await, sorted(events.clone(), false));
    // Filters: a user as actor or subject; an organization; both; an action and its parts.
    let pick = |f: &dyn Fn(&AuditEvent) -> bool| {
        sorted(events.iter().filter(|e| f(e)).cloned().collect(), true)
    };
    let q = AuditQuery {
        user: Some(alice.clone()),
        ..range.clone()
    };
    let of_alice =
        pick(&|e| e.actor_id.as_ref() == Some(&alice) || e.user_id.as_ref() == Some(&alice));
    assert_eq!(of_alice.len(), 4);
    assert_eq!(audit_pages(&s, q).await, of_alice);
    let q = AuditQuery {
        organization: Some(acme.clone()),
        ..range.clone()
    };
    assert_eq!(
        audit_pages(&s, q).await,
        pick(&|e| e.organization_id.as_ref() == Some(&acme))
    );
    let q = AuditQuery {
        organization: Some(acme.clone()),
        user: Some(bob.clone()),
        ..range.clone()
    };
    let bob_in_acme = audit_pages(&s, q).await;
    assert_eq!(
        bob_in_acme
            .iter()
            .map(|e| e.action.as_str())
            .collect::<Vec<_>>(),
        ["member.role-changed", "member.added"]
    );
    let q = AuditQuery {
        action: Some("member".into()),
        ..range.clone()
    };
    assert_eq!(
        audit_pages(&s, q).await,
        pick(&|e| e.action.starts_with("member."))
    );
    let q = AuditQuery {
        action: Some("user.sign-in".into()),
        user: Some(bob.clone()),
        ..range.clone()
    };
    let failed = audit_pages(&s, q).await;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].outcome, AuditOutcome::Failure);
    // By outcome: every page full, however few the failures among the events.
    let q = AuditQuery {
        outcome: Some(AuditOutcome::Failure),
        limit: 1,
        ..range.clone()
    };
    let failures = pick(&|e| e.outcome == AuditOutcome::Failure);
    assert!(!failures.is_empty());
    let first = s.list_audit(&q).await.unwrap();
    assert_eq!(first.items.len(), 1, "a page of failures, not of events");
    assert_eq!(audit_pages(&s, q).await, failures);
    let q = AuditQuery {
        outcome: Some(AuditOutcome::Success),
        ..range.clone()
    };
    assert_eq!(
        audit_pages(&s, q).await,
        pick(&|e| e.outcome == AuditOutcome::Success)
    );
    assert_eq!(
        failed[0].reason.as_deref(),
        Some("INVALID_EMAIL_OR_PASSWORD")
    );
    // The range bounds: `since` included, `until` excluded.
    let mid = &sorted(events.clone(), false)[4];
    let q = AuditQuery::range(mid.at, same, 100);
    assert_eq!(
        s.list_audit(&q).await.unwrap().items,
        pick(&|e| e.at >= mid.at && e.at < same)
    );
    // Events appended while paging do not repeat or shift the pages already read.
    let first = s.list_audit(&range).await.unwrap();
    s.append_audit(&audit_event("user.sign-out", t), keep)
        .await
        .unwrap();
    let mut q = range.clone();
    q.after = first.next.clone();
    let second = s.list_audit(&q).await.unwrap();
    assert_eq!(second.items, sorted(events.clone(), true)[3..6].to_vec());
    // Retention: a purge deletes what is older (or the backend expires it by itself), never
    // what is newer.
    let cut = t - Duration::hours(24);
    let purged = s.purge_audit(cut).await.unwrap();
    let left = audit_pages(
        &s,
        AuditQuery::range(t - Duration::days(5), t + Duration::minutes(1), 50),
    )
    .await;
    assert_eq!(left.len() as u64, events.len() as u64 + 1 - purged);
    assert!(
        left.iter().filter(|e| e.at >= cut).count()
            == events.iter().filter(|e| e.at >= cut).count() + 1
    );
}

pub async fn audit_log_over_a_long_range(s: S) {
    let t = now();
    let keep = std::time::Duration::from_secs(90 * 86_400);
    let mut events = Vec::new();
    for back in [
        Duration::days(44),
        Duration::days(40),
        Duration::days(10),
        Duration::hours(1),
    ] {
        let e = audit_event("user.sign-in", t - back);
        s.append_audit(&e, keep).await.unwrap();
        events.push(e);
    }
    let range = AuditQuery::range(t - Duration::days(50), t + Duration::minutes(1), 10);
    let mut newest = events.clone();
    newest.reverse();
    assert_eq!(audit_pages(&s, range.clone()).await, newest);
    let asc = AuditQuery {
        oldest_first: true,
        ..range
    };
    assert_eq!(audit_pages(&s, asc).await, events);
}
