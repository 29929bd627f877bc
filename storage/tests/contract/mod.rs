//! The storage contract: every backend runs these same cases (DESIGN §3). Each case takes a
//! fresh, empty store. Races use real concurrency: N tasks at once, exactly one may win.
#![allow(dead_code)]

use chrono::{Duration, Utc};
use futures::future::join_all;
use std::sync::Arc;
use storage::*;

mod accounts;
mod api_keys;
mod events;
mod passkeys;
mod two_factor;
mod webhooks;
#[allow(unused_imports)]
pub use accounts::*;
#[allow(unused_imports)]
pub use api_keys::*;
#[allow(unused_imports)]
pub use events::*;
#[allow(unused_imports)]
pub use passkeys::*;
#[allow(unused_imports)]
pub use two_factor::*;
#[allow(unused_imports)]
pub use webhooks::*;

pub type S = Arc<dyn Store>;

fn now() -> chrono::DateTime<Utc> {
    SystemClock.now()
}

pub fn user(email: &str) -> User {
    let t = now();
    User::new(email, "Test".into(), None, t)
}

pub fn credential(u: &User) -> Account {
    Account::credential(&u.id, "$argon2id$fake".into(), now())
}

pub fn session(u: &User) -> Session {
    let t = now();
    Session {
        id: SessionId::generate(),
        token: random_string(32),
        user_id: u.id.clone(),
        expires_at: t + Duration::days(7),
        ip_address: Some("127.0.0.1".into()),
        user_agent: Some("test".into()),
        created_at: t,
        updated_at: t,
        active_organization_id: None,
        active_team_id: None,
        impersonated_by: None,
    }
}

fn org(slug: &str) -> Organization {
    Organization::new(
        format!("Org {slug}"),
        slug.into(),
        None,
        Some("{\"plan\":\"pro\"}".into()),
        true,
        now(),
    )
}

/// The organization as stored now.
async fn stored(s: &S, o: &OrgId) -> Organization {
    s.get_organization(o).await.unwrap().unwrap()
}

/// Applies `changes` on top of the stored row (counters adjusted by the caller's `edit`).
async fn change(
    s: &S,
    o: &OrgId,
    edit: impl FnOnce(&mut Organization),
    changes: Vec<OrgChange>,
) -> StoreResult<()> {
    let mut next = stored(s, o).await;
    next.version += 1;
    edit(&mut next);
    s.change_organization(&next, &changes, &[]).await
}

fn member(o: &Organization, u: &User, role: &str) -> Member {
    Member {
        id: MemberId::generate(),
        organization_id: o.id.clone(),
        user_id: u.id.clone(),
        role: role.into(),
        team_id: None,
        created_at: now(),
    }
}

pub async fn users_roundtrip_and_unique_email(s: S) {
    let u = user("Ann@Example.com");
    s.create_user(&u, Some(&credential(&u)), &[]).await.unwrap();
    assert_eq!(s.get_user(&u.id).await.unwrap().as_ref(), Some(&u));
    assert_eq!(
        s.get_user_by_email("ANN@example.COM")
            .await
            .unwrap()
            .as_ref(),
        Some(&u)
    );
    assert!(s.get_user(&UserId::generate()).await.unwrap().is_none());

    let dup = user("ann@example.com");
    assert!(matches!(
        s.create_user(&dup, None, &[]).await,
        Err(StoreError::Conflict(_))
    ));

    let mut changed = u.clone();
    changed.name = "Annie".into();
    changed.image = Some("https://img.example/a.png".into());
    changed.email_verified = true;
    changed.updated_at = now() + Duration::seconds(1);
    changed.version = 1;
    s.update_user(&changed, &[]).await.unwrap();
    assert_eq!(s.get_user(&u.id).await.unwrap().as_ref(), Some(&changed));
    // A change decided on the old version is refused, not written over the new one.
    let mut stale = u.clone();
    stale.name = "Stale".into();
    stale.version = 1;
    assert!(matches!(
        s.update_user(&stale, &[]).await,
        Err(StoreError::ConcurrentModification)
    ));
    assert_eq!(s.get_user(&u.id).await.unwrap().unwrap().name, "Annie");

    let other = user("bob@example.com");
    s.create_user(&other, None, &[]).await.unwrap();
    let mut steal = other.clone();
    steal.email = "ann@example.com".into();
    steal.version = 1;
    assert!(matches!(
        s.update_user(&steal, &[]).await,
        Err(StoreError::Conflict(_))
    ));
    let mut ghost = user("ghost@example.com");
    ghost.version = 1;
    assert!(matches!(
        s.update_user(&ghost, &[]).await,
        Err(StoreError::NotFound)
    ));
    // Several at once: those that exist, unknown ids skipped; more than one statement's worth.
    let unknown = UserId::generate();
    let mut many = vec![u.id.clone(), unknown.clone(), other.id.clone()];
    for i in 0..150 {
        let x = user(&format!("many{i}@example.com"));
        s.create_user(&x, None, &[]).await.unwrap();
        many.push(x.id);
    }
    let mut got: Vec<UserId> = s
        .get_users(&many)
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.id)
        .collect();
    got.sort();
    let mut want: Vec<UserId> = many.into_iter().filter(|i| *i != unknown).collect();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(s.get_users(&[]).await.unwrap(), Vec::<User>::new());
    assert_eq!(
        s.get_users(std::slice::from_ref(&other.id)).await.unwrap(),
        vec![s.get_user(&other.id).await.unwrap().unwrap()]
    );
}

pub async fn create_user_is_atomic_with_its_account(s: S) {
    let a = user("a@example.com");
    let acc = credential(&a);
    s.create_user(&a, Some(&acc), &[]).await.unwrap();
    // A second user whose account collides with an existing one must not be created at all.
    let b = user("b@example.com");
    let mut clash = credential(&b);
    clash.account_id = acc.account_id.clone();
    assert!(matches!(
        s.create_user(&b, Some(&clash), &[]).await,
        Err(StoreError::Conflict(_))
    ));
    assert!(s.get_user(&b.id).await.unwrap().is_none());
    assert!(s
        .get_user_by_email("b@example.com")
        .await
        .unwrap()
        .is_none());
}

pub async fn concurrent_sign_ups_of_one_email_one_wins(s: S) {
    let tasks = (0..20).map(|_| {
        let s = s.clone();
        tokio::spawn(async move {
            let u = user("race@example.com");
            s.create_user(&u, Some(&credential(&u)), &[]).await
        })
    });
    let results: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let wins = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(wins, 1, "{results:?}");
    assert!(results
        .iter()
        .filter(|r| r.is_err())
        .all(|r| matches!(r, Err(StoreError::Conflict(_)))));
    let winner = s
        .get_user_by_email("race@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s.list_accounts(&winner.id).await.unwrap().len(), 1);
}

pub async fn accounts(s: S) {
    let u = user("acc@example.com");
    let cred = credential(&u);
    s.create_user(&u, Some(&cred), &[]).await.unwrap();
    let mut gh = credential(&u);
    gh.provider_id = "github".into();
    gh.account_id = "12345".into();
    gh.access_token = Some("gho_x".into());
    gh.scope = Some("read:user,user:email".into());
    s.create_account(&gh, &[]).await.unwrap();
    assert!(matches!(
        s.create_account(&gh, &[]).await,
        Err(StoreError::Conflict(_))
    ));
    let list = s.list_accounts(&u.id).await.unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(
        s.get_account_by_provider("github", "12345")
            .await
            .unwrap()
            .as_ref(),
        Some(&gh)
    );
    let mut changed = gh.clone();
    changed.access_token = Some("gho_y".into());
    changed.access_token_expires_at = Some(now() + Duration::hours(8));
    s.update_account(&changed, &[]).await.unwrap();
    assert_eq!(
        s.get_account_by_provider("github", "12345").await.unwrap(),
        Some(changed)
    );
    // Unlinking is decided on the user's version (linking moved it: 0 → 1).
    let v = s.get_user(&u.id).await.unwrap().unwrap().version;
    assert_eq!(v, 1);
    assert!(matches!(
        s.delete_account(&u.id, &gh.id, v - 1, &[]).await,
        Err(StoreError::ConcurrentModification)
    ));
    s.delete_account(&u.id, &gh.id, v, &[]).await.unwrap();
    assert!(s
        .get_account_by_provider("github", "12345")
        .await
        .unwrap()
        .is_none());
    assert!(matches!(
        s.delete_account(&u.id, &gh.id, v + 1, &[]).await,
        Err(StoreError::NotFound)
    ));
    // Another user's account is not found through this one.
    let other = user("other-acc@example.com");
    s.create_user(&other, Some(&credential(&other)), &[])
        .await
        .unwrap();
    let theirs = s.list_accounts(&other.id).await.unwrap()[0].id.clone();
    let v = s.get_user(&u.id).await.unwrap().unwrap().version;
    assert!(matches!(
        s.delete_account(&u.id, &theirs, v, &[]).await,
        Err(StoreError::NotFound)
    ));
    // Debug output never shows secrets.
    assert!(!format!("{cred:?}").contains("argon2"));
}

pub async fn sessions_lifecycle(s: S) {
    let u = user("sess@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    let a = session(&u);
    let b = session(&u);
    let c = session(&u);
    for x in [&a, &b, &c] {
        s.create_session(x, &[]).await.unwrap();
    }
    assert_eq!(s.get_session(&a.token).await.unwrap().as_ref(), Some(&a));
    // With its user, in one read.
    let stored_user = s.get_user(&u.id).await.unwrap();
    assert_eq!(
        s.get_session_with_user(&a.token).await.unwrap(),
        Some((a.clone(), stored_user))
    );
    assert_eq!(
        s.get_session_with_user("no-such-token").await.unwrap(),
        None
    );
    assert_eq!(s.list_sessions(&u.id).await.unwrap().len(), 3);

    let mut moved = a.clone();
    moved.expires_at = a.expires_at + Duration::days(1);
    moved.updated_at = a.updated_at + Duration::days(1);
    moved.active_organization_id = Some(OrgId::generate());
    s.update_session(&moved).await.unwrap();
    assert_eq!(s.get_session(&a.token).await.unwrap(), Some(moved));

    assert_eq!(
        s.delete_user_sessions(&u.id, Some(&a.token), &[])
            .await
            .unwrap(),
        2
    );
    let left = s.list_sessions(&u.id).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].token, a.token);
    assert!(s.delete_session(&a.token, &[]).await.unwrap());
    assert!(!s.delete_session(&a.token, &[]).await.unwrap());
    assert!(s.get_session(&a.token).await.unwrap().is_none());

    // A session of a user that no longer exists cannot be created.
    let ghost = user("ghost2@example.com");
    assert!(s.create_session(&session(&ghost), &[]).await.is_err());
}

pub async fn deleted_session_is_never_written_back(s: S) {
    let u = user("revoke@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    for _ in 0..20 {
        let x = session(&u);
        s.create_session(&x, &[]).await.unwrap();
        let mut refreshed = x.clone();
        refreshed.expires_at = x.expires_at + Duration::days(1);
        let (s1, s2) = (s.clone(), s.clone());
        let (t, r) = (x.token.clone(), refreshed.clone());
        let del = tokio::spawn(async move { s1.delete_session(&t, &[]).await });
        let upd = tokio::spawn(async move { s2.update_session(&r).await });
        assert!(del.await.unwrap().unwrap());
        match upd.await.unwrap() {
            Ok(()) | Err(StoreError::NotFound) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
        assert!(
            s.get_session(&x.token).await.unwrap().is_none(),
            "revoked session came back"
        );
    }
    assert!(matches!(
        s.update_session(&session(&u)).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn purge_expired_sessions(s: S) {
    let u = user("old@example.com");
    s.create_user(&u, None, &[]).await.unwrap();
    let mut old = session(&u);
    old.expires_at = now() - Duration::seconds(1);
    let fresh = session(&u);
    s.create_session(&old, &[]).await.unwrap();
    s.create_session(&fresh, &[]).await.unwrap();
    // Purging may be a no-op where the backend expires rows itself (a TTL); either way an
    // expired session is never taken for a live one, and live ones stay.
    s.purge_expired_sessions(now()).await.unwrap();
    if let Some(left) = s.get_session(&old.token).await.unwrap() {
        assert!(left.expires_at <= now());
    }
    assert!(s.get_session(&fresh.token).await.unwrap().is_some());
}

pub async fn verifications_are_single_use(s: S) {
    let t = now();
    let v = Verification {
        id: VerificationId::generate(),
        identifier: format!("reset-password:{}", random_string(24)),
        value: "user-id".into(),
        expires_at: t + Duration::hours(1),
        created_at: t,
        updated_at: t,
    };
    s.create_verification(&v, &[]).await.unwrap();
    assert!(matches!(
        s.create_verification(&v, &[]).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        s.get_verification(&v.identifier).await.unwrap().as_ref(),
        Some(&v)
    );
    let tasks = (0..20).map(|_| {
        let s = s.clone();
        let id = v.identifier.clone();
        tokio::spawn(async move { s.consume_verification(&id).await.unwrap() })
    });
    let got: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(got.iter().filter(|g| g.is_some()).count(), 1);
    assert_eq!(got.into_iter().flatten().next(), Some(v.clone()));
    assert!(s.get_verification(&v.identifier).await.unwrap().is_none());

    let mut expired = v.clone();
    expired.identifier = "delete-account-x".into();
    expired.expires_at = t - Duration::seconds(1);
    s.create_verification(&expired, &[]).await.unwrap();
    s.purge_expired_verifications(t).await.unwrap();
    if let Some(left) = s.get_verification("delete-account-x").await.unwrap() {
        assert!(left.expires_at <= t);
    }
    assert!(!s.delete_verification("never-issued").await.unwrap());

    // A value without an owner (an empty one) is kept, read and taken like any other.
    let ownerless = Verification {
        id: VerificationId::generate(),
        identifier: format!("marker:{}", random_string(12)),
        value: String::new(),
        ..v.clone()
    };
    s.create_verification(&ownerless, &[]).await.unwrap();
    assert_eq!(
        s.get_verification(&ownerless.identifier).await.unwrap(),
        Some(ownerless.clone())
    );
    assert_eq!(
        s.consume_verification(&ownerless.identifier).await.unwrap(),
        Some(ownerless.clone())
    );
    s.create_verification(&ownerless, &[]).await.unwrap();
    assert!(s.delete_verification(&ownerless.identifier).await.unwrap());
}

pub async fn verifications_of_one_owner_are_deleted_by_prefix(s: S) {
    let t = now();
    let v = |identifier: &str, value: &str| Verification {
        id: VerificationId::generate(),
        identifier: identifier.into(),
        value: value.into(),
        expires_at: t + Duration::hours(1),
        created_at: t,
        updated_at: t,
    };
    for x in [
        v("reset-password:a", "u1"),
        v("reset-password:b", "u1"),
        v("reset-password:c", "u2"),
        v("delete-account-d", "u1"),
        v("reset_password:e", "u1"),
    ] {
        s.create_verification(&x, &[]).await.unwrap();
    }
    assert_eq!(
        s.delete_verifications_of("u1", "reset-password:")
            .await
            .unwrap(),
        2
    );
    for (id, there) in [
        ("reset-password:a", false),
        ("reset-password:b", false),
        ("reset-password:c", true),
        ("delete-account-d", true),
        ("reset_password:e", true),
    ] {
        assert_eq!(
            s.get_verification(id).await.unwrap().is_some(),
            there,
            "{id}"
        );
    }
    assert_eq!(
        s.delete_verifications_of("u1", "reset-password:")
            .await
            .unwrap(),
        0
    );
}

pub async fn deleting_a_user_removes_what_belongs_to_it(s: S) {
    let u = user("gone@example.com");
    s.create_user(&u, Some(&credential(&u)), &[]).await.unwrap();
    let x = session(&u);
    s.create_session(&x, &[]).await.unwrap();
    let o = org("gone-org");
    let owner = user("owner@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    s.create_organization(&o, &member(&o, &owner, "owner"), None, &[])
        .await
        .unwrap();
    let m = member(&o, &u, "member");
    change(
        &s,
        &o.id,
        |n| n.member_count += 1,
        vec![OrgChange::AddMember(m.clone())],
    )
    .await
    .unwrap();
    let o = stored(&s, &o.id).await;
    let t = now();
    let pending = Verification {
        id: VerificationId::generate(),
        identifier: format!("reset-password:{}", random_string(24)),
        value: u.id.0.clone(),
        expires_at: t + Duration::hours(1),
        created_at: t,
        updated_at: t,
    };
    s.create_verification(&pending, &[]).await.unwrap();
    s.delete_user(&u.id, &[]).await.unwrap();
    assert!(s.get_user(&u.id).await.unwrap().is_none());
    assert!(s
        .get_verification(&pending.identifier)
        .await
        .unwrap()
        .is_none());
    assert!(s.get_session(&x.token).await.unwrap().is_none());
    assert!(s.list_accounts(&u.id).await.unwrap().is_empty());
    assert!(s.get_member_by_id(&o.id, &m.id).await.unwrap().is_none());
    assert_eq!(s.count_members(&o.id).await.unwrap(), 1);
    let after = s.get_organization(&o.id).await.unwrap().unwrap();
    assert_eq!(after.member_count, 1, "the organization's count follows");
    assert!(after.version > o.version, "and its version moves");
    // The email is free again.
    s.create_user(&user("gone@example.com"), None, &[])
        .await
        .unwrap();
    assert!(matches!(
        s.delete_user(&u.id, &[]).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn organizations_and_members(s: S) {
    let owner = user("o@example.com");
    let bob = user("bob@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    s.create_user(&bob, None, &[]).await.unwrap();
    let o = org("acme");
    let om = member(&o, &owner, "owner");
    s.create_organization(&o, &om, None, &[]).await.unwrap();
    assert_eq!(s.get_organization(&o.id).await.unwrap().as_ref(), Some(&o));
    assert_eq!((o.version, o.member_count, o.owner_count), (0, 1, 1));
    assert_eq!(
        s.get_organization_by_slug("acme").await.unwrap().as_ref(),
        Some(&o)
    );
    assert!(matches!(
        s.create_organization(&org("acme"), &member(&o, &owner, "owner"), None, &[])
            .await,
        Err(StoreError::Conflict(_))
    ));
    // Joined after the owner (in the same millisecond, the random ids would decide the order).
    let bm = Member {
        created_at: om.created_at + Duration::milliseconds(1),
        ..member(&o, &bob, "member")
    };
    let add = |m: &Member| vec![OrgChange::AddMember(m.clone())];
    change(&s, &o.id, |n| n.member_count += 1, add(&bm))
        .await
        .unwrap();
    assert!(matches!(
        change(&s, &o.id, |_| {}, add(&member(&o, &bob, "admin"))).await,
        Err(StoreError::Conflict(_))
    ));
    let now_o = stored(&s, &o.id).await;
    assert_eq!(
        (now_o.version, now_o.member_count),
        (1, 2),
        "a refused change writes nothing"
    );
    assert_eq!(s.count_members(&o.id).await.unwrap(), 2);
    assert_eq!(s.count_user_organizations(&bob.id).await.unwrap(), 1);
    assert_eq!(
        s.list_members_window(&o.id, 1, 1).await.unwrap(),
        vec![bm.clone()]
    );
    assert_eq!(
        s.get_member(&o.id, &bob.id).await.unwrap().as_ref(),
        Some(&bm)
    );
    let set_role = OrgChange::SetMemberRole {
        member: bm.id.clone(),
        role: "admin,member".into(),
    };
    change(&s, &o.id, |_| {}, vec![set_role]).await.unwrap();
    assert_eq!(
        s.get_member_by_id(&o.id, &bm.id)
            .await
            .unwrap()
            .unwrap()
            .role,
        "admin,member"
    );
    assert_eq!(
        s.list_user_organizations(&bob.id).await.unwrap(),
        vec![stored(&s, &o.id).await]
    );

    change(
        &s,
        &o.id,
        |n| {
            n.name = "Acme Inc".into();
            n.slug = "acme-inc".into();
        },
        vec![],
    )
    .await
    .unwrap();
    assert!(s.get_organization_by_slug("acme").await.unwrap().is_none());
    let other = org("taken");
    s.create_organization(&other, &member(&other, &owner, "owner"), None, &[])
        .await
        .unwrap();
    assert!(matches!(
        change(&s, &o.id, |n| n.slug = "taken".into(), vec![]).await,
        Err(StoreError::Conflict(_))
    ));
    // A member of another organization is not found through this one.
    let other_owner = s.list_all_members(&other.id).await.unwrap()[0].id.clone();
    assert!(matches!(
        change(
            &s,
            &o.id,
            |_| {},
            vec![OrgChange::RemoveMember(other_owner)]
        )
        .await,
        Err(StoreError::NotFound)
    ));

    // Sessions that had the organization active lose it when their user leaves it…
    let mut bob_sess = session(&bob);
    bob_sess.active_organization_id = Some(o.id.clone());
    s.create_session(&bob_sess, &[]).await.unwrap();
    let mut sess = session(&owner);
    sess.active_organization_id = Some(o.id.clone());
    s.create_session(&sess, &[]).await.unwrap();
    let remove = vec![OrgChange::RemoveMember(bm.id.clone())];
    change(&s, &o.id, |n| n.member_count -= 1, remove.clone())
        .await
        .unwrap();
    let active = |t: String| {
        let s = s.clone();
        async move {
            s.get_session(&t)
                .await
                .unwrap()
                .unwrap()
                .active_organization_id
        }
    };
    assert_eq!(active(bob_sess.token.clone()).await, None);
    assert_eq!(s.count_user_organizations(&bob.id).await.unwrap(), 0);
    assert_eq!(s.list_user_organizations(&bob.id).await.unwrap(), vec![]);
    assert_eq!(active(sess.token.clone()).await, Some(o.id.clone()));
    assert!(matches!(
        change(&s, &o.id, |_| {}, remove).await,
        Err(StoreError::NotFound)
    ));
    let at = stored(&s, &o.id).await.version;
    assert!(matches!(
        s.delete_organization(&o.id, at - 1, &[]).await,
        Err(StoreError::ConcurrentModification)
    ));
    s.delete_organization(&o.id, at, &[]).await.unwrap();
    assert!(s.get_organization(&o.id).await.unwrap().is_none());
    assert!(s.get_member_by_id(&o.id, &om.id).await.unwrap().is_none());
    assert!(matches!(
        s.delete_organization(&o.id, at, &[]).await,
        Err(StoreError::NotFound)
    ));
    // …and when it is deleted.
    assert_eq!(active(sess.token.clone()).await, None);
}

/// Members page by cursor, oldest first (creation time, then id), and a member added while
/// paging neither repeats nor hides one that was there; limit/offset windows come from pages.
pub async fn members_page_by_cursor(s: S) {
    let owner = user("pages@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    let o = org("pages");
    let first = member(&o, &owner, "owner");
    s.create_organization(&o, &first, None, &[]).await.unwrap();
    let t0 = first.created_at;
    let mut expected = vec![first];
    for i in 0..11 {
        let u = user(&format!("p{i}@example.com"));
        s.create_user(&u, None, &[]).await.unwrap();
        let mut m = member(&o, &u, "member");
        // Two pairs share a creation time: the id orders them.
        m.created_at = t0 + Duration::milliseconds(1 + i / 2 * 2);
        change(
            &s,
            &o.id,
            |n| n.member_count += 1,
            vec![OrgChange::AddMember(m.clone())],
        )
        .await
        .unwrap();
        expected.push(m);
    }
    expected.sort_by(|a, b| {
        (a.created_at.timestamp_millis(), &a.id.0).cmp(&(b.created_at.timestamp_millis(), &b.id.0))
    });
    assert_eq!(s.list_all_members(&o.id).await.unwrap(), expected);
    assert_eq!(s.count_members(&o.id).await.unwrap(), 12);

    let p1 = s.list_members(&o.id, None, 5).await.unwrap();
    assert_eq!(p1.items, expected[..5]);
    let c1 = p1.next.expect("more pages");
    // Someone joins while the pages are read: they come last, nothing repeats or goes missing.
    let late = user("late@example.com");
    s.create_user(&late, None, &[]).await.unwrap();
    let mut lm = member(&o, &late, "member");
    lm.created_at = t0 + Duration::seconds(1);
    change(
        &s,
        &o.id,
        |n| n.member_count += 1,
        vec![OrgChange::AddMember(lm.clone())],
    )
    .await
    .unwrap();
    let p2 = s.list_members(&o.id, Some(&c1), 5).await.unwrap();
    assert_eq!(p2.items, expected[5..10]);
    let p3 = s.list_members(&o.id, p2.next.as_deref(), 5).await.unwrap();
    assert_eq!(p3.items[..2], expected[10..]);
    assert_eq!(p3.items[2], lm);
    assert_eq!(p3.next, None, "the last page says so");
    // Exactly one page's worth: no next page announced.
    assert_eq!(s.list_members(&o.id, None, 13).await.unwrap().next, None);
    assert_eq!(
        s.list_members_window(&o.id, 3, 4).await.unwrap(),
        expected[3..7]
    );
    assert_eq!(s.list_members_window(&o.id, 20, 4).await.unwrap(), vec![]);
    assert_eq!(s.list_members_window(&o.id, 12, 4).await.unwrap(), vec![lm]);
}

/// The changes of one unit apply in order: later ones see what earlier ones made.
pub async fn changes_of_one_unit_see_each_other(s: S) {
    let owner = user("unit@example.com");
    let joiner = user("joiner@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    s.create_user(&joiner, None, &[]).await.unwrap();
    let o = org("unit");
    s.create_organization(&o, &member(&o, &owner, "owner"), None, &[])
        .await
        .unwrap();
    let team = Team {
        id: TeamId::generate(),
        name: "Core".into(),
        organization_id: o.id.clone(),
        created_at: now(),
        updated_at: None,
    };
    let jm = member(&o, &joiner, "member");
    let inv = Invitation {
        id: InvitationId::generate(),
        organization_id: o.id.clone(),
        email: joiner.email.clone(),
        role: "member".into(),
        status: InvitationStatus::Pending,
        team_id: Some(team.id.clone()),
        inviter_id: owner.id.clone(),
        expires_at: now() + Duration::days(1),
        created_at: now(),
    };
    let tm = TeamMember {
        id: TeamMemberId::generate(),
        team_id: team.id.clone(),
        user_id: joiner.id.clone(),
        created_at: now(),
    };
    change(
        &s,
        &o.id,
        |n| n.member_count += 1,
        vec![
            OrgChange::CreateTeam(team.clone()),
            OrgChange::Invite(inv.clone()),
            OrgChange::TransitionInvitation {
                id: inv.id.clone(),
                from: InvitationStatus::Pending,
                to: InvitationStatus::Accepted,
            },
            OrgChange::AddMember(jm.clone()),
            OrgChange::AddTeamMember(tm.clone()),
            OrgChange::SetMemberRole {
                member: jm.id.clone(),
                role: "admin".into(),
            },
        ],
    )
    .await
    .unwrap();
    assert_eq!(s.list_team_members(&team).await.unwrap(), vec![tm]);
    assert_eq!(
        s.get_invitation(&inv.id).await.unwrap().unwrap().status,
        InvitationStatus::Accepted
    );
    assert_eq!(
        s.get_member(&o.id, &joiner.id).await.unwrap().unwrap().role,
        "admin"
    );
    // A later change that cannot apply undoes the whole unit.
    let other = Team {
        id: TeamId::generate(),
        name: "Other".into(),
        ..team.clone()
    };
    assert!(matches!(
        change(
            &s,
            &o.id,
            |_| {},
            vec![
                OrgChange::CreateTeam(other.clone()),
                OrgChange::AddMember(member(&o, &joiner, "member")),
            ],
        )
        .await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(s.get_team(&other.id).await.unwrap(), None);
}

/// Scans page through every user and organization exactly once; a deleted organization is not
/// among them.
pub async fn scans_visit_everything_once(s: S) {
    let mut users = Vec::new();
    for i in 0..7 {
        let u = user(&format!("scan{i}@example.com"));
        s.create_user(&u, None, &[]).await.unwrap();
        users.push(u.id.0.clone());
    }
    let mut orgs = Vec::new();
    for (i, owner) in users.iter().take(5).enumerate() {
        let o = org(&format!("scan-{i}"));
        s.create_organization(
            &o,
            &member(&o, &user_of(&s, owner).await, "owner"),
            None,
            &[],
        )
        .await
        .unwrap();
        orgs.push(o);
    }
    s.delete_organization(&orgs[4].id, 0, &[]).await.unwrap();
    let (mut seen, mut after) = (Vec::new(), None::<String>);
    loop {
        let page = s.scan_users(after.as_deref(), 3).await.unwrap();
        assert!(page.items.len() <= 3);
        seen.extend(page.items.into_iter().map(|u| u.id.0));
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    seen.sort();
    users.sort();
    assert_eq!(seen, users);
    let (mut seen, mut after) = (Vec::new(), None::<String>);
    loop {
        let page = s.scan_organizations(after.as_deref(), 2).await.unwrap();
        seen.extend(page.items.into_iter().map(|o| o.id.0));
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    seen.sort();
    let mut live: Vec<String> = orgs[..4].iter().map(|o| o.id.0.clone()).collect();
    live.sort();
    assert_eq!(seen, live);
    // The single-use values, page by page (export carries the pending ones).
    let mut made = Vec::new();
    for i in 0..7 {
        let t = now();
        let v = Verification {
            id: VerificationId::generate(),
            identifier: format!("scan-{i}:{}", random_string(8)),
            value: users[i % users.len()].clone(),
            expires_at: t + Duration::minutes(10),
            created_at: t,
            updated_at: t,
        };
        s.create_verification(&v, &[]).await.unwrap();
        made.push(v.identifier);
    }
    let (mut seen, mut after) = (Vec::new(), None::<String>);
    loop {
        let page = s.scan_verifications(after.as_deref(), 3).await.unwrap();
        assert!(page.items.len() <= 3);
        seen.extend(page.items.into_iter().map(|v| v.identifier));
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    seen.sort();
    made.sort();
    assert_eq!(seen, made);
}

async fn user_of(s: &S, id: &str) -> User {
    s.get_user(&UserId(id.into())).await.unwrap().unwrap()
}

/// A change decided on an older version is refused, whoever made the newer one: of N
/// concurrent changes decided on one version exactly one is written.
pub async fn organization_changes_compare_and_set_their_version(s: S) {
    let owner = user("cas@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    let o = org("cas-org");
    s.create_organization(&o, &member(&o, &owner, "owner"), None, &[])
        .await
        .unwrap();
    let mut users = Vec::new();
    for i in 0..20 {
        let u = user(&format!("cas{i}@example.com"));
        s.create_user(&u, None, &[]).await.unwrap();
        users.push(u);
    }
    // All decide on version 0 ("one seat left", say): one wins, the rest must reload.
    let tasks = users.iter().map(|u| {
        let s = s.clone();
        let mut next = o.clone();
        next.version = 1;
        next.member_count = 2;
        let m = member(&o, u, "member");
        tokio::spawn(async move {
            s.change_organization(&next, &[OrgChange::AddMember(m)], &[])
                .await
        })
    });
    let results: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
    assert!(results
        .iter()
        .filter(|r| r.is_err())
        .all(|r| matches!(r, Err(StoreError::ConcurrentModification))));
    assert_eq!(s.count_members(&o.id).await.unwrap(), 2);
    let now_o = stored(&s, &o.id).await;
    assert_eq!((now_o.version, now_o.member_count), (1, 2));
    // Unknown organization.
    let mut ghost = org("ghost");
    ghost.version = 1;
    assert!(matches!(
        s.change_organization(&ghost, &[], &[]).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn concurrent_creates_of_one_slug_one_wins(s: S) {
    let owner = user("slug@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    let tasks = (0..10).map(|_| {
        let s = s.clone();
        let owner = owner.clone();
        tokio::spawn(async move {
            let o = org("same-slug");
            s.create_organization(&o, &member(&o, &owner, "owner"), None, &[])
                .await
        })
    });
    let results: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
    assert_eq!(s.list_user_organizations(&owner.id).await.unwrap().len(), 1);
}

pub async fn invitations_transition_once(s: S) {
    let owner = user("inv@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    let o = org("inv-org");
    s.create_organization(&o, &member(&o, &owner, "owner"), None, &[])
        .await
        .unwrap();
    let inv = Invitation {
        id: InvitationId::generate(),
        organization_id: o.id.clone(),
        email: "guest@example.com".into(),
        role: "member".into(),
        status: InvitationStatus::Pending,
        team_id: None,
        inviter_id: owner.id.clone(),
        expires_at: now() + Duration::days(2),
        created_at: now(),
    };
    change(&s, &o.id, |_| {}, vec![OrgChange::Invite(inv.clone())])
        .await
        .unwrap();
    assert_eq!(
        s.get_invitation(&inv.id).await.unwrap().as_ref(),
        Some(&inv)
    );
    assert_eq!(s.list_invitations(&o.id).await.unwrap().len(), 1);
    assert_eq!(
        s.list_invitations_by_email("GUEST@example.com")
            .await
            .unwrap()
            .len(),
        1
    );
    let transition = |to| OrgChange::TransitionInvitation {
        id: inv.id.clone(),
        from: InvitationStatus::Pending,
        to,
    };
    change(
        &s,
        &o.id,
        |_| {},
        vec![transition(InvitationStatus::Accepted)],
    )
    .await
    .unwrap();
    assert!(matches!(
        change(
            &s,
            &o.id,
            |_| {},
            vec![transition(InvitationStatus::Rejected)]
        )
        .await,
        Err(StoreError::Conflict("invitation"))
    ));
    assert_eq!(
        s.get_invitation(&inv.id).await.unwrap().unwrap().status,
        InvitationStatus::Accepted
    );
    let unknown = OrgChange::TransitionInvitation {
        id: InvitationId::generate(),
        from: InvitationStatus::Pending,
        to: InvitationStatus::Canceled,
    };
    assert!(matches!(
        change(&s, &o.id, |_| {}, vec![unknown]).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn teams_and_roles(s: S) {
    let owner = user("team@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    let o = org("team-org");
    let om = member(&o, &owner, "owner");
    s.create_organization(&o, &om, None, &[]).await.unwrap();
    let t = Team {
        id: TeamId::generate(),
        name: "Core".into(),
        organization_id: o.id.clone(),
        created_at: now(),
        updated_at: None,
    };
    let ok = |changes: Vec<OrgChange>| {
        let s = s.clone();
        let o = o.id.clone();
        async move { change(&s, &o, |_| {}, changes).await }
    };
    ok(vec![OrgChange::CreateTeam(t.clone())]).await.unwrap();
    let mut dup = t.clone();
    dup.id = TeamId::generate();
    assert!(matches!(
        ok(vec![OrgChange::CreateTeam(dup)]).await,
        Err(StoreError::Conflict(_))
    ));
    let tm = TeamMember {
        id: TeamMemberId::generate(),
        team_id: t.id.clone(),
        user_id: owner.id.clone(),
        created_at: now(),
    };
    ok(vec![OrgChange::AddTeamMember(tm.clone())])
        .await
        .unwrap();
    assert_eq!(s.list_team_members(&t).await.unwrap(), vec![tm.clone()]);
    assert_eq!(s.list_user_teams(&owner.id).await.unwrap(), vec![t.clone()]);
    let mut renamed = t.clone();
    renamed.name = "Platform".into();
    renamed.updated_at = Some(now());
    ok(vec![OrgChange::UpdateTeam(renamed.clone())])
        .await
        .unwrap();
    assert_eq!(s.get_team(&t.id).await.unwrap(), Some(renamed));
    assert_eq!(s.list_teams(&o.id).await.unwrap().len(), 1);
    let leave = || OrgChange::RemoveTeamMember {
        team: t.id.clone(),
        user: owner.id.clone(),
    };
    ok(vec![leave()]).await.unwrap();
    assert!(matches!(ok(vec![leave()]).await, Err(StoreError::NotFound)));
    ok(vec![OrgChange::DeleteTeam(t.id.clone())]).await.unwrap();
    assert!(s.get_team(&t.id).await.unwrap().is_none());

    let r = OrganizationRole {
        id: RoleId::generate(),
        organization_id: o.id.clone(),
        role: "billing".into(),
        permission: "{\"member\":[\"create\"]}".into(),
        created_at: now(),
        updated_at: None,
    };
    let roles_changed = |changes: Vec<OrgChange>| {
        let s = s.clone();
        let o = o.id.clone();
        async move { change(&s, &o, |n| n.roles_version += 1, changes).await }
    };
    roles_changed(vec![OrgChange::CreateRole(r.clone())])
        .await
        .unwrap();
    let mut dup = r.clone();
    dup.id = RoleId::generate();
    assert!(matches!(
        roles_changed(vec![OrgChange::CreateRole(dup)]).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(stored(&s, &o.id).await.roles_version, 1);
    assert_eq!(
        s.get_role(&o.id, "billing").await.unwrap().as_ref(),
        Some(&r)
    );
    let mut changed = r.clone();
    changed.permission = "{}".into();
    changed.updated_at = Some(now());
    roles_changed(vec![OrgChange::UpdateRole(changed.clone())])
        .await
        .unwrap();
    assert_eq!(s.list_roles(&o.id).await.unwrap(), vec![changed]);
    roles_changed(vec![OrgChange::DeleteRole(r.id.clone())])
        .await
        .unwrap();
    assert!(s.get_role(&o.id, "billing").await.unwrap().is_none());
}

pub async fn key_pairs(s: S) {
    let k = KeyPair {
        id: KeyPairId::generate(),
        public_key: "pub".into(),
        private_key: "priv".into(),
        created_at: now(),
    };
    s.create_key_pair(&k).await.unwrap();
    assert_eq!(s.list_key_pairs().await.unwrap(), vec![k.clone()]);
    assert!(!format!("{k:?}").contains("priv"));
}

/// Rate-limit counters of one key: counted per window, reset after it, exact up to the cap,
/// and never more callers within a limit than it allows, however many hit at once. Run on
/// each backend's tables and on the in-memory counters (`RateLimitStore` directly, since
/// the memory counters are no `Store`).
pub async fn rate_limit_counters(s: S) {
    rate_limits_of(s).await
}

pub async fn rate_limits_of(s: Arc<dyn RateLimitStore>) {
    // A fixed time at the start of a minute, so that windows aligned to the clock and
    // windows opened by the first hit end at the same instant.
    let t0 = chrono::DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z")
        .unwrap()
        .with_timezone(&Utc);
    let at = |secs: i64| t0 + Duration::seconds(secs);
    let w = Duration::seconds(60);
    let key = format!("mail:{}@example.com:203.0.113.7", random_lower_alnum(8));

    for n in 0..3 {
        let c = s.hit(&key, w, 11, at(n)).await.unwrap();
        assert_eq!(c.count, n as u32 + 1);
        assert_eq!(
            c.resets_at,
            at(60),
            "the window ends a window after its start"
        );
    }
    assert_eq!(s.count(&key, w, 11, at(30)).await.unwrap().count, 3);
    let other = format!("{key}/other");
    assert_eq!(s.count(&other, w, 11, at(30)).await.unwrap().count, 0);
    assert_eq!(s.hit(&other, w, 11, at(30)).await.unwrap().count, 1);

    // The next window starts from nothing; housekeeping after it forgets the old one.
    assert_eq!(s.count(&key, w, 11, at(60)).await.unwrap().count, 0);
    assert_eq!(s.hit(&key, w, 11, at(61)).await.unwrap().count, 1);
    s.purge_rate_limits(at(200)).await.unwrap();
    assert_eq!(s.count(&key, w, 11, at(200)).await.unwrap().count, 0);
    assert_eq!(s.hit(&key, w, 11, at(200)).await.unwrap().count, 1);

    // Exact up to the cap; past it, some number above it.
    let capped = format!("{key}/capped");
    let mut counts = Vec::new();
    for _ in 0..6 {
        counts.push(s.hit(&capped, w, 2, at(1)).await.unwrap().count);
    }
    assert_eq!(counts[..2], [1, 2]);
    assert!(counts[2..].iter().all(|c| *c > 2), "{counts:?}");
    assert!(s.count(&capped, w, 2, at(2)).await.unwrap().count > 2);

    // 40 at once against a limit of 10: at most 10 see a count within it, and any hit
    // after them sees the window full.
    let raced = format!("{key}/raced");
    let t5 = at(5);
    let hits = join_all((0..40).map(|_| {
        let (s, raced) = (s.clone(), raced.clone());
        tokio::spawn(async move { s.hit(&raced, w, 11, t5).await.unwrap().count })
    }))
    .await;
    let within = hits
        .into_iter()
        .filter(|c| *c.as_ref().unwrap() <= 10)
        .count();
    assert!(within <= 10, "{within} of 40 passed a limit of 10");
    assert!(s.hit(&raced, w, 11, at(6)).await.unwrap().count > 10);
    assert!(s.count(&raced, w, 11, at(6)).await.unwrap().count > 10);
}

/// A store just opened (and migrated) is healthy, and stays so after writes.
pub async fn a_fresh_store_is_healthy(s: S) {
    s.check_health().await.unwrap();
    let u = User::new("healthy@example.com", "H".into(), None, Utc::now());
    s.create_user(&u, None, &[]).await.unwrap();
    s.check_health().await.unwrap();
    assert!(s.get_user(&u.id).await.unwrap().is_some());
}

/// The admin's listing: search, filter, sort and window answer what a plain filter and sort
/// of every user (done here, independently) answers.
pub async fn list_users_search_filter_sort_page(s: S) {
    let names = [
        "Ann",
        "bob",
        "Carl",
        "dora",
        "Éva",
        "ann-marie",
        "Bo_b",
        "zed",
    ];
    let base = now() - Duration::hours(1);
    let mut users = Vec::new();
    for i in 0..48usize {
        let mut u = User::new(
            &format!(
                "u{i:02}{}@{}.io",
                if i % 5 == 0 { "_x" } else { "" },
                ["a", "b", "c"][i % 3]
            ),
            format!("{} {}", names[i % names.len()], 47 - i),
            None,
            base + Duration::seconds(i as i64),
        );
        u.role = match i % 4 {
            0 => Some("admin".into()),
            1 => Some("user".into()),
            2 => None,
            _ => Some("support,user".into()),
        };
        u.banned = i % 7 == 0;
        u.email_verified = i % 2 == 0;
        s.create_user(&u, None, &[]).await.unwrap();
        users.push(u);
    }
    let role = |u: &User| u.role.clone().unwrap_or_else(|| "user".into());
    let check = |q: UserQuery, want: Vec<&User>| {
        let s = s.clone();
        let want: Vec<String> = want.iter().map(|u| u.id.0.clone()).collect();
        async move {
            let got = s.list_users(&q).await.unwrap();
            let total = want.len() as u64;
            let window: Vec<String> = want
                .into_iter()
                .skip(q.offset as usize)
                .take(q.limit.map_or(usize::MAX, |l| l as usize))
                .collect();
            let ids: Vec<String> = got.users.iter().map(|u| u.id.0.clone()).collect();
            assert_eq!((ids, got.total), (window, total), "{q:?}");
        }
    };
    // No query: oldest first.
    check(UserQuery::default(), users.iter().collect()).await;
    // Search, each operator, ASCII case folded; `_` is a literal, not a wildcard.
    let q = |f, op, t: &str| UserQuery {
        search: Some((f, op, t.into())),
        ..Default::default()
    };
    let by = |p: &dyn Fn(&User) -> bool| users.iter().filter(|u| p(u)).collect::<Vec<_>>();
    check(
        q(UserField::Name, SearchOp::Contains, "ANN"),
        by(&|u| u.name.to_lowercase().contains("ann")),
    )
    .await;
    check(
        q(UserField::Name, SearchOp::StartsWith, "b"),
        by(&|u| u.name.to_lowercase().starts_with('b')),
    )
    .await;
    check(
        q(UserField::Email, SearchOp::EndsWith, "@b.io"),
        by(&|u| u.email.ends_with("@b.io")),
    )
    .await;
    check(
        q(UserField::Email, SearchOp::Contains, "_x"),
        by(&|u| u.email.contains("_x")),
    )
    .await;
    check(
        q(UserField::Name, SearchOp::Contains, "o_b"),
        by(&|u| u.name.contains("o_b")),
    )
    .await;
    check(q(UserField::Name, SearchOp::Contains, "%"), vec![]).await;
    // Filters.
    let f = |field, op, v: FieldValue| UserQuery {
        filter: Some((field, op, v)),
        ..Default::default()
    };
    check(
        f(
            UserField::Role,
            FilterOp::Eq,
            FieldValue::Text("user".into()),
        ),
        by(&|u| role(u) == "user"),
    )
    .await;
    check(
        f(
            UserField::Role,
            FilterOp::Ne,
            FieldValue::Text("admin".into()),
        ),
        by(&|u| role(u) != "admin"),
    )
    .await;
    check(
        f(
            UserField::Role,
            FilterOp::Contains,
            FieldValue::Text("support".into()),
        ),
        by(&|u| role(u).contains("support")),
    )
    .await;
    check(
        f(UserField::Banned, FilterOp::Eq, FieldValue::Flag(true)),
        by(&|u| u.banned),
    )
    .await;
    check(
        f(
            UserField::EmailVerified,
            FilterOp::Ne,
            FieldValue::Flag(true),
        ),
        by(&|u| !u.email_verified),
    )
    .await;
    let cut = users[20].created_at;
    check(
        f(
            UserField::CreatedAt,
            FilterOp::Gte,
            FieldValue::Millis(cut.timestamp_millis()),
        ),
        by(&|u| u.created_at >= cut),
    )
    .await;
    check(
        f(
            UserField::Email,
            FilterOp::Lt,
            FieldValue::Text("u10".into()),
        ),
        by(&|u| u.email.as_str() < "u10"),
    )
    .await;
    check(
        f(
            UserField::Banned,
            FilterOp::Eq,
            FieldValue::Text("yes".into()),
        ),
        vec![],
    )
    .await;
    // Sorts (byte order for text, ties by creation), with windows.
    let mut by_name: Vec<&User> = users.iter().collect();
    by_name.sort_by(|a, b| {
        a.name
            .as_bytes()
            .cmp(b.name.as_bytes())
            .then(a.created_at.cmp(&b.created_at))
    });
    for (limit, offset) in [
        (None, 0),
        (Some(10), 0),
        (Some(10), 15),
        (Some(7), 45),
        (Some(5), 60),
    ] {
        let q = UserQuery {
            sort: Some((UserField::Name, false)),
            limit,
            offset,
            ..Default::default()
        };
        check(q, by_name.clone()).await;
    }
    let mut by_email_desc: Vec<&User> = users.iter().collect();
    by_email_desc.sort_by(|a, b| b.email.cmp(&a.email));
    let q = UserQuery {
        sort: Some((UserField::Email, true)),
        limit: Some(9),
        offset: 3,
        ..Default::default()
    };
    check(q, by_email_desc).await;
    // All together.
    let mut want: Vec<&User> = users
        .iter()
        .filter(|u| u.email.ends_with("@a.io") && !u.banned)
        .collect();
    want.sort_by_key(|u| std::cmp::Reverse(u.created_at));
    let q = UserQuery {
        search: Some((UserField::Email, SearchOp::EndsWith, "@A.IO".into())),
        filter: Some((UserField::Banned, FilterOp::Eq, FieldValue::Flag(false))),
        sort: Some((UserField::CreatedAt, true)),
        limit: Some(4),
        offset: 2,
    };
    check(q, want).await;
}

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

/// A range longer than one read walks (a partitioned backend reads it in pieces, some pages
/// empty but with a cursor): every event comes once, in order, whichever the direction.
/// An organization's view in one read: the same as its single reads, whichever the backend.
pub async fn organization_view_is_its_single_reads(s: S) {
    let owner = user("view-owner@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    let o = org("view");
    let om = member(&o, &owner, "owner");
    s.create_organization(&o, &om, None, &[]).await.unwrap();
    let (mut users, mut members) = (Vec::new(), Vec::new());
    for i in 0..5 {
        let u = user(&format!("view-{i}@example.com"));
        s.create_user(&u, None, &[]).await.unwrap();
        members.push(Member {
            created_at: om.created_at + Duration::milliseconds(i + 1),
            ..member(&o, &u, "member")
        });
        users.push(u);
    }
    let teams: Vec<Team> = (0..2)
        .map(|i| Team {
            id: TeamId::generate(),
            name: format!("T{i}"),
            organization_id: o.id.clone(),
            created_at: now() + Duration::milliseconds(i),
            updated_at: None,
        })
        .collect();
    let inv = Invitation {
        id: InvitationId::generate(),
        organization_id: o.id.clone(),
        email: "invited@example.com".into(),
        role: "member".into(),
        status: InvitationStatus::Pending,
        team_id: None,
        inviter_id: owner.id.clone(),
        expires_at: now() + Duration::days(1),
        created_at: now(),
    };
    let mut changes: Vec<OrgChange> = members.iter().cloned().map(OrgChange::AddMember).collect();
    changes.extend(teams.iter().cloned().map(OrgChange::CreateTeam));
    changes.push(OrgChange::Invite(inv.clone()));
    for u in &users[..3] {
        changes.push(OrgChange::AddTeamMember(TeamMember {
            id: TeamMemberId::generate(),
            team_id: teams[0].id.clone(),
            user_id: u.id.clone(),
            created_at: now(),
        }));
    }
    change(&s, &o.id, |n| n.member_count += 5, changes)
        .await
        .unwrap();
    let q = ViewQuery {
        viewer: users[1].id.clone(),
        offset: 1,
        limit: 3,
        details: true,
    };
    let view = s
        .organization_view(&o.id, &q)
        .await
        .unwrap()
        .expect("the organization");
    assert_eq!(
        view,
        compose_organization_view(&*s, &o.id, &q)
            .await
            .unwrap()
            .unwrap()
    );
    assert_eq!(view.organization, stored(&s, &o.id).await);
    assert_eq!(view.viewer.as_ref().map(|m| &m.id), Some(&members[1].id));
    let window: Vec<(&MemberId, Option<&UserId>)> = view
        .members
        .iter()
        .map(|(m, u)| (&m.id, u.as_ref().map(|u| &u.id)))
        .collect();
    assert_eq!(
        window,
        [
            (&members[0].id, Some(&users[0].id)),
            (&members[1].id, Some(&users[1].id)),
            (&members[2].id, Some(&users[2].id)),
        ]
    );
    assert_eq!(view.total_members, 6);
    assert_eq!(view.invitations, vec![inv]);
    let counts: Vec<(&str, u32)> = view
        .teams
        .iter()
        .map(|(t, n)| (t.name.as_str(), *n))
        .collect();
    assert_eq!(counts, [("T0", 3), ("T1", 0)]);
    // The end of the window, a viewer who is not a member, no details.
    let q = ViewQuery {
        viewer: UserId::generate(),
        offset: 4,
        limit: 10,
        details: false,
    };
    let view = s.organization_view(&o.id, &q).await.unwrap().unwrap();
    assert_eq!(
        view,
        compose_organization_view(&*s, &o.id, &q)
            .await
            .unwrap()
            .unwrap()
    );
    assert!(view.viewer.is_none());
    assert_eq!(view.members.len(), 2);
    assert_eq!(view.members[1].0.id, members[4].id);
    assert_eq!(
        view.members[1].1.as_ref().map(|u| &u.id),
        Some(&users[4].id)
    );
    assert!(view.invitations.is_empty() && view.teams.is_empty());
    // No such organization.
    assert!(s
        .organization_view(&OrgId::generate(), &q)
        .await
        .unwrap()
        .is_none());
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

/// Every case, for a backend's test file to call with a factory of fresh stores.
#[macro_export]
macro_rules! contract_tests {
    ($factory:path) => {
        contract_tests!(@cases $factory;
            users_roundtrip_and_unique_email,
            create_user_is_atomic_with_its_account,
            concurrent_sign_ups_of_one_email_one_wins,
            accounts,
            a_password_is_replaced_only_over_the_one_checked,
            sessions_lifecycle,
            deleted_session_is_never_written_back,
            purge_expired_sessions,
            verifications_are_single_use,
            verifications_of_one_owner_are_deleted_by_prefix,
            deleting_a_user_removes_what_belongs_to_it,
            organizations_and_members,
            members_page_by_cursor,
            scans_visit_everything_once,
            changes_of_one_unit_see_each_other,
            organization_changes_compare_and_set_their_version,
            concurrent_creates_of_one_slug_one_wins,
            invitations_transition_once,
            teams_and_roles,
            key_pairs,
            list_users_search_filter_sort_page,
            a_fresh_store_is_healthy,
            audit_log,
            audit_log_over_a_long_range,
            organization_view_is_its_single_reads,
            rate_limit_counters,
            events_are_stored_with_their_change_and_only_with_it,
            organization_decisions_carry_their_events,
            events_alone_and_mail,
            consumers_hold_leases_and_keep_their_progress,
            reading_in_pages_sees_each_event_once_in_order,
            two_factors_compare_and_set_and_go_with_their_user,
            concurrent_uses_of_one_two_factor_one_wins,
            two_factor_writes_carry_their_events,
            a_second_step_uses_the_code_takes_the_challenge_and_starts_the_session,
            concurrent_second_steps_of_one_challenge_one_wins,
            passkeys_register_once_change_and_go,
            concurrent_writes_of_one_passkey_one_wins,
            passkey_writes_carry_their_events,
            api_keys_are_found_by_hash_listed_by_owner_and_go,
            concurrent_uses_of_one_api_key_one_wins,
            api_key_writes_carry_their_events,
            webhooks_are_listed_by_scope_changed_by_version_and_go,
            deliveries_are_stored_once_leased_settled_and_listed,
            concurrent_claims_lease_each_delivery_once,
            deliveries_made_leased_are_their_makers,
        );
    };
    (@cases $factory:path; $($case:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $case() {
            // A factory answers None when its backend is not configured here (it says so).
            let Some((store, _guard)) = $factory().await else {
                return;
            };
            contract::$case(store).await;
        }
    )*};
}
